"""MaxText on XLA."""

NAME, ORDER = "maxtext", 3
# fp32 weights, gradients and Adam (weight_dtype, grad_dtype, mu_dtype); logits cast to fp32; XLA
# plans its buffers ahead, with no caching allocator on top.
MEMORY = dict(
    weight_bytes=4.0,
    grad_bytes=4.0,
    optimizer_bytes=8.0,
    selective="attention",
    logits_bytes=6.0,
    allocator=1.0,
    measures="allocated",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-02) on 29 runs on TPU v5e, v5p, v6e and H100
# (MaxText's READMEs, tpu-recipes). On a bound: layer_overhead = 0.2 ms (upper), where the fit puts
# what the TPUs' physics lacks (no attention or HBM microbenchmarks of TPUs yet): a known gap, not
# a launch cost. o_dcn hides the reduction across slices under the backward pass, which flattens
# the v5e 16B series the source measured rising.
BEHAVIOUR = dict(
    kernel_share=0.9391,
    kappa=54.94,
    o_tp=0.2017,
    o_dp=0.1774,
    o_dcn=0.1396,
    layer_overhead=0.0002,
    step_overhead=0.1778,
)
