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
