"""Fully sharded data parallelism (ZeRO-3): every chip of a stage on the data axis X, the
weights sharded over it and gathered layer by layer (MODEL.md §A.3, §B.3)."""

import numpy as np

NAME, LABEL, ORDER = "fsdp", "FSDP", 1
ZERO = 3
ON = "x"
TRAFFIC = ("dp", "fsdp")


def critical_tokens_per_chip(*, alpha, weights_per_compute, mx, my, d_ff):
    """r·α/M_X, as data parallelism: the gathers move the weights' bytes once more."""
    return alpha * weights_per_compute / mx * np.ones_like(d_ff)
