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
# (MaxText's READMEs, tpu-recipes). Nothing on a bound (layer_overhead just below its 0.2 ms). o_dcn
# hides half the reduction across slices under the backward pass: the v5e slices measured a rise of
# 2-11 % that the hidden share flattens to under 1 %, still in the measured order.
BEHAVIOUR = dict(
    kernel_share=0.9382,
    kappa=58.01,
    o_tp=0.2514,
    o_dp=0.1592,
    o_dcn=0.5224,
    layer_overhead=0.0001968,
    step_overhead=0.1635,
)
