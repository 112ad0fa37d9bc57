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
# (MaxText's READMEs and tpu-recipes). Near a bound: layer_overhead = 1 ms (upper), which the fit
# uses for what the TPUs' physics lacks (no attention or HBM microbenchmarks on TPUs yet): a
# known gap, not a launch cost. o_dcn = 0.01: the reduction across slices is
# all but exposed.
BEHAVIOUR = dict(
    kernel_share=0.8992,
    kappa=20.59,
    o_tp=0.213,
    o_dp=0.8993,
    o_dcn=0.01057,
    layer_overhead=0.000998,
    step_overhead=0.2206,
)
