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
# (MaxText's READMEs, tpu-recipes). Nothing on a bound. o_dcn hides the reduction across slices
# under the backward pass, which flattens the v5e 16B series the source measured rising.
BEHAVIOUR = dict(
    kernel_share=0.9413,
    kappa=59.17,
    o_tp=0.2505,
    o_dp=0.1799,
    o_dcn=0.14,
    layer_overhead=0.0001987,
    step_overhead=0.1564,
)
