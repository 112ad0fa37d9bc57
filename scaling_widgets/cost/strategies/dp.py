"""Data parallelism: every chip of a stage on the data axis X, each with the whole weights; the
gradients are all-reduced in the backward pass (MODEL.md §A.3)."""

from __future__ import annotations

import numpy as np

NAME, LABEL, ORDER = "dp", "DP", 0
ZERO = 0
ON = "x"
TRAFFIC = ("dp", "fsdp")


def critical_tokens_per_chip(
    *,
    alpha: float | np.ndarray,
    weights_per_compute: float | np.ndarray,
    mx: float | np.ndarray,
    my: float | np.ndarray,
    d_ff: float | np.ndarray,
) -> float | np.ndarray:
    """r·α/M_X: each token's compute against its share of the gradients' reduction."""
    return alpha * weights_per_compute / mx * np.ones_like(d_ff)
