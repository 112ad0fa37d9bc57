"""Default profiles, one per chip preset (SPEC C.3), and the software stacks (SPEC E.2).

Each was fitted by ``benchmarks/fit_profiles.py`` on the development set of measured runs
(``benchmarks/data/dev_runs.json``): the stack those runs used on that chip. Rerun the script to
refit; it prints the numbers to paste here and the error on every run. A preset without runs of
its own borrows its nearest kin's (``KIN``); a chip of your own gets ``GENERIC``: plausible
values, not a fit.
"""

from __future__ import annotations

import dataclasses

from . import _checks
from .inputs import Chip
from .steptime import Profile

GENERIC = Profile("generic")

# What each stack keeps in memory (SPEC E.2): the Profile fields ``peak.py`` reads. Read from each
# stack's source (2026); docs/MODEL.md part E cites the lines.
STACKS: dict[str, dict] = {
    # Megatron-LM, distributed optimizer: bf16 weights, fp32 main gradients unsharded below ZeRO-2,
    # fp32 master and Adam sharded (its own estimate: 6 + 12/DP bytes a parameter); the loss keeps
    # the fp32 softmax beside the bf16 logits; gradients reduced in place; report_memory: allocated.
    "megatron-lm": dict(weight_bytes=2.0, grad_bytes=4.0, optimizer_bytes=12.0, selective="attention",
                        logits_bytes=6.0, bucket_bytes=0.0, measures="allocated"),
    # PyTorch FSDP2 in torchtitan: fp32 sharded weights (the master copy), gradients and Adam; bf16
    # gathered; op-level selective recompute saves every other matmul; the loss casts the logits to
    # fp32, and its backward holds the saved log-softmax, the loss's gradient and the log-softmax's,
    # all fp32; under pipelining FSDP does not reshard after forward, and the stage syncs gradients at
    # the last microbatch only, so they accumulate unsharded (in fp32, FSDP's reduce dtype); its log
    # reports peak reserved memory.
    "fsdp2": dict(weight_bytes=4.0, grad_bytes=4.0, optimizer_bytes=8.0, selective="alternate-matmuls",
                  logits_bytes=12.0, pipeline_unsharded=True, measures="reserved"),
    # DeepSpeed ZeRO with bf16: gradients accumulate in bf16; reduce and all-gather buckets of 5e8
    # elements each (its defaults); Megatron-DeepSpeed's loss.
    "deepspeed": dict(weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0, selective="attention",
                      logits_bytes=6.0, bucket_bytes=2e9, measures="allocated"),
    # MaxText on XLA: fp32 weights, gradients and Adam (weight_dtype, grad_dtype, mu_dtype); logits
    # cast to fp32; XLA plans its buffers ahead, with no caching allocator on top.
    "maxtext": dict(weight_bytes=4.0, grad_bytes=4.0, optimizer_bytes=8.0, selective="attention",
                    logits_bytes=6.0, allocator=1.0, measures="allocated"),
}  # fmt: skip
# The fields a stack sets; a calibrated activation_factor is the user's and carries over.
MEMORY_FIELDS = ("weight_bytes", "grad_bytes", "optimizer_bytes", "selective", "logits_bytes", "gathered_units",
                 "pipeline_unsharded", "bucket_bytes", "allocator", "measures", "flash_attention")  # fmt: skip
# Every current stack runs flash attention: no s x s scores in HBM (SPEC E.1), and none in the step
# either (SPEC C.2). Each keeps mixed-precision Adam's fp32 master copy and moments, whatever the
# precision (which sets the chapter's count).
for _stack in STACKS.values():
    _stack["flash_attention"] = True

# chip name -> profile, as ``benchmarks/fit_profiles.py`` printed them (2026-11-30). The runs
# behind each: A100, Megatron-LM 2021-22 (Narayanan et al. Table 1, Korthikanti et al. Table 5;
# attention not fused); H100, torchtitan 2025 (LLaMA-3 8B and 405B); TPU v5p and v5e, MaxText 2023.
# Each also keeps the memory of the stack behind its runs; the A100's ran before flash attention.
PROFILES: dict[str, Profile] = {
    "A100": Profile("A100", e_max=0.8977, g_half=5.398e08, kappa=5.296, link_nvlink=0.5685, link_nic=0.4202,
                    o_tp=0.0, o_dp=0.6906, kappa_scores=17.2, jitter=0.05,
                    **{**STACKS["megatron-lm"], "flash_attention": False}),
    "H100": Profile("H100", e_max=0.5003, g_half=1e12, kappa=40, o_tp=0.5395, o_dp=0.3836, **STACKS["fsdp2"]),
    "TPU v5p": Profile("TPU v5p", e_max=0.8788, g_half=4.156e11, kappa=2, link_ici=1, link_dcn=0.7895, jitter=0.00098,
                       **STACKS["maxtext"]),
    "TPU v5e": Profile("TPU v5e", e_max=0.9187, g_half=1e06, kappa=2, link_ici=0.5642, link_dcn=0.4729, jitter=0.05,
                       **STACKS["maxtext"]),
}  # fmt: skip


# Chips with no runs of their own borrow the profile of their nearest fitted kin: the same
# software stacks on the next generation (a calibrated profile of your own is better).
KIN = {"H200": "H100", "B200": "H100", "GB200 NVL72": "H100", "TPU v4p": "TPU v5p", "TPU v6e": "TPU v5e"}
PROFILES.update({chip: dataclasses.replace(PROFILES[kin], name=f"{kin}'s, for {chip}") for chip, kin in KIN.items()})


def profile_for(chip: Chip) -> Profile:
    """The default profile of a chip: its fitted one, else ``GENERIC``."""
    return PROFILES.get(chip.name, GENERIC)


def profile_of(chip: Chip, options) -> Profile:
    """The profile an evaluation reads: ``options.profile`` or the chip's, with ``options.stack``'s
    memory and ``options.flash_attention`` where they are given (SPEC C.3, E.2)."""
    profile = with_stack(options.profile or profile_for(chip), options.stack)
    if options.flash_attention is None:
        return profile
    return dataclasses.replace(profile, flash_attention=bool(options.flash_attention))


def with_stack(profile: Profile, stack: str | None) -> Profile:
    """``profile`` keeping in memory what ``stack`` keeps (SPEC E.2), its efficiencies its own;
    a calibrated activation factor carries over. None: the profile as it is."""
    if stack is None:
        return profile
    unset = {name: getattr(GENERIC, name) for name in MEMORY_FIELDS}  # what the stack does not set is the default
    chosen = STACKS[_checks.one_of("stack", stack, tuple(STACKS))]
    return dataclasses.replace(profile, name=f"{profile.name}, {stack}", **{**unset, **chosen})
