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
    """Tokens per chip above which pure TP is compute-bound.

    None: its traffic grows with the batch as its compute does (its limit is on Y,
    ``tp_limit``).

    Parameters
    ----------
    alpha : float or array_like
        α = C/W_ici, a chip's peak matmul rate over its ICI bandwidth along one axis; it sets only
        the result's shape [FLOP/byte].
    weights_per_compute : float or array_like
        r = F_w/F, the MLP width held as weights over the width a token goes through; unused.
    mx : float or array_like
        M_X, the mesh axes the data group X spans; it sets only the result's shape.
    my : float or array_like
        M_Y, the mesh axes the tensor group Y spans; it sets only the result's shape.
    d_ff : float or array_like
        F, the MLP width a token goes through; it sets only the result's shape [features].

    Returns
    -------
    tokens : np.ndarray
        NaN: no batch makes pure TP compute-bound [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to
       Scale Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Tensor Parallelism.
    """
    return np.full(np.broadcast(alpha, d_ff, mx, my).shape, np.nan)
