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
# (MaxText's READMEs, tpu-recipes). On a bound: layer_overhead = 0.2 ms (upper), the most some tens
# of launches a pass take: the fit would put more time per layer than any measured fixed cost
# explains (a known gap, MODEL.md §F.2). o_dcn = 0.6: the reduction across slices hides under 60 %
# of the backward pass, so the rise of 2-11 % the v5e slices measured comes out flatter, though in
# the measured order.
BEHAVIOUR = dict(
    kernel_share=0.8925,
    kappa=44.54,
    o_tp=0.2392,
    o_dp=0.3276,
    o_dcn=0.4894,
    layer_overhead=0.0002,
    step_overhead=0.1236,
)
