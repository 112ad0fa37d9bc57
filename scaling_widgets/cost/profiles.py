"""Default efficiency profiles, one per chip preset (SPEC C.3).

Each was fitted by ``benchmarks/fit_profiles.py`` on the development set of measured runs
(``benchmarks/data/dev_runs.json``): the stack those runs used on that chip. Rerun the script to
refit; it prints the numbers to paste here and the error on every run. A preset without runs of
its own borrows its nearest kin's (``KIN``); a chip of your own gets ``GENERIC``: plausible
values, not a fit.
"""

from __future__ import annotations

import dataclasses

from .inputs import Chip
from .steptime import Profile

GENERIC = Profile("generic")

# chip name -> profile, as ``benchmarks/fit_profiles.py`` printed them (2026-11-30). The runs
# behind each: A100, Megatron-LM 2021-22 (Narayanan et al. Table 1, Korthikanti et al. Table 5;
# attention not fused); H100, torchtitan 2025 (LLaMA-3 8B and 405B); TPU v5p and v5e, MaxText 2023.
PROFILES: dict[str, Profile] = {
    "A100": Profile("A100", e_max=0.8977, g_half=5.398e08, kappa=5.296, link_nvlink=0.5685, link_nic=0.4202,
                    o_tp=0.0, o_dp=0.6906, flash_attention=False, kappa_scores=17.2, jitter=0.05),
    "H100": Profile("H100", e_max=0.5003, g_half=1e12, kappa=40, o_tp=0.5395, o_dp=0.3836),
    "TPU v5p": Profile("TPU v5p", e_max=0.8788, g_half=4.156e11, kappa=2, link_ici=1, link_dcn=0.7895, jitter=0.00098),
    "TPU v5e": Profile("TPU v5e", e_max=0.9187, g_half=1e06, kappa=2, link_ici=0.5642, link_dcn=0.4729, jitter=0.05),
}  # fmt: skip


# Chips with no runs of their own borrow the profile of their nearest fitted kin: the same
# software stacks on the next generation (a calibrated profile of your own is better).
KIN = {"H200": "H100", "B200": "H100", "GB200 NVL72": "H100", "TPU v4p": "TPU v5p", "TPU v6e": "TPU v5e"}
PROFILES.update({chip: dataclasses.replace(PROFILES[kin], name=f"{kin}'s, for {chip}") for chip, kin in KIN.items()})


def profile_for(chip: Chip) -> Profile:
    """The default profile of a chip: its fitted one, else ``GENERIC``."""
    return PROFILES.get(chip.name, GENERIC)
