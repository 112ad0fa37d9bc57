"""The split a layout takes when it gives none (MODEL.md §A.3, §A.8 examples 10 and 16): the
candidates of ``split`` that can run on this slice with this workload (whole sequences
per replica, the EP and CP groups), the chapter's pick among them, and the microbatches placed by
default."""

from __future__ import annotations

import functools
import math

import numpy as np

from ..ground.refusals import refuse
from ..hardware.mesh import axis_rings
from ..schedules import runs as schedule_runs
from ..strategies import STRATEGIES
from ..transformer.exactness import Exactness
from ..transformer.experts import layer_keywords
from ..values import Cluster, Layout, Workload
from .feasible import implied_cp, runs
from .microbatches import fewest_whole
from .split import best_split, legal_splits, split_candidates


def default_microbatches(layout: Layout, Z, workload: Workload | None = None, X=None, P=1):
    """The microbatches asked for, else 4·Z under pipelining (a small bubble) and 1 without: the
    chapter's, without sequences; with them the evaluation chooses (``fastest_microbatches``).
    Given the workload and X, where a replica's share is whole sequences S, the largest count up
    to that which splits S into whole microbatches, gcd(4·Z, S); where it is part sequences, at
    most one microbatch a sequence.

    Parameters
    ----------
    layout : Layout
        The layout; its ``microbatches``, when given, are returned as they are.
    Z : int or array_like
        Z, the pipeline stages.
    workload : Workload, optional
        The model, B and T; None: 4·Z or 1, as without sequences.
    X : int or array_like, optional
        X, the data axis of a stage (CP chips included) [chips]; needed with ``workload``.
    P : int or array_like, default 1
        P, the pods over the data-center network.

    Returns
    -------
    microbatches : np.ndarray
        m per layout [microbatches].
    """
    if layout.microbatches is not None:
        return np.asarray(layout.microbatches)
    m = np.where(np.asarray(Z) > 1, 4 * np.asarray(Z), 1).astype(np.int64)
    if workload is None or workload.seq_len is None:
        return m
    share = replica_sequences(workload, layout, X, P)
    S = np.round(share)
    whole = np.isclose(share, S, rtol=1e-9, atol=0) & (S >= 1)
    # a share of part sequences (the chapter's average): at most a sequence a microbatch
    fewer = np.where(share >= 1, np.minimum(m, np.floor(share)), m).astype(np.int64)
    m = np.where(whole, np.gcd(m, np.maximum(S, 1).astype(np.int64)), fewer)
    return _schedules_count(m, layout, Z, workload, X, P)


def _schedules_count(m, layout: Layout, Z, workload: Workload, X, P) -> np.ndarray:
    """``m``, or where the schedule cannot run it (DualPipe's m ≥ 2Z), the fewest whole count it
    can (``fewest_whole``); as it was where there is none (the evaluation then says why)."""
    ok = schedule_runs(schedule=layout.schedule, stages=Z, microbatches=m)
    if np.all(ok):
        return m
    shape = np.broadcast_shapes(np.shape(m), np.shape(Z), np.shape(X), np.shape(layout.schedule))
    flat = [np.broadcast_to(a, shape).ravel() for a in (m, Z, X, layout.schedule)]
    cp = 1 if layout.cp is None else np.broadcast_to(cp_group(layout), shape).ravel()
    found = fewest_whole(workload=workload, x=flat[2], z=flat[1], pods=P, cp=cp, schedule=flat[3])
    # a part share's count, at most a sequence a microbatch: one fewer for an even one
    fewer = np.maximum(flat[0] - 1, 1)
    odd = schedule_runs(schedule=flat[3], stages=flat[1], microbatches=fewer)
    return np.where(found > 0, found, np.where(odd, fewer, flat[0])).reshape(shape)


def replica_sequences(workload: Workload, layout: Layout, X, P) -> np.ndarray:
    """The sequences each data replica gets, B·CP/(T·X·P), its CP chips (as given, else 1)
    sharing them; a workload with sequences.

    Parameters
    ----------
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length (not None).
    layout : Layout
        The layout; its ``cp`` (None: 1).
    X : int or array_like
        X, the data axis of a stage (CP chips included) [chips].
    P : int or array_like
        P, the pods over the data-center network.

    Returns
    -------
    sequences : np.ndarray
        S = B·CP/(T·X·P) per layout, not rounded [sequences].
    """
    cp = 1 if layout.cp is None else cp_group(layout)
    return workload.batch * cp / (workload.seq_len * np.asarray(X) * P)


def best_legal_split(cluster, workload, layout, exact, Z, stage_chips, rings):
    """``best_split`` among the splits that can run; refuse the batch when none can.

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and P, the pods.
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length.
    layout : Layout
        The layout, its split not given (``split_chosen``).
    exact : Exactness
        The MODEL.md §B.7 corrections.
    Z : int
        Z, a pod's pipeline stages, one number.
    stage_chips : int
        N/Z, the chips of a stage [chips].
    rings : tuple of bool
        Whether each slice axis wraps around (``layout_rings``).

    Returns
    -------
    x, y : np.ndarray
        X and Y of the chapter's pick among the legal splits, one pair per layout [chips].

    Raises
    ------
    InputError
        Naming ``batch`` when no split can run: the tokens the smallest legal data axis would
        need; naming ``z`` when ``Z`` is an array.

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split) and "Layouts that cannot run" (after §A.10).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Mixed FSDP and
       Tensor Parallelism.
    """
    split, per_microbatch = _split_keywords(cluster, workload, layout, exact, Z, rings)
    x, y = best_split(**split)
    if np.any(x == 0):
        cp = None if layout.cp is None else int(np.max(cp_group(layout)))
        T, P = workload.seq_len or 1, cluster.replicas(layout)
        raise _no_split(workload, split, stage_chips, P, T, np.max(per_microbatch), cp)
    return x, y


def split_choices(
    cluster: Cluster, workload: Workload, layout: Layout, exact: Exactness
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The splits a layout without ``x`` and ``y`` may take, for the evaluation to choose from:
    X and Y along a last axis, one row per layout, an illegal candidate replaced by the chapter's
    pick (``best_split``); None when the layout's split is given, or none is legal (``place``
    then says why).

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and P, the pods.
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length.
    layout : Layout
        The layout; its split is chosen when ``split_chosen`` holds and ``z`` is one number.
    exact : Exactness
        The MODEL.md §B.7 corrections.

    Returns
    -------
    choices : tuple of np.ndarray, or None
        X and Y [chips], shape (..., candidates), and whether each is the chapter's pick.

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Mixed FSDP and
       Tensor Parallelism.
    """
    scalar = np.ndim(layout.z) == np.ndim(layout.pp_pods) == np.ndim(layout.tp_pods) == 0
    if not (split_chosen(layout) and scalar):
        return None
    Z = 1 if layout.z is None else layout.z
    if math.prod(cluster.slice_shape) % Z:
        return None
    split = _split_keywords(cluster, workload, layout, exact, Z, layout_rings(cluster, layout))[0]
    X, Y, legal, pick = legal_splits(**split)
    if not legal.any(axis=-1).all():
        return None
    chapters = np.arange(len(X)) == np.asarray(pick)[..., None]
    return np.where(legal, X, X[pick][..., None]), np.where(legal, Y, Y[pick][..., None]), chapters


def layout_rings(cluster: Cluster, layout: Layout) -> tuple:
    """Which slice axes wrap around: the chip's rule, or every one or none as the layout says.

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip (its pod and its rule) and one pod's slice.
    layout : Layout
        The layout; its ``wraparound`` (None: the chip's rule).

    Returns
    -------
    rings : tuple of bool
        One per slice axis: True where it wraps around (MODEL.md §A.7).
    """
    if layout.wraparound is not None:
        return (bool(layout.wraparound),) * len(cluster.slice_shape)
    chip, shape = cluster.chip, cluster.slice_shape
    return axis_rings(slice_shape=shape, pod_shape=chip.pod_shape, rule=chip.wraparound)


def split_chosen(layout: Layout) -> bool:
    """Whether the split is ours to choose: FSDP + TP with neither x, y nor axis roles given.

    Parameters
    ----------
    layout : Layout
        The layout as asked for.

    Returns
    -------
    chosen : bool
        True when the split is chosen for the layout.
    """
    given = layout.x is not None or layout.y is not None or layout.axis_roles is not None
    return not given and STRATEGIES[layout.strategy].on == "x+y"


def _split_keywords(cluster, workload, layout, exact, Z, rings) -> tuple[dict, np.ndarray]:
    """``legal_splits``' keywords for this layout, and the sequences a replica needs a
    microbatch."""
    if np.ndim(Z):
        raise refuse("z", "one number when the split is chosen for you (no x or y)", layout.z)
    for name in ("pp_pods", "tp_pods"):
        if np.ndim(getattr(layout, name)):
            raise refuse(
                name,
                "one number when the split is chosen for you (no x or y)",
                getattr(layout, name),
            )
    # Z a pod's stages, the pipeline's Z·S; P the replicas over DCN (MODEL.md §B.10)
    chip, model, P = cluster.chip, workload.model, cluster.replicas(layout)
    per_microbatch = layout.microbatch_seqs or np.asarray(
        default_microbatches(layout, Z * layout.pp_pods)
    )

    stage_chips = math.prod(cluster.slice_shape) // Z

    T = int(layout.tp_pods)  # a candidate's Y in each of the T pods a TP group spans (§B.11)
    keywords = dict(Z=Z, pods=P, per_microbatch=per_microbatch, stage_chips=stage_chips, T=T)
    runs_on = functools.partial(_runs_on, workload, layout, **keywords)

    split = dict(
        exact=exact,
        node_size=chip.node_size,
        scaleout_bw=chip.scaleout_bw,
        batch=workload.batch,
        d_model=model.d_model,
        d_ff=model.active_width,
        experts=lambda **split: layer_keywords(  # each layout's EP group on every candidate
            chip=chip,
            model=model,
            ep=along(layout.ep),
            etp=along(layout.etp),
            ep_pods=along(layout.ep_pods),
            **split,
        ),
        slice_shape=cluster.slice_shape,
        z=Z,
        pods=P,
        tp_pods=T,
        rings=rings,
        mx=layout.mx,
        my=layout.my,
        flops=chip.flops,
        ici_bw=chip.ici_bw,
        dcn_bw=chip.dcn_bw,
        heads=model.heads,
        kv_heads=model.kv_heads,
        x_ok=runs_on,
    )
    return split, per_microbatch


def _runs_on(workload, layout, X, *, Z, pods, per_microbatch, stage_chips, T) -> np.ndarray:
    """Which candidate X can run: whole sequences per replica, and X (with Y) holds the EP and
    CP groups and the schedule's microbatches."""
    per_layout = {  # each layout's values against every candidate X, along a last axis
        name: along(value)
        for name, value in dict(
            batch=workload.batch, pods=pods, microbatches=per_microbatch, ep=layout.ep
        ).items()
    }
    cp = along(cp_group(layout))
    if cp is None:
        cp = implied_cp(
            seq_len=workload.seq_len,
            x=X,
            **{k: per_layout[k] for k in ("batch", "pods", "microbatches")},
        )
    ok = runs(
        model=workload.model,
        seq_len=workload.seq_len,
        x=X,
        y=stage_chips // X * T,
        z=1,
        virtual_stages=1,
        etp=along(layout.etp),
        cp=cp,
        cp_kind=along(layout.cp_kind),
        cp_pods=along(layout.cp_pods),
        ep_pods=along(layout.ep_pods),
        **per_layout,
    )
    # microbatches (or their sequences) given split each replica's whole sequences evenly
    # (default ones do)
    given = layout.microbatches is not None or layout.microbatch_seqs is not None
    whole = ok["whole"] if given else True
    # the schedule's microbatches are placed before any CP is implied: CP as given, or 1
    staged = _schedule_runs_on(
        layout, workload, Z, X, pods, 1 if layout.cp is None else along(cp_group(layout))
    )
    return ok["sequences"] & ok["experts"] & ok["context"] & whole & staged


def _schedule_runs_on(layout: Layout, workload: Workload, Z, X, P, cp) -> np.ndarray:
    """Whether the schedule can run on each candidate X: the microbatches given, or some count of
    whole sequences a replica's share splits into (``fewest_whole``; DualPipe's m ≥ 2Z)."""
    if Z == 1 or layout.microbatch_seqs is not None:
        return np.asarray(True)
    if layout.microbatches is not None or workload.seq_len is None:
        m = default_microbatches(layout, Z)
        return schedule_runs(schedule=along(layout.schedule), stages=Z, microbatches=along(m))
    shape = np.broadcast_shapes(np.shape(X), np.shape(cp), np.shape(along(layout.schedule)))
    flat = [np.broadcast_to(a, shape).ravel() for a in (X, cp, along(layout.schedule))]
    found = fewest_whole(workload=workload, x=flat[0], z=np.full(flat[0].shape, Z), pods=P,
                         cp=flat[1], schedule=flat[2])  # fmt: skip
    share = workload.batch * flat[1] / (workload.seq_len * flat[0] * P)
    whole = np.isclose(share, np.round(share), rtol=1e-9, atol=0)
    # a part share: at most a sequence a microbatch, one fewer for an even count
    most = np.floor(share).astype(np.int64)
    part = schedule_runs(schedule=flat[2], stages=Z, microbatches=most) | schedule_runs(
        schedule=flat[2], stages=Z, microbatches=np.maximum(most - 1, 1)
    )
    return np.where(whole, found > 0, part).reshape(shape)


def cp_group(layout: Layout):
    """CP's group as given, in all the pods it spans (MODEL.md §B.13); None where CP is implied.

    Parameters
    ----------
    layout : Layout
        The layout as asked for: its ``cp`` (a pod's) and ``cp_pods``.

    Returns
    -------
    cp : np.ndarray or None
        cp·cp_pods per layout, or None.
    """
    return None if layout.cp is None else np.asarray(layout.cp) * layout.cp_pods


def along(value):
    """A layout's value against every candidate split, along a last axis (None stays None).

    Parameters
    ----------
    value : array_like, optional
        A layout's field, one value or one per layout; None stays None.

    Returns
    -------
    value : np.ndarray or None
        ``value`` with a last axis of length one, to broadcast against the candidates.
    """
    return None if value is None else np.asarray(value)[..., None]


def _no_split(workload, split: dict, stage_chips: int, P, T, per_microbatch, cp) -> Exception:
    """The refusal of a batch too small for any split: the smallest data axis a legal split of
    this slice has (TP dividing the heads, X and Y sharing at most two axes, CP dividing it) sets
    what is needed: a whole sequence for each replica of CP chips (None: the most CP chips the
    axis and the sequence allow, a power of two dividing both)."""
    smallest = next(
        (
            X
            for X in sorted(set(split_candidates(stage_chips)[0].tolist()))
            if np.all(best_split(**{**split, "x_ok": lambda candidates, X=X: candidates <= X})[0])
        ),
        None,
    )
    if cp is None and smallest is not None:
        shared = math.gcd(smallest, T)
        cp = shared & -shared  # the largest power of two dividing both
    replicas = None if smallest is None else smallest // cp
    unit = "token" if workload.seq_len is None else f"sequence of {T}"
    got = f"{float(np.min(workload.batch)):,.6g}"
    if smallest is None:
        heads = workload.model.heads
        return refuse(
            "batch",
            f"split by a TP degree the model's {heads} heads allow on this slice: none"
            " does (use pipeline stages or another slice)",
            got,
        )
    need = replicas * int(np.max(P)) * T * float(per_microbatch)
    return refuse(
        "batch",
        f"at least {need:,.0f} tokens: the smallest data axis of a legal split of this slice is"
        f" {smallest:,} chips, {replicas:,} replicas per pod"
        + (f" of {cp} CP chips" if cp > 1 else "")
        + f", each needing a whole {unit} per microbatch (or use pipeline stages, more context"
        " parallelism to split each sequence (--cp), or another order of the slice's axes)",
        got,
    )
