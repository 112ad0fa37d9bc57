"""The layouts a plan evaluates: every split of a pod's chips, on every order of a TPU slice's
axes, with every ZeRO stage, recompute policy, schedule and count of microbatches, built as flat
arrays and evaluated one ``evaluate`` call per axis order (MODEL.md §A.3, §A.6, §B.3, §B.4, §D)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..evaluation.evaluate import evaluate
from ..ground.checks import Choice, Whole
from ..hardware.mesh import axis_rings, span_axes
from ..layout import feasible
from ..layout.microbatches import FEWEST_WHOLE, PER_STAGE, microbatch_counts
from ..schedules import SCHEDULES
from ..stacks import REGISTRY
from ..step.profiles import default_stack
from ..transformer.context import CP_KINDS
from ..transformer.counts import FRAMEWORK_REMAT, REMAT_POLICIES
from ..values import Cluster, Layout, Options, Workload, computed

if TYPE_CHECKING:
    from ..hardware.chip import Chip
    from ..transformer.shapes import Model

ZERO_STAGES = (0, 1, 2, 3)
SCHEDULES_TRIED = tuple((name, v) for name, s in SCHEDULES.items() for v in s.virtual_stages)
# The knobs of a layout the plan chooses; recompute, EP (and whether it folds over TP), CP, the
# CP kind and the schedule unless given.
SEARCHED = ("x", "y", "z", "zero", "virtual_stages", "microbatches", "fsdp_pods", "pp_pods")
HELD = ("remat", "ep", "etp", "cp", "cp_kind", "schedule")
KNOBS = SEARCHED + HELD


def splits(
    chips: int, model: Model, max_tp: int | None = None, max_pp: int | None = None
) -> dict[str, np.ndarray]:
    """Every (X, Y, Z): Z divides the chips and is at most the layers (and ``max_pp``), Y a power
    of two dividing the rest and the heads (at most ``max_tp``), X what is left.

    Parameters
    ----------
    chips : int
        N, the chips of one pod's slice [chips].
    model : Model
        The model: its layers L and query heads N_h.
    max_tp : int, optional
        The largest tensor degree Y tried. None: no cap.
    max_pp : int, optional
        The most pipeline stages Z tried. None: no cap.

    Returns
    -------
    splits : dict of str to np.ndarray
        "x", "y" and "z", one entry per split: X, Y [chips] and Z [stages], X·Y·Z = N.

    References
    ----------
    .. [1] docs/MODEL.md §C (the planner: the factorizations it tries) and §A.3 (the split: TP a
       power of two that divides the heads).
    """
    Z = np.arange(1, min(chips, model.layers) + 1)
    Z = Z[chips % Z == 0]
    Y = 2 ** np.arange(int(math.log2(chips & -chips)) + 1)
    Z, Y = (a.ravel() for a in np.meshgrid(Z, Y, indexing="ij"))
    legal = ((chips // Z) % Y == 0) & (model.heads % Y == 0)
    legal &= (Y <= (max_tp or Y)) & (Z <= (max_pp or Z))
    Z, Y = Z[legal], Y[legal]
    return {"x": chips // (Y * Z), "y": Y, "z": Z}


def knob_combinations(
    remat: tuple = FRAMEWORK_REMAT, schedules: tuple = tuple(SCHEDULES)
) -> dict[str, np.ndarray]:
    """Every combination of ZeRO stage, recompute (``remat``: the policies tried), schedule (of
    ``schedules``, and 1F1B, which stands for one stage) and microbatches per stage.

    Parameters
    ----------
    remat : tuple of str, default FRAMEWORK_REMAT
        The recompute policies tried, names of ``REMAT_POLICIES``; by default each the frameworks
        offer: "none", "selective" and "full".
    schedules : tuple of str, default tuple(SCHEDULES)
        The pipeline schedules tried, names of ``SCHEDULES``, each with every count of virtual
        stages v it runs; 1F1B is added in any case, for one stage.

    Returns
    -------
    knobs : dict of str to np.ndarray
        "zero", "remat", "schedule", "virtual_stages" and "per_stage" (microbatches per stage),
        one entry per combination.

    References
    ----------
    .. [1] docs/MODEL.md §C (the planner: the knobs it tries), §B.3 (ZeRO stages), §B.4
       (recompute), §B.6 (pipeline schedules) and §A.6 (the microbatches).
    .. [2] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
       Models", SC 2020.
    .. [3] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
       MLSys 2023.
    """
    tried = [(s, v) for s, v in SCHEDULES_TRIED if s in schedules or s == "1f1b"]
    return product(
        {"zero": np.array(ZERO_STAGES)},
        {"remat": np.array(remat)},
        {
            "schedule": np.array([s for s, _ in tried]),
            "virtual_stages": np.array([v for _, v in tried]),
        },
        {"per_stage": np.array((*PER_STAGE, FEWEST_WHOLE))},
    )


def product(*tables: dict[str, np.ndarray], keep=None) -> dict[str, np.ndarray]:
    """Every combination of one row of each table (a dict of equal-length columns), as columns;
    with ``keep``, only those where ``keep(rows)`` holds, ``rows`` each combination's row of each
    table (an array a table), before any column is built.

    Parameters
    ----------
    *tables : dict of str to np.ndarray
        The tables, each a dict of equal-length columns, one row an entry.
    keep : callable, optional
        Takes ``rows``, an array of row indices with one row per table and one column per
        combination, and returns which combinations to keep (a boolean per combination). None:
        every combination.

    Returns
    -------
    table : dict of str to np.ndarray
        Every table's columns, one entry per combination, the last table's rows varying fastest.
    """
    sizes = [len(next(iter(t.values()))) for t in tables]
    rows = np.indices(sizes).reshape(len(sizes), -1)
    if keep is not None:
        rows = rows[:, keep(rows)]
    return {name: column[r] for t, r in zip(tables, rows) for name, column in t.items()}


def placements(
    orders: Sequence[tuple[int, ...]], splits: dict[str, np.ndarray], chip: Chip
) -> dict[str, np.ndarray]:
    """Every (X, Y, Z) in every axis order, legal and distinct: on a TPU slice X and Y share at
    most two axes (the rule of ``best_split``), and two orders that give a split the same spans
    and rings are one placement to the cost model (the first order keeps it).

    Parameters
    ----------
    orders : sequence of tuple of int
        The slice's shape with its axes in each order tried [chips].
    splits : dict of str to np.ndarray
        "x", "y" and "z" (``splits``): X, Y [chips] and Z [stages], one entry per split.
    chip : Chip
        The chip: its pod and wraparound rule set the rings (a GPU cluster has one order).

    Returns
    -------
    placements : dict of str to np.ndarray
        "x", "y", "z" and "axis_order" (an index into ``orders``), one entry per placement.

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split: X and Y share at most two slice axes), §A.7 (where the
       groups sit, and the rings) and §C (the planner: every order of a TPU slice's axes).
    """
    if chip.is_gpu:
        return {**splits, "axis_order": np.zeros(len(splits["x"]), dtype=np.int64)}
    tables = []
    for i, order in enumerate(orders):
        rings = axis_rings(slice_shape=order, pod_shape=chip.pod_shape, rule=chip.wraparound)
        span = span_axes(slice_shape=order, rings=rings, **splits)
        spans = {
            k: np.broadcast_to(getattr(span, k), len(splits["x"]))
            for k in ("mx", "my", "wrap_x", "wrap_y")
        }
        table = {**splits, **spans, "axis_order": np.full(len(splits["x"]), i)}
        tables.append(only(table, span.shared_axes <= 2))
    placed = {k: np.concatenate([t[k] for t in tables]) for k in tables[0]}
    key = np.column_stack([placed[k] for k in ("x", "y", "z", "mx", "my", "wrap_x", "wrap_y")])
    first = np.sort(np.unique(key, axis=0, return_index=True)[1])
    return {k: placed[k][first] for k in (*splits, "axis_order")}


def only(table: dict[str, np.ndarray], keep: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of ``table`` (a dict of equal-length columns) where ``keep`` holds.

    Parameters
    ----------
    table : dict of str to np.ndarray
        The columns, of equal length.
    keep : np.ndarray
        The rows to keep: a boolean per row, or their indices.

    Returns
    -------
    table : dict of str to np.ndarray
        Each column indexed by ``keep``.
    """
    return {k: v[keep] for k, v in table.items()}


def evaluate_order(
    cluster: Cluster,
    workload: Workload,
    base: Layout,
    options: Options,
    placed: dict[str, np.ndarray],
    ep: int | None = None,
    etp: int | None = None,
    cp: int | None = None,
    cp_kind: str = "ring",
    remat: tuple = FRAMEWORK_REMAT,
    schedules: tuple | None = None,
    max_pp: int | None = None,
) -> dict[str, np.ndarray]:
    """One ``evaluate`` call over every layout that can run whose groups take the slice's axes in
    the order of ``cluster.slice_shape``.

    Parameters
    ----------
    cluster : Cluster
        The chips, checked: the chip, the slice with its axes in this order, and the pods.
    workload : Workload
        What is trained, checked: the model, the batch B [tokens], its sequences.
    base : Layout
        The checked layout that holds what every layout shares.
    options : Options
        How the numbers are read, checked.
    placed : dict of str to np.ndarray
        This order's placements (``placements``); with a "batch" column, each placement at its
        own global batch [tokens] (the strategy map's columns), else at ``workload.batch``.
    ep : int, optional
        The expert-parallel degree EP. None: searched.
    etp : int, optional
        The routed experts' tensor parallelism: 1 folds EP over TP x X, Y does not. None: both
        searched.
    cp : int, optional
        The context-parallel degree CP. None: searched.
    cp_kind : str, default "ring"
        How CP passes keys and values, one of ``CP_KINDS``.
    remat : tuple of str, default FRAMEWORK_REMAT
        The recompute policies tried (the frameworks' by default).
    schedules : tuple of str, optional
        The pipeline schedules tried. None: the stack's (``stack_schedules``).
    max_pp : int, optional
        The most pipeline stages a layout takes, in all the pods it spans. None: no cap.

    Returns
    -------
    layouts : dict of str to np.ndarray
        The ``KNOBS`` and "axis_order" of every layout that can run, one entry each, and its
        "step_time" [s], "fits", "memory" (the peak reserved) [bytes], "worst_ratio" and
        "crossover" [tokens], "mfu" and "wall" [s]; empty when none can run.

    References
    ----------
    .. [1] docs/MODEL.md §C (the planner), "Layouts that cannot run" (after §A.10), §A.6 (ZeRO-3
       only at one microbatch), §D.2 (EP, folded over TP or not) and §D.3 (CP chosen for you).
    """
    searched = dict(
        ep=ep, etp=etp, cp=cp, cp_kind=cp_kind, remat=remat, schedules=schedules, max_pp=max_pp
    )
    c, experts_tp = _candidates(cluster, workload, options, placed, **searched)
    if len(c["x"]):
        ran = _runs(c, at_batches(workload, c), cluster.pods, experts_tp, base)
        c = only(c, ran)
    if not len(c["x"]):
        return {}
    return _evaluated(c, cluster, at_batches(workload, c), base, options, experts_tp)


def _candidates(
    cluster, workload, options, placed, *, ep, etp, cp, cp_kind, remat, schedules, max_pp
):
    """Every placement with every knob and expert degree that may run by its own lights, its
    microbatches, expert TP and CP filled in; and the expert TP to evaluate (None: the default,
    where no layout folds EP over TP)."""
    pipelined = schedules or stack_schedules(cluster.chip, options)
    knobs, experts = knob_combinations(remat, pipelined), _expert_degrees(workload.model, ep, etp)
    one_stage, pipelines = knobs["schedule"] == "1f1b", np.isin(knobs["schedule"], pipelined)
    # each pipeline inside a pod, or across every count of pods that divides P (MODEL.md §B.10)
    spans = _dividing(int(cluster.pods))

    def may_run(rows):  # what each layout's placement, knobs and experts alone rule out
        y, k, f, s = placed["y"][rows[0]], rows[1], rows[2], spans[rows[3]]
        in_pod = placed["z"][rows[0]]
        z = in_pod * s  # the stages, in all the pods a pipeline spans
        # across pods, a stage a pod, as MaxText's dcn_pipeline runs beside ici_pipeline 1; at
        # most max_pp stages in all
        one_a_pod = ((s == 1) | (in_pod == 1)) & (z <= (max_pp or z))
        # One stage has no schedule to choose (1F1B stands for it); a stack pipelines with its
        # own schedules (none for a stack without pipelining).
        staged = np.where(z > 1, pipelines[k], one_stage[k])
        # ZeRO-3 would gather its weights again for every microbatch, which the cost model does
        # not charge (MODEL.md §A.6): it is offered at one microbatch, one stage.
        once = (knobs["zero"][k] < 3) | ((z == 1) & (knobs["per_stage"][k] == 1))
        # folded over TP of one chip, or EP of one, is the same layout as not folded
        folded = ~experts["folds"][f] | ((y > 1) & (experts["ep"][f] > 1))
        return staged & once & folded & one_a_pod

    c = product(placed, knobs, experts, {"pp_pods": spans}, keep=may_run)
    if not len(c["x"]):
        return c, None
    stages = {**c, "z": c["z"] * c["pp_pods"]}
    replicas = cluster.pods // c["pp_pods"]
    c["microbatches"], new = microbatch_counts(c.pop("per_stage"), stages, workload, replicas, cp)
    c = only(c, new)
    folds = c.pop("folds")
    c["etp"] = np.where(folds, 1, c["y"]) if etp is None else np.full(len(folds), etp)
    workload = at_batches(workload, c)
    minimal = feasible.implied_cp(
        batch=workload.batch,
        seq_len=workload.seq_len,
        x=c["x"],
        pods=cluster.pods // c["pp_pods"],
        microbatches=c["microbatches"],
    )
    c["cp"] = minimal if cp is None else np.full(len(c["x"]), cp)
    c["cp_kind"] = np.full(len(c["x"]), cp_kind)
    c = _across_pods(c, int(cluster.pods))
    # no layout folds (a dense model): the default, which the evaluation takes faster
    return c, (c["etp"] if etp is not None or folds.any() else None)


def _across_pods(c: dict, pods: int) -> dict:
    """Each ZeRO-3 candidate whose pipelines stay in a pod also with FSDP across every count of
    pods that divides P, as one group over the data-center network (MODEL.md §B.9); the others
    with every pod (or group of pods a pipeline spans) a replica."""
    shares = _dividing(pods)
    if len(shares) == 1:
        return {**c, "fsdp_pods": np.ones(len(c["x"]), dtype=np.int64)}
    shardable = (c["zero"] == 3) & (c["pp_pods"] == 1)
    return product(c, {"fsdp_pods": shares}, keep=lambda r: (shares[r[1]] == 1) | shardable[r[0]])


def _dividing(pods: int) -> np.ndarray:
    """Every count of pods that divides P: the pods one FSDP group or one pipeline may span."""
    return np.array([n for n in range(1, pods + 1) if pods % n == 0])


def _runs(c: dict, workload: Workload, pods, experts_tp, base: Layout) -> np.ndarray:
    """Which candidates can run together with the workload (``feasible.runs``, every rule), with
    what every layout shares (``base``: its pairing, the ends it counts as layers)."""
    ok = feasible.runs(
        model=workload.model,
        seq_len=workload.seq_len,
        batch=workload.batch,
        pods=pods // c["pp_pods"],  # the replicas, and the stages in all (MODEL.md §B.10)
        x=c["x"],
        y=c["y"],
        z=c["z"] * c["pp_pods"],
        virtual_stages=c["virtual_stages"],
        microbatches=c["microbatches"],
        ep=c["ep"],
        etp=experts_tp,
        cp=c["cp"],
        cp_kind=c["cp_kind"],
        schedule=c["schedule"],
        remat=c["remat"],
        ep_overlap=base.ep_overlap,
        ends_as_layers=base.ends_as_layers,
        first_stage_layers=base.first_stage_layers,
        last_stage_layers=base.last_stage_layers,
    )
    return np.logical_and.reduce(list(ok.values()))


def _evaluated(c: dict, cluster, workload, base, options, experts_tp) -> dict[str, np.ndarray]:
    """The candidates that run, evaluated in one call: their knobs and what ``plan`` ranks by."""
    knobs = {k: c[k] for k in KNOBS}
    if experts_tp is None:
        knobs["etp"] = None
    e = evaluate(cluster, workload, dataclasses.replace(base, **knobs), options)
    return {
        **c,
        "step_time": e.step_time,
        "fits": e.fits,
        "memory": e.peak.reserved,
        "worst_ratio": e.layer.worst_ratio,
        "crossover": e.crossover_batch,
        "margin": e.margin,
        "band": np.full(np.shape(e.step_time), e.tie_band),
        "mfu": e.mfu,
        # the whole run's wall clock (MODEL.md §H), with the tokens; the step without them
        "wall": e.step_time if e.run is None else e.run.wall,
    }


def at_batches(workload: Workload, layouts: dict[str, np.ndarray]) -> Workload:
    """The workload at each layout's own batch, where the layouts carry a "batch" column.

    Parameters
    ----------
    workload : Workload
        What is trained: the model, the batch B [tokens], its sequences.
    layouts : dict of str to np.ndarray
        The layouts' columns, one entry per layout; a "batch" column, where there is one, gives
        each layout's global batch [tokens].

    Returns
    -------
    workload : Workload
        ``workload`` with B one entry per layout [tokens]; ``workload`` itself without a "batch"
        column.
    """
    return computed(workload, batch=layouts["batch"]) if "batch" in layouts else workload


def stack_schedules(chip: Chip, options: Options) -> tuple:
    """The schedules the layouts' stack pipelines with: the stack asked for, else the chip's
    default one; every schedule for a profile of the user's own.

    Parameters
    ----------
    chip : Chip
        The chip, whose default stack (``default_stack``) counts when no stack is asked for.
    options : Options
        Its ``stack`` and ``profile``.

    Returns
    -------
    schedules : tuple of str
        Names of ``SCHEDULES``; none for a stack without pipelining.
    """
    if options.stack is None and options.profile is not None:
        return tuple(SCHEDULES)
    return REGISTRY[options.stack or default_stack(chip)].schedules


def fixed_degrees(
    ep: int | None, etp: int | None, cp: int | None, cp_kind: str | None
) -> dict[str, int | str | None]:
    """The EP, expert TP, CP and CP kind a plan is held to, checked (None: searched).

    Parameters
    ----------
    ep : int, optional
        The expert-parallel degree EP. None: searched.
    etp : int, optional
        The routed experts' tensor parallelism (1 folds EP over TP). None: searched.
    cp : int, optional
        The context-parallel degree CP. None: searched.
    cp_kind : str, optional
        How CP passes keys and values, one of ``CP_KINDS``. None: "ring".

    Returns
    -------
    degrees : dict of str to int, str or None
        "ep", "etp" and "cp", whole numbers or None; "cp_kind", "ring" unless given.

    Raises
    ------
    InputError
        Naming the field, for a degree that is not a whole number of at least 1 or a
        ``cp_kind`` not of ``CP_KINDS``.
    """
    fixed = {"cp_kind": Choice(CP_KINDS)("cp_kind", cp_kind or "ring")}
    for name, value in (("ep", ep), ("etp", etp), ("cp", cp)):
        fixed[name] = None if value is None else Whole()(name, value)
    return fixed


def _expert_degrees(model, ep: int | None, etp: int | None) -> dict:
    """EP as given, else 1 and for a mixture of experts every power of two that divides its
    experts; each taken from the data axis and, for a mixture of experts with ``etp`` not given,
    folded over TP ("folds")."""
    E = 1 if model.moe is None else model.moe.experts
    degrees = [2**k for k in range(int(math.log2(E & -E)) + 1)] if ep is None else [ep]
    folds = [False, True] if model.moe is not None and etp is None else [False]
    return product({"ep": np.array(degrees)}, {"folds": np.array(folds)})


def ranking(merged: dict, by: str = "step", cells: np.ndarray | None = None) -> np.ndarray:
    """The layouts that fit, best first (with ``cells``, an integer per layout: cell by cell, each
    cell's best first, as the strategy map ranks): first those that tie the fastest
    (``tied_with_fastest``), the one farthest from its limits first (``Estimate.margin``); then
    the shortest step (``by`` "wall": the shortest run on the wall clock, failures and
    checkpoints counted); then whole sequences on each chip (context parallelism only where it is
    faster); then compute-bound down to the smallest batch (best_split's rule), the least
    communication per compute; then less tensor parallelism, fewer stages, fewer microbatches,
    less recompute, less memory, the lower ZeRO stage.

    Parameters
    ----------
    merged : dict of str to np.ndarray
        The evaluated layouts' columns (``evaluate_order``'s, every order's joined), one entry
        per layout.
    by : str, default "step"
        What ranks first: "step", the step time, or "wall", the whole run's wall clock.
    cells : np.ndarray, optional
        The cell of each layout, an integer per layout (the strategy map's). None: one ranking
        of every layout.

    Returns
    -------
    order : np.ndarray
        Indices into ``merged`` of the layouts that fit, best first (cell by cell, with
        ``cells``).

    References
    ----------
    .. [1] docs/MODEL.md §C (the planner: its ties), §F.3 (when two steps tie), §A.3 (the
       split: the chapter's pick), §A.10 (the crossover batch), §C.7 (the strategy map, cell by
       cell) and §H (the wall clock).
    """
    tied = tied_with_fastest(merged, by, cells)
    keys = (
        merged["zero"],
        merged["memory"],
        _rank_of(merged["remat"], REMAT_POLICIES),
        merged["microbatches"],
        merged["z"],
        merged["y"],
        merged["worst_ratio"],
        merged["crossover"],
        merged["cp"] > 1,  # whole sequences first; among split ones, no count preferred
        merged["step_time"],
        *([merged["wall"]] if by == "wall" else []),
        np.where(tied, -merged["margin"], 0.0),  # the model cannot order them: the safer first
        ~tied,
        *([cells] if cells is not None else []),
    )
    fit = np.flatnonzero(merged["fits"])  # only those that fit are ranked
    return fit[np.lexsort([np.asarray(k)[fit] for k in keys])]


def tied_with_fastest(merged: dict, by: str = "step", cells: np.ndarray | None = None):
    """Which layouts tie the fastest that fits (of their cell, with ``cells``): those that fit
    whose step (``by`` "wall": wall clock) is within the tie band of the fastest's, the spread of
    the model's error on the ratio of two runs' steps (MODEL.md §F.3). The fastest ties itself.
    Steps not predicted (an MFU given) tie none: the chapter's own order stands.

    Parameters
    ----------
    merged : dict of str to np.ndarray
        The evaluated layouts' columns, "fits", "step_time", "wall" and "band" among them.
    by : str, default "step"
        What is compared: "step" or "wall".
    cells : np.ndarray, optional
        The cell of each layout, an integer per layout; None: one cell.

    Returns
    -------
    tied : np.ndarray of bool
        One per layout.
    """
    taken = np.asarray(merged["wall" if by == "wall" else "step_time"], dtype=float)
    cell = np.zeros(len(taken), dtype=np.int64) if cells is None else np.asarray(cells)
    fits = np.asarray(merged["fits"], dtype=bool)
    fastest = np.full(cell.max(initial=0) + 1, np.inf)
    np.minimum.at(fastest, cell[fits], taken[fits])
    band = np.asarray(merged["band"])
    return fits & (band > 1) & (taken <= fastest[cell] * band)


def _rank_of(values: np.ndarray, names) -> np.ndarray:
    """Each value's position in ``names``; one past the last for a name not among them (a
    framework's own recompute policy, held)."""
    names = np.asarray(names)
    sorter = np.argsort(names)
    at = sorter[np.minimum(np.searchsorted(names, values, sorter=sorter), len(names) - 1)]
    return np.where(names[at] == values, at, len(names))
