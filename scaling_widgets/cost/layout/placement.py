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

import numpy as np

from ..ground.records import record
from ..ground.refusals import refuse
from ..hardware.mesh import MeshSpan, role_layout, span_axes
from ..hardware.nodes import node_spans
from ..strategies import BEST, STRATEGIES
from ..transformer.exactness import Exactness
from ..values import Cluster, Layout, Workload
from .feasible import implied_cp, possible, stages
from .split_choice import best_legal_split, cp_group, default_microbatches, layout_rings


@record(eq=False)
class Placement:
    """X, Y, Z, the microbatches m and CP of a layout, and how X and Y sit on the slice."""

    x: np.ndarray
    y: np.ndarray  # TP's group, in all the pods it spans
    z: int | np.ndarray  # the stages, in all the pods a pipeline spans
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
    cluster : Cluster
        The chips: the chip, one pod's slice and P, the pods.
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length.
    layout : Layout
        The layout, checked (``feasible.together``).
    exact : Exactness
        The MODEL.md §B.7 corrections, for the best split when one is sought.

    Returns
    -------
    placement : Placement
        X, Y, Z, the microbatches m, and the axes (TPU) or NVLink multiples (GPU) X and Y span.

    Raises
    ------
    InputError
        For a layout that cannot be placed or run (``feasible.possible``).

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies; the split) and §A.7 (where the groups sit).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism.
    """
    # P: the data replicas over DCN, each pod or each group of pods a pipeline spans (§B.10)
    chip, shape, P = cluster.chip, cluster.slice_shape, cluster.replicas(layout)
    rings = layout_rings(cluster, layout)
    x, y, z, span = layout.x, layout.y, layout.z, None
    if layout.axis_roles is not None:
        x, y, z, span = role_layout(slice_shape=shape, roles=layout.axis_roles, rings=rings)
    in_pod = 1 if z is None else z
    stage_chips, leftover = divmod(math.prod(shape), in_pod)
    if np.any(leftover):
        raise refuse(
            "z", f"a number of pipeline stages dividing the slice's {math.prod(shape)} chips", z
        )
    Z = in_pod * layout.pp_pods  # the stages, each pod's Z in each of the pods a pipeline spans
    # before a split is sought for them
    stages(model=workload.model, z=Z, given=layout)
    if x is None and y is None and STRATEGIES[layout.strategy].on == "x+y":
        x, y = best_legal_split(cluster, workload, layout, exact, in_pod, stage_chips, rings)
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
            slice_shape=shape, x=X, y=Y, z=in_pod, nvlink_bw=chip.ici_bw, nic_bw=chip.scaleout_bw
        )
    elif span is None:
        span = span_axes(slice_shape=shape, x=X, y=Y, z=in_pod, rings=rings)
    Y = Y * layout.tp_pods  # TP's group, Y in each of the pods it spans (MODEL.md §B.11)
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
        schedule=layout.schedule,
        cp_pods=layout.cp_pods,
        ep_pods=layout.ep_pods,
    )
    M_X = span.mx if layout.mx is None else np.asarray(layout.mx, dtype=float)
    M_Y = span.my if layout.my is None else np.asarray(layout.my, dtype=float)
    return Placement(x=X, y=Y, z=Z, microbatches=m, cp=cp, span=span, mx=M_X, my=M_Y)


def _cp(workload: Workload, layout: Layout, X, P, m) -> np.ndarray:
    """CP as given, or the smallest that gives each replica whole sequences of its microbatches
    (or of ``microbatch_seqs`` sequences each)."""
    if layout.cp is not None:  # the group in all the pods it spans (MODEL.md §B.13)
        return cp_group(layout)
    per_microbatch = m if layout.microbatch_seqs is None else layout.microbatch_seqs
    return implied_cp(
        batch=workload.batch, seq_len=workload.seq_len, x=X, pods=P, microbatches=per_microbatch
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
