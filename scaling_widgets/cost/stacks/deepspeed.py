"""DeepSpeed ZeRO with bf16."""

NAME, ORDER = "deepspeed", 2
# Gradients accumulate in bf16; reduce and all-gather buckets of 5e8 elements each (its defaults);
# Megatron-DeepSpeed's loss.
MEMORY = dict(
    weight_bytes=2.0,
    grad_bytes=2.0,
    optimizer_bytes=12.0,
    selective="attention",
    logits_bytes=6.0,
    bucket_bytes=2e9,
    measures="allocated",
)
