"""Tensor parallelism: every chip of a stage on the tensor axis Y, each with a slice of every
weight; the activations are gathered and scattered around each matmul (MODEL.md §A.3)."""

from __future__ import annotations

import numpy as np

NAME, LABEL, ORDER = "tp", "TP", 2
ZERO = 0  # no data axis to shard over
ON = "y"
TRAFFIC = ("tp", "tp")


def critical_tokens_per_chip(
    *,
    alpha: float | np.ndarray,
    weights_per_compute: float | np.ndarray,
    mx: float | np.ndarray,
    my: float | np.ndarray,
    d_ff: float | np.ndarray,
) -> np.ndarray:
    """None: its traffic grows with the batch as its compute does (its limit is on Y,
    ``tp_limit``)."""
    return np.full(np.broadcast(alpha, d_ff, mx, my).shape, np.nan)
