"""Default profiles, one per chip preset (MODEL.md §C.3), and the software stacks (MODEL.md §E.2).

Each was fitted by ``benchmarks/fit_profiles.py`` on the development set of measured runs
(``scaling_widgets/data/dev_runs.json``): the stack those runs used on that chip. Rerun the
script to refit; it prints the numbers to paste here and the error on every run. A preset
without runs of its own borrows its nearest kin's (``KIN``); a chip of your own gets
``GENERIC``: plausible values, not a fit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..checks import Choice
from ..cluster.chip import Chip
from ..refusals import refuse
from ..stacks import STACKS

if TYPE_CHECKING:  # ``values`` imports this module
    from ..values import Options

# what a stack's "selective" recompute recomputes (MODEL.md §E.2)
SELECTIVE = ("attention", "alternate-matmuls")
MEASURES = ("allocated", "reserved")  # what a stack's own peak counts


@dataclass(frozen=True)
class Profile:
    """How well a software stack uses a chip (MODEL.md §C.3): the numbers C.1 and C.2 need, and what
    it keeps in memory (MODEL.md §E.2)."""

    name: str
    e_max: float = 0.8  # matmul efficiency of large GEMMs
    g_half: float = 1e9  # per-chip FLOPs of a GEMM that reaches half of e_max
    kappa: float = 40.0  # memory-bound bytes per token, per unit of d_model, per layer and pass
    link_ici: float = 0.8  # share of a link's bandwidth a collective achieves, per tier
    link_nvlink: float = 0.8
    link_nic: float = 0.8
    link_dcn: float = 0.8
    latency: float = 2e-5  # seconds per collective, however small
    o_tp: float = 0.0  # share of a layer's matmuls the TP collectives can hide under
    o_dp: float = 0.9  # share of the compute data-parallel traffic hides under (the last backward
    # pass for a gradient reduction, each layer's own compute for ZeRO-3's gathers and scatters)
    o_dcn: float = 0.0  # the same for the reduction across pods
    flash_attention: bool = True  # no s x s scores in HBM; causal masking halves the attention
    kappa_scores: float = 12.0  # without flash attention: bytes per score and pass
    jitter: float = 0.0  # σ: how much one chip's step varies, as a share of it
    # What the stack holds in memory (MODEL.md §E.2, ``peak.py``):
    weight_bytes: float = 0.0  # per parameter, as the stack keeps them; 0: the precision's
    grad_bytes: float = 0.0  # 0: the precision's, at least the weights' dtype
    optimizer_bytes: float = 0.0  # 0: the precision's
    selective: str = (
        "attention"  # "selective" recomputes the attention core, or "alternate-matmuls"
    )
    logits_bytes: float = 6.0  # per logit alive at the loss: bf16 logits and their fp32 softmax
    gathered_units: float = 2.0  # ZeRO-3: layers gathered at once (one computing, one prefetched)
    pipeline_unsharded: bool = (
        False  # ZeRO-3 under pipelining keeps a stage gathered, its gradients unsharded
    )
    bucket_bytes: float = 0.0  # DP, ZeRO-1/2: gradient buckets besides the gradients themselves
    allocator: float = (
        1.05  # reserved over allocated: the caching allocator's rounding and fragments
    )
    measures: str = "allocated"  # what the stack's own peak counts: "allocated" or "reserved"
    activation_factor: float = (
        1.0  # activations, working set and logits x this (from a measured peak)
    )

    def __post_init__(
        self,
    ) -> None:  # however it was built (JSON, a stack, calibration), its names make sense
        Choice(SELECTIVE)("profile selective", self.selective)
        Choice(MEASURES)("profile measures", self.measures)
        if not (isinstance(self.allocator, (int, float)) and 1 <= self.allocator < 1e30):
            raise refuse(
                "profile allocator",
                "a number from 1: reserved is never below allocated",
                repr(self.allocator),
            )


GENERIC = Profile("generic")
# The fields a stack sets; a calibrated activation_factor is the user's and carries over.
MEMORY_FIELDS = (
    "weight_bytes",
    "grad_bytes",
    "optimizer_bytes",
    "selective",
    "logits_bytes",
    "gathered_units",
    "pipeline_unsharded",
    "bucket_bytes",
    "allocator",
    "measures",
    "flash_attention",
)
# chip name -> profile, as ``benchmarks/fit_profiles.py`` printed them (2026-11-30). The runs
# behind each: A100, Megatron-LM 2021-22 (Narayanan et al. Table 1, Korthikanti et al. Table 5;
# attention not fused); H100, torchtitan 2025 (LLaMA-3 8B and 405B); TPU v5p and v5e, MaxText 2023.
# Each also keeps the memory of the stack behind its runs; the A100's ran before flash attention.
PROFILES: dict[str, Profile] = {
    "A100": Profile("A100", e_max=0.8977, g_half=5.398e08, kappa=5.296, link_nvlink=0.5685,
                    link_nic=0.4202, o_tp=0.0, o_dp=0.6906, kappa_scores=17.2, jitter=0.05,
                    **{**STACKS["megatron-lm"], "flash_attention": False}),
    "H100": Profile("H100", e_max=0.5003, g_half=1e12, kappa=40, o_tp=0.5395, o_dp=0.3836,
                    **STACKS["fsdp2"]),
    "TPU v5p": Profile("TPU v5p", e_max=0.8788, g_half=4.156e11, kappa=2, link_ici=1,
                       link_dcn=0.7895, jitter=0.00098, **STACKS["maxtext"]),
    "TPU v5e": Profile("TPU v5e", e_max=0.9187, g_half=1e06, kappa=2, link_ici=0.5642,
                       link_dcn=0.4729, jitter=0.05, **STACKS["maxtext"]),
}  # fmt: skip


# Chips with no runs of their own borrow the profile of their nearest fitted kin: the same
# software stacks on the next generation (a calibrated profile of your own is better).
KIN = {
    "H200": "H100",
    "B200": "H100",
    "GB200 NVL72": "H100",
    "TPU v4p": "TPU v5p",
    "TPU v6e": "TPU v5e",
}
PROFILES.update(
    {
        chip: dataclasses.replace(PROFILES[kin], name=f"{kin}'s, for {chip}")
        for chip, kin in KIN.items()
    }
)


def profile_for(chip: Chip) -> Profile:
    """The default profile of a chip: its fitted one, else ``GENERIC``.

    Returns
    -------
    profile : Profile
        ``PROFILES``' entry for the chip's name (a fitted one, or its kin's), else ``GENERIC``.
    """
    return PROFILES.get(chip.name, GENERIC)


def profile_of(chip: Chip, options: Options) -> Profile:
    """The profile an evaluation reads: ``options.profile`` or the chip's, with ``options.stack``'s
    memory and ``options.flash_attention`` where they are given (MODEL.md §C.3, §E.2).

    Returns
    -------
    profile : Profile
        The efficiencies and the memory the evaluation uses.
    """
    profile = with_stack(options.profile or profile_for(chip), options.stack)
    if options.flash_attention is None:
        return profile
    return dataclasses.replace(profile, flash_attention=bool(options.flash_attention))


def with_stack(profile: Profile, stack: str | None) -> Profile:
    """``profile`` keeping in memory what ``stack`` keeps (MODEL.md §E.2), its efficiencies its own;
    a calibrated activation factor carries over. None: the profile as it is.

    Returns
    -------
    profile : Profile
        ``profile`` with the stack's ``MEMORY_FIELDS`` (the defaults where it sets none), named
        after both.
    """
    if stack is None:
        return profile
    # what the stack does not set is the default
    unset = {name: getattr(GENERIC, name) for name in MEMORY_FIELDS}
    chosen = STACKS[stack]
    return dataclasses.replace(profile, name=f"{profile.name}, {stack}", **{**unset, **chosen})
