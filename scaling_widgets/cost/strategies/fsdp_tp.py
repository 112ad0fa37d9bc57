"""FSDP and tensor parallelism together: a stage's chips split into X x Y, the weights sharded
over both (MODEL.md §A.3). Below ZeRO-3 the weights are whole on X: data parallelism with TP."""

from __future__ import annotations

import numpy as np

NAME, LABEL, ORDER = "fsdp+tp", "FSDP+TP", 3
ZERO = 3
ON = "x+y"
TRAFFIC = ("dp+tp", "fsdp+tp")


def critical_tokens_per_chip(
    *,
    alpha: float | np.ndarray,
    weights_per_compute: float | np.ndarray,
    mx: float | np.ndarray,
    my: float | np.ndarray,
    d_ff: float | np.ndarray,
) -> float | np.ndarray:
    """Tokens per chip above which FSDP + TP is compute-bound, α²·r/(M_X·M_Y·F), at the split
    X_opt that balances the two axes.

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
        M_Y, the mesh axes the tensor group Y spans.
    d_ff : float or array_like
        F, the MLP width a token goes through [features].

    Returns
    -------
    tokens : float or np.ndarray
        Tokens per chip above which FSDP + TP is compute-bound at the optimal split, before the
        division by the pipeline stages Z [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer) and §D.2 (a MoE layer's widths).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to
       Scale Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Mixed FSDP and Tensor Parallelism; Appendix C - Alternate derivation of the
       batch size constraint for mixed FSDP + model parallelism.
    """
    return alpha**2 * weights_per_compute / (mx * my * d_ff)
