"""The search for layouts: the best FSDP x TP split of a slice, and every legal layout of a
cluster, ranked."""
