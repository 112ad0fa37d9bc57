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
    """Tokens per chip above which DP (and FSDP) is compute-bound, r·α/M_X: each token's compute
    against its share of the gradients' reduction.

    Parameters
    ----------
    alpha : float or array_like
        α = C/W_ici, a chip's peak matmul rate over its ICI bandwidth along one axis [FLOP/byte].
    weights_per_compute : float or array_like
        r = F_w/F, the MLP width held as weights over the width a token goes through; 1 for a dense
        layer, (E + S)/(k + S) for a MoE layer.
    mx : float or array_like
        M_X, the mesh axes the data group X spans.
    my : float or array_like
        M_Y, the mesh axes the tensor group Y spans; unused.
    d_ff : float or array_like
        F, the MLP width a token goes through; unused, but for the result's shape [features].

    Returns
    -------
    tokens : float or np.ndarray
        Tokens per chip above which the strategy is compute-bound, before the division by the
        pipeline stages Z [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer) and §D.2 (a MoE layer's widths).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to
       Scale Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Data Parallelism; Fully-Sharded Data Parallelism (FSDP).
    """
    return alpha * weights_per_compute / mx * np.ones_like(d_ff)
