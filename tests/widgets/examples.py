"""Scenarios the widget tests share."""

# The chapter's example 16 as it states it: FSDP + TP at its best split, 3M tokens of 32K sequences
# (91.6 of them, each split over the chips that keep every data replica's share whole) at the
# chapter's 40 % MFU.
EXAMPLE_16 = dict(
    strategy="fsdp+tp",
    model="llama-2-13b",
    hardware="tpu-v5p",
    slice_shape=(16, 16, 16),
    batch=3e6,
    seq_len=32768,
    mfu=0.4,
)
