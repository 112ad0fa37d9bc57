"""Megatron-LM with its distributed optimizer.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/pipeline_parallel/schedules.py``
   (``forward_backward_pipelining_without_interleaving``,
   ``forward_backward_pipelining_with_interleaving``).
.. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/pipeline_parallel/combined_1f1b.py``.
.. [4] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/transformer/transformer_config.py``
   (``TransformerConfig.__post_init__``).
.. [5] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/training/theoretical_memory_usage.py``
   (``compute_weight_and_optimizer_memory``: 6 + 12/DP bytes a parameter).
.. [6] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/tensor_parallel/cross_entropy.py`` (``VocabParallelCrossEntropy``).
.. [7] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/training/utils/common_utils.py`` (``report_memory``).
"""

NAME, ORDER = "megatron-lm", 0
# Its pipeline schedules: 1F1B and interleaved 1F1B (core/pipeline_parallel/schedules.py,
# forward_backward_pipelining_without_interleaving and with_interleaving).
PIPELINE_SCHEDULES = ("1f1b", "interleaved")
# Combined 1F1B, --overlap-moe-expert-parallel-comm (Megatron Core 0.14+; core/pipeline_parallel/
# combined_1f1b.py): a forward paired with another microbatch's backward, opt-in (a layout's
# ``ep_overlap``). Its config refuses full recompute and, with PP, a schedule without virtual
# stages (transformer_config.py, __post_init__).
EP_OVERLAP = True
# bf16 weights, fp32 main gradients unsharded below ZeRO-2, fp32 master and Adam sharded (its own
# estimate: 6 + 12/DP bytes a parameter); the loss keeps the fp32 softmax beside the bf16 logits;
# gradients reduced in place; report_memory: allocated.
MEMORY = dict(
    weight_bytes=2.0,
    grad_bytes=4.0,
    optimizer_bytes=12.0,
    selective="attention",
    logits_bytes=6.0,
    bucket_bytes=0.0,
    measures="allocated",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-02) on 6 runs on B200 (SimuMax's measured
# Megatron-LM runs on one node), drawn towards the typical stack. Nothing on a bound.
BEHAVIOUR = dict(
    kernel_share=0.8559,
    kappa=185.1,
    o_tp=0.1582,
    o_dp=0.06791,
    o_dcn=0.4757,
    layer_overhead=0.0001974,
    step_overhead=0.1366,
)
