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
# (MaxText's READMEs, tpu-recipes). On a bound: o_dcn = 0, the reduction across slices runs after
# the backward pass, exposed; layer_overhead = 1 ms (upper), where the fit puts what the TPUs'
# physics lacks (no attention or HBM microbenchmarks of TPUs yet): a known gap, not a launch cost.
BEHAVIOUR = dict(
    kernel_share=0.9148,
    kappa=48.24,
    o_tp=0.2435,
    o_dp=0.79,
    o_dcn=6.903e-07,
    layer_overhead=0.001,
    step_overhead=0.09543,
)
