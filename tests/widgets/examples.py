"""Scenarios the widget tests share."""

# The chapter's example 16 in 512-token sequences: 5859 of them, a whole one for each data replica
# of every strategy (even pure DP/FSDP over 4096 chips), so the chapter's numbers stand. Its 32K
# sequences (91.6) could not fill the 512 replicas even TP 8 leaves.
EXAMPLE_16 = dict(
    model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=3e6, seq_len=512
)
