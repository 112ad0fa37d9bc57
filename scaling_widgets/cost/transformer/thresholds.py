"""Where each strategy turns compute-bound, and the chapter's optimal FSDP/TP split (MODEL.md §A.3,
§A.10)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..strategies import STRATEGIES


def critical_tokens_per_chip(
    *,
    strategy: str,
    flops: ArrayLike,
    ici_bw: ArrayLike,
    d_ff: ArrayLike,
    mx: ArrayLike = 1,
    my: ArrayLike = 1,
    stages: ArrayLike = 1,
    d_ff_weights: ArrayLike | None = None,
) -> float | np.ndarray:
    """Tokens per chip above which a strategy is compute-bound (MODEL.md §A.3, §A.10).

    DP and FSDP: α / M_X; FSDP + TP at the optimal split: α² / (M_X·M_Y·F); pure TP has no
    batch threshold (NaN; see ``tp_limit``). α = C / W_ici. With Z pipeline stages, a chip
    sees 1/Z of the tokens of a stage's layer, so the per-chip threshold is divided by Z.
    A MoE layer holds F_w = (E + S)·F_e of weights for F = (k + S)·F_e of compute (MODEL.md §D.1,
    §D.2): the weights' traffic per FLOP grows by r = F_w/F, and so does DP's and FSDP's threshold
    (r·α/M_X, the "(E/k)·C/W" of data parallelism over experts); FSDP + TP's is α²·r/(M_X·M_Y·F).

    Parameters
    ----------
    strategy : str
        One of ``STRATEGIES``: "dp", "fsdp", "tp" or "fsdp+tp".
    flops : float or array_like
        C, a chip's peak bf16 matmul rate [FLOP/s].
    ici_bw : float or array_like
        W_ici, a chip's ICI bandwidth along one mesh axis, both ways [bytes/s].
    d_ff : float or array_like
        F, the MLP width a token goes through [features].
    mx : float or array_like, default 1
        M_X, the mesh axes the data group X spans.
    my : float or array_like, default 1
        M_Y, the mesh axes the tensor group Y spans.
    stages : int or array_like, default 1
        Z, the pipeline stages.
    d_ff_weights : float or array_like, optional
        F_w, the MLP width held as weights when it is not F (a MoE layer's (E + S)·F_e); None:
        F [features].

    Returns
    -------
    tokens : float or np.ndarray
        Tokens per chip above which the strategy is compute-bound; NaN for pure TP [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer), §A.10 (what is reported), §D.1 (a
       MoE layer's two widths) and §D.2 (data parallelism over experts).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Mixed FSDP and Tensor Parallelism.

    Examples
    --------
    >>> critical_tokens_per_chip(strategy="fsdp", flops=4.59e14, ici_bw=1.8e11, d_ff=1, mx=[1, 3])
    array([2550.,  850.])
    """
    C, W, F, M_X, M_Y, Z = (
        np.asarray(v, dtype=float) for v in (flops, ici_bw, d_ff, mx, my, stages)
    )
    r = 1.0 if d_ff_weights is None else np.asarray(d_ff_weights, dtype=float) / F
    per_stage = STRATEGIES[strategy].critical_tokens_per_chip(
        alpha=C / W, weights_per_compute=r, mx=M_X, my=M_Y, d_ff=F
    )
    return per_stage / Z


def tp_limit(
    *, flops: ArrayLike, ici_bw: ArrayLike, d_ff: ArrayLike, my: ArrayLike = 1
) -> float | np.ndarray:
    """The largest tensor-parallel degree that stays compute-bound: Y < M_Y·F/α (MODEL.md §A.3).

    Parameters
    ----------
    flops : float or array_like
        C, a chip's peak bf16 matmul rate [FLOP/s].
    ici_bw : float or array_like
        W_ici, a chip's ICI bandwidth along one mesh axis, both ways [bytes/s].
    d_ff : float or array_like
        F, the MLP width a token goes through [features].
    my : float or array_like, default 1
        M_Y, the mesh axes the tensor group Y spans.

    Returns
    -------
    y : float or np.ndarray
        M_Y·F/α, the (continuous) TP degree below which TP stays compute-bound [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (strategies, per layer and per chip) and §A.10 (the TP limit).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Tensor
       Parallelism".

    Examples
    --------
    >>> tp_limit(flops=4.59e14, ici_bw=1.8e11, d_ff=[30_000, 49_152]).round(1)
    array([11.8, 19.3])
    """
    alpha = np.asarray(flops, dtype=float) / np.asarray(ici_bw, dtype=float)
    return np.asarray(my, dtype=float) * np.asarray(d_ff, dtype=float) / alpha


def critical_tokens_per_pod(
    *, flops: ArrayLike, dcn_bw: ArrayLike, weights_per_compute: ArrayLike = 1.0
) -> float | np.ndarray:
    """Per-pod batch above which data parallelism over DCN is compute-bound: C/W_dcn (MODEL.md
    §A.3), times F_w/F for a MoE model (``weights_per_compute``, MODEL.md §D.2): its gradients per
    FLOP.

    Parameters
    ----------
    flops : float or array_like
        C, a chip's peak bf16 matmul rate [FLOP/s].
    dcn_bw : float or array_like
        W_dcn, a chip's share of the data-center network, one direction [bytes/s].
    weights_per_compute : float or array_like, default 1.0
        r = F_w/F, the MLP width held as weights over the width a token goes through (a MoE
        layer's (E + S)·F_e over (k + S)·F_e); 1 for a dense model.

    Returns
    -------
    tokens : float or np.ndarray
        Tokens per pod above which data parallelism over DCN is compute-bound [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (strategies, per layer and per chip: across pods), §D.1 (a MoE
       layer's two widths) and §D.2 (the width a chip holds under EP).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Scaling
       Between Pods".

    Examples
    --------
    >>> critical_tokens_per_pod(flops=[4.59e14, 1.97e14], dcn_bw=[6.25e9, 3.125e9]).round()
    array([73440., 63040.])
    """
    r, C, W_dcn = (np.asarray(v, dtype=float) for v in (weights_per_compute, flops, dcn_bw))
    return r * C / W_dcn


def x_opt(
    *, batch: ArrayLike, d_ff: ArrayLike, chips: ArrayLike, mx: ArrayLike = 1, my: ArrayLike = 1
) -> float | np.ndarray:
    """The continuous FSDP degree that balances FSDP and TP traffic (MODEL.md §A.3).

    X_opt = sqrt( (B/F) · (M_X/M_Y) · N ), with B the batch of one pod and N its chips per
    stage. (The translated chapter drops the square root: MODEL.md §A.9.) FSDP moves weights, so for
    a MoE layer F is the width it holds, (E + S)·F_e (MODEL.md §D.1).

    Parameters
    ----------
    batch : float or array_like
        B, the batch of one pod [tokens].
    d_ff : float or array_like
        F, the MLP width the layer holds as weights [features].
    chips : float or array_like
        N, the pod's chips per pipeline stage [chips].
    mx : float or array_like, default 1
        M_X, the mesh axes the data group X spans.
    my : float or array_like, default 1
        M_Y, the mesh axes the tensor group Y spans.

    Returns
    -------
    x : float or np.ndarray
        X_opt, the FSDP degree (not rounded) that balances the two traffics [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split), §A.9 (the square root the translated chapter drops)
       and §D.1 (a MoE layer's two widths).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Mixed
       FSDP and Tensor Parallelism".

    Examples
    --------
    >>> x_opt(batch=[48_000, 3e6], d_ff=[32_768, 13_824], chips=[64, 4096], mx=2, my=1).round(1)
    array([  13.7, 1333.3])
    """
    B, F, N, M_X, M_Y = (np.asarray(v, dtype=float) for v in (batch, d_ff, chips, mx, my))
    return np.sqrt(B / F * (M_X / M_Y) * N)


def nearest_split(*, x_opt: ArrayLike, chips: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The chapter's rounding of X_opt: X = the power-of-two share nearest X_opt, Y = N / X.

    Y runs over the powers of two that divide N; the one whose X = N/Y is nearest X_opt on a
    log scale wins (MODEL.md §A.8 examples 8, 13 and 16). Returns (X, Y) as int arrays.

    Parameters
    ----------
    x_opt : float or array_like
        X_opt, the continuous FSDP degree (``x_opt``) [chips].
    chips : int or array_like
        N, the chips to split into X·Y, a pod's per pipeline stage [chips].

    Returns
    -------
    X : np.ndarray
        The FSDP degree N / Y, int64 (a numpy integer for scalar inputs) [chips].
    Y : np.ndarray
        The TP degree, a power of two dividing N, int64 (a numpy integer for scalar inputs)
        [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split) and §A.8 (examples 8, 13 and 16).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Mixed
       FSDP and Tensor Parallelism".

    Examples
    --------
    >>> nearest_split(x_opt=[13.7, 1333.3], chips=[64, 4096])
    (array([  16, 1024]), array([4, 4]))
    """
    target, N = np.asarray(x_opt, dtype=float), np.asarray(chips, dtype=np.int64)
    largest_y = N & -N  # the largest power of two dividing N
    log_y = np.clip(np.round(np.log2(N / target)), 0, np.log2(largest_y))
    Y = (2 ** log_y.astype(np.int64)).astype(np.int64)
    return N // Y, Y
