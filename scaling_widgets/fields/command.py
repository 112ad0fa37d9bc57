"""The ``scaling-widgets estimate`` command that evaluates the same values as a scenario.

``command(cluster, workload, layout, options)`` writes a flag for every field of the table
(``fields/``) whose value the flags can say and that differs from its default; the cluster,
the workload and the strategy are always written (without a layout of its own, ``estimate``
would take the plan's first row). A value no flag can say (your own model or chip, axis roles,
a calibrated profile) makes it ``None``: then ``--scenario FILE.json`` is the way.
"""

from __future__ import annotations

import shlex

from ..cost import Cluster, Layout, Options, Workload
from . import FIELDS_TABLE


def command(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> str | None:
    """The CLI flags for these values, or None when some value has no flag.

    Parameters
    ----------
    cluster : Cluster
        The chip, the slice and the pods: always written.
    workload : Workload
        The model, the batch and the precision: always written.
    layout : Layout
        The layout: each field written where it differs from its default.
    options : Options
        The options: each field written where it differs from its default.

    Returns
    -------
    command : str or None
        The ``scaling-widgets estimate …`` command, quoted for a POSIX shell; None when a value
        set has no flag (your own model or chip, axis roles, a calibrated profile).
    """
    values = (cluster, workload, layout, options)
    words = ["scaling-widgets", "estimate"]
    for field in FIELDS_TABLE:
        if field.value is None:
            continue
        value = field.get(values)
        written = field.owner in (Cluster, Workload) or field.name == "strategy"
        if value is None or (value == field.fallback() and not written):
            continue
        if field.flag is None:  # set, and no flag says it (axis roles)
            return None
        if field.switch:
            words += [field.flag] if value else []
            continue
        text = field.cli_words(value)
        if text is None:
            return None
        words += [field.flag, text]
    return shlex.join(words)
