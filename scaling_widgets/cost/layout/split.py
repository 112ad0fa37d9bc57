"""The best legal FSDP x TP split on a physical slice (MODEL.md §A.3, §A.8 examples 10 and 16)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..hardware.mesh import span_axes
from ..hardware.nodes import node_spans
from ..transformer.layer import CHAPTER, crossover_batch, layer_times

if TYPE_CHECKING:
    from ..transformer.exactness import Exactness


def split_candidates(chips: int) -> tuple[np.ndarray, np.ndarray]:
    """Every split of ``chips``: Y a power of two dividing it, X = chips / Y (Y ascending).

    Parameters
    ----------
    chips : int
        The chips to split, a stage's share of the slice, N/Z [chips].

    Returns
    -------
    X, Y : np.ndarray, np.ndarray
        The data and tensor axes of each split, X·Y = ``chips`` [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split: powers of two).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Mixed FSDP and
       Tensor Parallelism.
    """
    chips = int(chips)
    largest_y = chips & -chips
    Y = 2 ** np.arange(int(math.log2(largest_y)) + 1, dtype=np.int64)
    return chips // Y, Y


def legal_splits(
    *,
    batch: ArrayLike,
    d_model: ArrayLike,
    d_ff: ArrayLike,
    slice_shape: Sequence[int],
    flops: ArrayLike,
    ici_bw: ArrayLike,
    dcn_bw: ArrayLike,
    z: int = 1,
    pods: ArrayLike = 1,
    tp_pods: int = 1,
    rings: Sequence[bool] | None = None,
    mx: ArrayLike | None = None,
    my: ArrayLike | None = None,
    node_size: int = 0,
    scaleout_bw: ArrayLike = 0.0,
    exact: Exactness = CHAPTER,
    heads: int | None = None,
    kv_heads: int | None = None,
    x_ok: Callable[[np.ndarray], np.ndarray] | None = None,
    experts: Callable[..., dict] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every FSDP + TP split (X, Y) of this slice, which are legal at this batch, and the one the
    chapter's rule picks.

    Every candidate of ``split_candidates`` is mapped onto the slice (``span_axes``) and
    evaluated. If some are compute-bound, the best is the one that stays compute-bound down to
    the smallest batch (its ``crossover_batch``): the most headroom. Otherwise the best is the
    one with the shortest layer time. Ties go to the smaller Y. ``mx``/``my`` override the
    spans of every candidate. With ``node_size`` the slice is a GPU cluster (``node_spans``).
    ``z`` (pipeline stages) is one whole number; the rest broadcast. On a GPU cluster TP stays
    inside a node (a split by hand may take it across). With ``heads`` (and
    ``kv_heads``) only TP degrees that divide them are offered, and with ``x_ok(X)`` only the
    data axes it allows (a whole sequence per replica, room for the EP and CP groups: see
    ``feasible.runs``; one row per layout, one column per candidate); when no split is left, X is
    0. ``experts(x=X, y=Y, mx=M_X, my=M_Y)`` gives a MoE layer's keywords of ``layer_times`` for
    each candidate, along the last axis (``experts.layer_keywords``).

    On v5p 16x16x16 this picks FSDP 512 x TP 8 for D = 8192, F = 32,768 (example 10) and
    FSDP 1024 x TP 4 for LLaMA-2 13B at 3M tokens (example 16).

    Parameters
    ----------
    batch : float or array_like
        B, the global batch, over every pod [tokens].
    d_model : float or array_like
        D, the model width [features].
    d_ff : float or array_like
        F, the MLP width a token goes through (a MoE layer's active width) [features].
    slice_shape : sequence of int
        One pod's slice, the length of each axis (a GPU slice: nodes, GPUs used in each)
        [chips].
    flops : float or array_like
        C, a chip's peak bf16 matmul rate [FLOP/s].
    ici_bw : float or array_like
        W_ici, a chip's ICI bandwidth along one mesh axis, both ways (on GPUs its NVLink egress)
        [bytes/s].
    dcn_bw : float or array_like
        W_dcn, a chip's share of the data-center network, one direction [bytes/s].
    z : int, default 1
        Z, the pipeline stages; the candidates split the N/Z chips of a stage.
    pods : int or array_like, default 1
        P, the pods over the data-center network (the data replicas).
    tp_pods : int, default 1
        T, the pods each TP group spans (MODEL.md §B.11): a candidate's Y in each pod, Y·T in
        all, which the heads must allow.
    rings : sequence of bool, optional
        Whether each slice axis wraps around; None: every axis does.
    mx : float or array_like, optional
        M_X, the mesh axes (on GPUs, multiples of NVLink's bandwidth) the X group spans, for
        every candidate; None: each candidate's own (``span_axes``, ``node_spans``).
    my : float or array_like, optional
        M_Y, the mesh axes the Y group spans, for every candidate; None: each candidate's own.
    node_size : int, default 0
        GPUs in an NVLink node; 0 for a TPU torus.
    scaleout_bw : float or array_like, default 0.0
        A GPU's NIC bandwidth, used when ``node_size`` is set [bytes/s].
    exact : Exactness, default CHAPTER
        The MODEL.md §B.7 corrections; ``CHAPTER``: none.
    heads : int, optional
        N_h, the attention heads, which TP must divide; None: any TP degree.
    kv_heads : int, optional
        K, the KV heads, which TP divides or is divided by; None: ``heads``.
    x_ok : callable, optional
        ``x_ok(X)``: which data axes X may run, one row per layout and one column per
        candidate; None: every X.
    experts : callable, optional
        ``experts(x=X, y=Y, mx=M_X, my=M_Y)``: a MoE layer's keywords of ``layer_times`` for each
        candidate; None: a dense layer.

    Returns
    -------
    X, Y : np.ndarray
        The candidates' data/FSDP and tensor axes (``split_candidates``) [chips].
    legal : np.ndarray
        Whether each candidate can run, per batch (and model) given, candidates along the last
        axis.
    pick : np.ndarray
        The index of the chapter's pick, per batch (and model) given.

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split), §A.7 (where the groups sit), §A.8 (examples 10 and 16)
       and §B.5 (GPU clusters: TP inside a node).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Mixed FSDP and
       Tensor Parallelism.
    .. [3] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    """
    shape, Z, B = tuple(slice_shape), int(z), np.asarray(batch, dtype=float)
    X, Y = split_candidates(math.prod(shape) // Z)
    if node_size:
        span = node_spans(slice_shape=shape, x=X, y=Y, z=Z, nvlink_bw=ici_bw, nic_bw=scaleout_bw)
    else:
        span = span_axes(slice_shape=shape, x=X, y=Y, z=Z, rings=rings)
    # Candidates run along a new last axis; every other argument gains one to broadcast.
    D, F, P, C, W, W_dcn = (
        np.asarray(v, dtype=float)[..., None] for v in (d_model, d_ff, pods, flops, ici_bw, dcn_bw)
    )
    M_X = span.mx if mx is None else np.asarray(mx, dtype=float)[..., None]
    M_Y = span.my if my is None else np.asarray(my, dtype=float)[..., None]
    T = int(tp_pods)  # the TP group, Y·T, spans T pods (MODEL.md §B.11)
    layout = dict(
        strategy="fsdp+tp",
        d_model=D,
        d_ff=F,
        x=X,
        y=Y * T,
        pods=P,
        tp_pods=T,
        mx=M_X,
        my=M_Y,
        exact=exact,
        wrap_x=span.wrap_x,
        wrap_y=span.wrap_y,
        **({} if experts is None else experts(x=X, y=Y * T, mx=M_X, my=M_Y)),
    )
    crossover = crossover_batch(**layout, flops=C, ici_bw=W, dcn_bw=W_dcn)
    layer = layer_times(batch=B[..., None], **layout, flops=C, ici_bw=W, dcn_bw=W_dcn).lower_bound
    legal = _legal(span, X, Y, T, node_size, heads, kv_heads, x_ok)
    crossover, layer = np.where(legal, crossover, np.inf), np.where(legal, layer, np.inf)
    crossover, layer = np.broadcast_arrays(crossover, layer)
    some_compute_bound = crossover.min(axis=-1) <= B
    pick = np.where(some_compute_bound, crossover.argmin(axis=-1), layer.argmin(axis=-1))
    return X, Y, np.broadcast_to(legal, crossover.shape), pick


def best_split(**keywords) -> tuple[np.ndarray, np.integer | np.ndarray]:
    """The FSDP + TP split (X, Y) the chapter's rule picks on this slice at this batch
    (``legal_splits``, whose keywords these are): of the legal splits, the one compute-bound down
    to the smallest batch, else the one with the shortest layer.

    Parameters
    ----------
    **keywords
        The keywords of ``legal_splits``: ``batch``, ``d_model``, ``d_ff``, ``slice_shape``,
        ``flops``, ``ici_bw`` and ``dcn_bw``, and any of the others.

    Returns
    -------
    X, Y : np.ndarray, np.integer or np.ndarray
        The data/FSDP and tensor axes to use, one pair per batch (and model) given; X is 0 where
        no split is legal [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split) and §A.8 (examples 10 and 16).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Mixed FSDP and
       Tensor Parallelism.

    Examples
    --------
    >>> X, Y = best_split(batch=[5e5, 3e6], d_model=[8192, 5120], d_ff=[32_768, 13_824],
    ...                   slice_shape=(16, 16, 16), flops=4.59e14, ici_bw=1.8e11, dcn_bw=6.25e9)
    >>> X.tolist(), Y.tolist()
    ([512, 1024], [8, 4])
    """
    X, Y, legal, pick = legal_splits(**keywords)
    return np.where(~legal.any(axis=-1), 0, X[pick]), Y[pick]


def _legal(span, X, Y, T, node_size, heads, kv_heads, x_ok):
    """Which candidates may run: X and Y share at most two axes (``span_axes``: TP 8 as 4 of one
    axis and 2 of another, each group counting the axes it spans); on GPUs TP stays
    inside the NVLink node (beyond it the predicted step charges one NIC a GPU); TP, Y in each of
    T pods, divides the heads; ``x_ok`` allows X (whole sequences, the EP and CP groups)."""
    legal = span.shared_axes <= 2
    if node_size:
        legal = legal & (Y <= node_size)
    Y = Y * T
    if heads is not None:
        K = heads if kv_heads is None else kv_heads
        legal = legal & (heads % Y == 0) & ((Y % K == 0) | (K % Y == 0))
    return legal if x_ok is None else legal & x_ok(X)
