"""Megatron-LM as it ran in 2021-22 (Narayanan et al. 2021; Korthikanti et al. 2022): attention
not fused, so the s x s scores go through HBM (softmax, mask and dropout), and no distributed
optimizer.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.2 (stacks: the A100's default profile)
   and §F.2 (stack behaviour).
.. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
   Megatron-LM", SC 2021, sec. 2.2 (the 1F1B and interleaved schedules).
.. [3] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
   MLSys 2023.
"""

from . import megatron_lm

NAME, ORDER = "megatron-lm-2021", 4
FLASH_ATTENTION = False
PIPELINE_SCHEDULES = megatron_lm.PIPELINE_SCHEDULES  # PTD-P's: 1F1B and interleaved
MEMORY = megatron_lm.MEMORY  # what it keeps in memory is today's Megatron-LM's
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-07) on 18 runs on A100 (Narayanan et al. 2021
# Table 1, Korthikanti et al. 2022 Table 5), drawn towards the typical stack. On a bound: o_tp = 0
# (lower): this Megatron ran its TP all-reduces on the critical path (no TP overlap before 2023).
BEHAVIOUR = dict(
    kernel_share=0.8763,
    kappa=11.14,
    kappa_scores=15.64,
    o_tp=2.085e-17,
    o_dp=0.6727,
    o_dcn=0.4777,
    layer_overhead=3.861e-07,
    step_overhead=0.03354,
)
