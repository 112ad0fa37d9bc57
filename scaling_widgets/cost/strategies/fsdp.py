"""Fully sharded data parallelism (ZeRO-3): every chip of a stage on the data axis X, the
weights sharded over it and gathered layer by layer (MODEL.md §A.3, §B.3)."""

from .dp import critical_tokens_per_chip  # r·α/M_X, as DP's: the gathers move the weights' bytes

NAME, LABEL, ORDER = "fsdp", "FSDP", 1
ZERO = 3
ON = "x"
TRAFFIC = ("dp", "fsdp")
__all__ = ["critical_tokens_per_chip"]
