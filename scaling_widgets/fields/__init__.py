"""Every field a user sets, declared once: its scenario key, its CLI flag, its panel control.

A ``Field`` (``field.py``) says where a user meets it: the value of the cost model it sets
(``"layout.z"``), the flag and help of the command line, the version of the saved scenario that
added it, and the panel's label. Its default and its check are the cost model's own, read from
that value's declaration (``cost/values.py``); a field of the scenario alone declares them here.

From the table (``table.py``; a new option is a row there) come the CLI's options
(``cli/options.py``), the ``Scenario``'s traits and JSON keys (``widgets/scenario.py``), the
equivalent command (``command.py``) and the planner's options (``cost.search.plan``). Where
a new option is new physics, it is also a field of its value and the formula that reads it.

A scenario's state (``state.py``) is a flat dict, field name -> value. ``checked`` turns what a
user gave into a checked state, and ``values`` turns a state into the four values ``evaluate``
takes: the one path from a panel, a saved file or the command line to a number.

Tier 6 of the package (``tests/test_tiers.py`` declares the order): it imports from text/ (units),
catalog.py, presets.py and cost/; launch/, widgets/ and cli/ above it read the table.
"""

from .field import Field, Flag
from .mend import mended
from .state import (
    checked,
    coerced,
    defaults,
    filled,
    from_flags,
    from_json,
    given_by_hand,
    scenario_start,
    to_json,
    values,
)
from .table import FIELDS, FIELDS_TABLE, READABLE, SCENARIO, VERSION

__all__ = [
    "FIELDS",
    "FIELDS_TABLE",
    "READABLE",
    "SCENARIO",
    "VERSION",
    "Field",
    "Flag",
    "checked",
    "coerced",
    "defaults",
    "filled",
    "from_flags",
    "from_json",
    "given_by_hand",
    "mended",
    "scenario_start",
    "to_json",
    "values",
]
