"""Where a layout's groups sit: X, Y, Z, the microbatches, and the axes they span (MODEL.md §A.3,
§A.7).

``place`` turns a checked ``Layout`` into numbers: DP and FSDP put a stage's chips on X, TP on
Y; FSDP + TP without ``x``/``y`` takes the split the evaluation chose (``split_choices``: the
legal ones, TP dividing the heads and data axes that keep whole sequences per replica), or where
none was chosen the chapter's (``best_split``); ``axis_roles`` give whole axes to the groups. Then
``feasible.possible`` refuses what cannot run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..refusals import refuse
from ..search.split import best_split, legal_splits, split_candidates
from ..strategies import BEST, STRATEGIES
from ..transformer.exactness import Exactness
from ..transformer.experts import layer_keywords
from ..values import Cluster, Layout, Workload
from .feasible import implied_cp, possible, runs, stages
from .mesh import MeshSpan, axis_rings, role_layout, span_axes
from .nodes import node_spans


@dataclass(frozen=True, eq=False)
class Placement:
    """X, Y, Z, the microbatches m and CP of a layout, and how X and Y sit on the slice."""

    x: np.ndarray
    y: np.ndarray
    z: int | np.ndarray
    microbatches: np.ndarray
    cp: np.ndarray  # as given, or the smallest that gives whole sequences (``implied_cp``)
    span: MeshSpan
    mx: np.ndarray  # axes (TPU) or NVLink multiples (GPU) the X group spans; the override if given
    my: np.ndarray

    def __repr__(self):
        return f"Placement(shape={np.shape(self.x)})"


def place(cluster: Cluster, workload: Workload, layout: Layout, exact: Exactness) -> Placement:
    """The placement of a checked layout; raises ``InputError`` for one that cannot run.

    Parameters
    ----------
    cluster, workload, layout : the checked values
    exact : the MODEL.md §B.7 corrections, for the best split when one is sought

    Returns
    -------
    placement : Placement
        X, Y, Z, the microbatches m, and the axes (TPU) or NVLink multiples (GPU) X and Y span.

    Raises
    ------
    InputError
        For a layout that cannot be placed or run (``feasible.possible``).
    """
    chip, shape, P = cluster.chip, cluster.slice_shape, cluster.pods
    rings = _rings(cluster, layout)
    x, y, z, span = layout.x, layout.y, layout.z, None
    if layout.axis_roles is not None:
        x, y, z, span = role_layout(slice_shape=shape, roles=layout.axis_roles, rings=rings)
    Z = 1 if z is None else z
    stage_chips, leftover = divmod(math.prod(shape), Z)
    if np.any(leftover):
        raise refuse(
            "z", f"a number of pipeline stages dividing the slice's {math.prod(shape)} chips", z
        )
    # before a split is sought for them
    stages(model=workload.model, z=Z, virtual_stages=layout.virtual_stages)
    if x is None and y is None and STRATEGIES[layout.strategy].on == "x+y":
        x, y = _best_legal_split(cluster, workload, layout, exact, Z, stage_chips, rings)
    X, Y = _strategy_split(layout.strategy, stage_chips, x, y)
    m = default_microbatches(layout, Z, workload, X, P)
    cp = _cp(workload, layout, X, P, m)
    if layout.microbatch_seqs is not None:
        # as many microbatches of at least that size as each replica (CP chips sharing
        # sequences) gets
        per_replica = workload.batch / workload.seq_len / (X * P) * cp
        m = np.maximum(np.floor(per_replica / layout.microbatch_seqs), 1).astype(np.int64)
    if span is None and chip.is_gpu:
        span = node_spans(
            slice_shape=shape, x=X, y=Y, z=Z, nvlink_bw=chip.ici_bw, nic_bw=chip.scaleout_bw
        )
    elif span is None:
        span = span_axes(slice_shape=shape, x=X, y=Y, z=Z, rings=rings)
    possible(
        model=workload.model,
        seq_len=workload.seq_len,
        batch=workload.batch,
        pods=P,
        x=X,
        y=Y,
        z=Z,
        virtual_stages=layout.virtual_stages,
        microbatches=m,
        given=layout,
        ep=layout.ep,
        etp=layout.etp,
        cp=cp,
        cp_kind=layout.cp_kind,
    )
    M_X = span.mx if layout.mx is None else np.asarray(layout.mx, dtype=float)
    M_Y = span.my if layout.my is None else np.asarray(layout.my, dtype=float)
    return Placement(x=X, y=Y, z=Z, microbatches=m, cp=cp, span=span, mx=M_X, my=M_Y)


def _cp(workload: Workload, layout: Layout, X, P, m) -> np.ndarray:
    """CP as given, or the smallest that gives each replica whole sequences of its microbatches
    (or of ``microbatch_seqs`` sequences each)."""
    if layout.cp is not None:
        return np.asarray(layout.cp)
    per_microbatch = m if layout.microbatch_seqs is None else layout.microbatch_seqs
    return implied_cp(
        batch=workload.batch, seq_len=workload.seq_len, x=X, pods=P, microbatches=per_microbatch
    )


def default_microbatches(layout: Layout, Z, workload: Workload | None = None, X=None, P=1):
    """The microbatches asked for, else 4·Z under pipelining (a small bubble) and 1 without: the
    chapter's, without sequences; with them the evaluation chooses (``fastest_microbatches``).
    Given the workload and X, where a replica's share is whole sequences S, the largest count up
    to that which splits S into whole microbatches, gcd(4·Z, S); where it is part sequences, at
    most one microbatch a sequence."""
    if layout.microbatches is not None:
        return np.asarray(layout.microbatches)
    m = np.where(np.asarray(Z) > 1, 4 * np.asarray(Z), 1).astype(np.int64)
    if workload is None or workload.seq_len is None:
        return m
    cp = 1 if layout.cp is None else np.asarray(layout.cp)
    share = workload.batch * cp / (workload.seq_len * np.asarray(X) * P)
    S = np.round(share)
    whole = np.isclose(share, S, rtol=1e-9, atol=0) & (S >= 1)
    # a share of part sequences (the chapter's average): at most a sequence a microbatch
    fewer = np.where(share >= 1, np.minimum(m, np.floor(share)), m).astype(np.int64)
    return np.where(whole, np.gcd(m, np.maximum(S, 1).astype(np.int64)), fewer)


def _best_legal_split(cluster, workload, layout, exact, Z, stage_chips, rings):
    """``best_split`` among the splits that can run; refuse the batch when none can."""
    split, per_microbatch = _split_keywords(cluster, workload, layout, exact, Z, rings)
    x, y = best_split(**split)
    if np.any(x == 0):
        cp = None if layout.cp is None else int(np.max(layout.cp))
        T, P = workload.seq_len or 1, cluster.pods
        raise _no_split(workload, split, stage_chips, P, T, np.max(per_microbatch), cp)
    return x, y


def split_choices(
    cluster: Cluster, workload: Workload, layout: Layout, exact: Exactness
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The splits a layout without ``x`` and ``y`` may take, for the evaluation to choose from:
    X and Y along a last axis, one row per layout, an illegal candidate replaced by the chapter's
    pick (``best_split``); None when the layout's split is given, or none is legal (``place``
    then says why).

    Returns
    -------
    choices : tuple of np.ndarray, or None
        X and Y [chips], shape (..., candidates), and whether each is the chapter's pick.
    """
    if not (_split_chosen(layout) and np.ndim(layout.z) == 0):
        return None
    Z = 1 if layout.z is None else layout.z
    if math.prod(cluster.slice_shape) % Z:
        return None
    split = _split_keywords(cluster, workload, layout, exact, Z, _rings(cluster, layout))[0]
    X, Y, legal, pick = legal_splits(**split)
    if not legal.any(axis=-1).all():
        return None
    chapters = np.arange(len(X)) == np.asarray(pick)[..., None]
    return np.where(legal, X, X[pick][..., None]), np.where(legal, Y, Y[pick][..., None]), chapters


def _rings(cluster: Cluster, layout: Layout) -> tuple:
    """Which slice axes wrap around: the chip's rule, or every one or none as the layout says."""
    if layout.wraparound is not None:
        return (bool(layout.wraparound),) * len(cluster.slice_shape)
    chip, shape = cluster.chip, cluster.slice_shape
    return axis_rings(slice_shape=shape, pod_shape=chip.pod_shape, rule=chip.wraparound)


def _split_chosen(layout: Layout) -> bool:
    """Whether the split is ours to choose: FSDP + TP with neither x, y nor axis roles given."""
    given = layout.x is not None or layout.y is not None or layout.axis_roles is not None
    return not given and STRATEGIES[layout.strategy].on == "x+y"


def _split_keywords(cluster, workload, layout, exact, Z, rings) -> tuple[dict, np.ndarray]:
    """``legal_splits``' keywords for this layout, and the sequences a replica needs a
    microbatch."""
    if np.ndim(Z):
        raise refuse("z", "one number when the split is chosen for you (no x or y)", layout.z)
    chip, model, P = cluster.chip, workload.model, cluster.pods
    per_microbatch = layout.microbatch_seqs or np.asarray(default_microbatches(layout, Z))

    stage_chips = math.prod(cluster.slice_shape) // Z

    def runs_on(X):  # whole sequences per replica, and X (with Y) holds the EP and CP groups
        per_layout = {  # each layout's values against every candidate X, along a last axis
            name: along(value)
            for name, value in dict(
                batch=workload.batch, pods=P, microbatches=per_microbatch, ep=layout.ep
            ).items()
        }
        cp = along(layout.cp)
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
            y=stage_chips // X,
            z=1,
            virtual_stages=1,
            etp=along(layout.etp),
            cp=cp,
            cp_kind=along(layout.cp_kind),
            **per_layout,
        )
        # microbatches (or their sequences) given split each replica's whole sequences evenly
        # (default ones do)
        given = layout.microbatches is not None or layout.microbatch_seqs is not None
        whole = ok["whole"] if given else True
        return ok["sequences"] & ok["experts"] & ok["context"] & whole

    split = dict(
        exact=exact,
        node_size=chip.node_size,
        scaleout_bw=chip.scaleout_bw,
        batch=workload.batch,
        d_model=model.d_model,
        d_ff=model.active_width,
        experts=lambda **split: layer_keywords(  # each layout's EP group on every candidate
            chip=chip, model=model, ep=along(layout.ep), etp=along(layout.etp), **split
        ),
        slice_shape=cluster.slice_shape,
        z=Z,
        pods=P,
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


def along(value):
    """A layout's value against every candidate split, along a last axis (None stays None)."""
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


def _strategy_split(strategy: str, stage_chips: int, x, y):
    """X and Y of a strategy: DP/FSDP put a stage's chips on X, TP on Y, FSDP + TP splits them."""
    # the group left with one chip
    forced = {"x": ("y", 1), "y": ("x", 1)}.get(STRATEGIES[strategy].on)
    given = {"x": x, "y": y}
    if forced is not None:
        name, one = forced
        if given[name] is not None and np.any(np.asarray(given[name]) != one):
            raise refuse(name, f"1 for strategy {strategy!r} (use {BEST!r})", given[name])
        given[name] = one
    for name, other in (("x", "y"), ("y", "x")):
        if given[name] is None:
            share = np.asarray(given[other])
            if np.any(stage_chips % share):
                raise refuse(
                    other, f"a divisor of the {stage_chips} chips of a stage", given[other]
                )
            given[name] = stage_chips // share
    X, Y = np.asarray(given["x"], dtype=np.int64), np.asarray(given["y"], dtype=np.int64)
    if np.any(X * Y != stage_chips):
        if (
            forced is not None
        ):  # the strategy set one group to 1: the other, the one given, is wrong
            name = "y" if forced[0] == "x" else "x"
            raise refuse(
                name, f"the {stage_chips} chips of a stage for strategy {strategy!r}", given[name]
            )
        for name, other in (("y", "x"), ("x", "y")):  # a group that divides no split is to mend
            if np.any(stage_chips % np.asarray(given[name])):
                share = np.asarray(given[other]).ravel()[0]
                fits = f": {name} = {stage_chips // share} with {other} = {share}"
                raise refuse(
                    name,
                    f"a divisor of the {stage_chips} chips of a stage"
                    + (fits if stage_chips % share == 0 else ""),
                    given[name],
                )
        Y = np.asarray(given["y"]).ravel()[0]
        fits = f": x = {stage_chips // Y} here" if stage_chips % Y == 0 else ""
        raise refuse(
            "x",
            f"the whole data axis, its CP and EP chips included (frameworks' DP x CP), such that"
            f" x·y is the {stage_chips} chips of a stage{fits}",
            f"x={x!r}, y={y!r}",
        )
    return X, Y
