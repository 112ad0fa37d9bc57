"""The layout planner: every legal layout of a cluster, evaluated in vectorized calls, ranked.

A layout is
- a factorization of a pod's chips into data/FSDP X, tensor Y (a power of two that divides the
  attention heads) and pipeline Z (a divisor, at most one stage per layer);
- its mapping onto the slice: the order in which the groups take the slice's axes (``span_axes``
  gives TP the last axis first). Every distinct order of a TPU slice's axes is tried, and two
  orders that give a split the same spans and rings count once; a GPU cluster's order is fixed,
  TP inside a node first (``node_spans``);
- a ZeRO stage (0 to 3; 3 only without microbatches), a recompute policy (each the frameworks
  offer: none, selective, full; the chapter's "checkpoints" is a memory count, not a policy they
  run), a pipeline schedule (every one of ``schedules/``, with each count of virtual stages it
  runs) and a number of microbatches (1 to 32 per stage);
- for a mixture of experts, expert parallelism: 1 and every power of two that divides both the
  experts and X (MODEL.md §D.2);
- context parallelism where a data replica would otherwise get less than a sequence a
  microbatch: the smallest power of two CP that gives it one, as a ring (MODEL.md §D.3). More CP
  only adds traffic, and the ring moves what the all-gather moves but hides it.

The layouts (``layouts.py``) are built as flat arrays and evaluated by one ``evaluate`` call per
axis order (one on a GPU cluster, at most six on a 3D slice); there is no Python loop per layout.
Layouts that do not fit are dropped; the rest are ranked by step time, recompute charged
(MODEL.md §B.1).
A layout that cannot run (``feasible.runs``) is never evaluated. Each row is a ``Layout``:
``Plan.estimate(rank)`` evaluates it by the same path as every other estimate.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..evaluation.evaluate import cp_implied, evaluate
from ..evaluation.result import Estimate
from ..ground.checks import Choice, Whole
from ..ground.records import record
from ..ground.refusals import refuse
from ..hardware.slices import slice_for
from ..layout import feasible
from ..schedules import NAMES
from ..strategies import BEST
from ..transformer.counts import FRAMEWORK_REMAT
from ..transformer.recompute import REMAT_CHOICE
from ..values import VALUES, Cluster, Layout, Options, Workload, as_asked, split_keywords
from .layouts import (
    HELD,
    KNOBS,
    evaluate_order,
    fixed_degrees,
    only,
    placements,
    product,
    ranking,
    splits,
    tied_with_fastest,
)

if TYPE_CHECKING:
    from ..hardware.chip import Chip
    from ..transformer.shapes import Model, Precision

# What belongs to one layout set by hand, not to a plan: its groups, spans, microbatch size and
# measured step, and TP, EP or CP across pods (never faster: MODEL.md §B.11 to §B.13).
BY_HAND = ("strategy", "axis_roles", "mx", "my", "microbatch_seqs", "measured_step_time",
           "tp_pods", "ep_pods", "cp_pods")  # fmt: skip
# what makes a layout the user's own (a measured step is of one): given any, it is evaluated as
# given; given none, ``estimate`` is the plan's first row (what of HELD is given, held)
CHOSEN = tuple(k for k in (*KNOBS, *BY_HAND) if k not in HELD)
# named arguments
WHERE = ("model", "chip", "batch", "seq_len", "slice_shape", "pods", "mfu", "precision")
# Every other field of the four values a plan takes as it is, for every layout it evaluates.
OPTIONS = tuple(
    f for v in VALUES for f in v.__dataclass_fields__ if f not in (*KNOBS, *BY_HAND, *WHERE)
)
# one for every layout
ONE_VALUE = ("batch", "pods", "mfu", "tokens", "overhead_bytes", "fits_below")


@record(eq=False)
class Plan:
    """Every evaluated layout (flat arrays, one entry each) and the ranking of those that fit."""

    layouts: dict  # name -> array, one entry per layout: the KNOBS and "axis_order"
    axis_orders: tuple  # the slice shapes tried, its axes in each order; "axis_order" indexes it
    step_time: np.ndarray  # seconds, recompute charged
    fits: np.ndarray
    memory: np.ndarray  # the busiest chip's peak, reserved [bytes] (MODEL.md §E)
    order: np.ndarray  # indices of the layouts that fit, best first
    tied: np.ndarray  # whether each layout ties the fastest (``tied_with_fastest``)
    margin: np.ndarray  # the share of its headroom each keeps (``Estimate.margin``)
    band: float  # a step within band times the fastest ties it; 1: no ties (MODEL.md §F.3)
    cluster: Cluster  # what was planned for: the slice in the order given
    workload: Workload
    options: Options
    base: Layout  # what every row shares (sequence parallelism, rings)

    def __repr__(self) -> str:
        return f"Plan({len(self.step_time)} layouts, {len(self.order)} fit)"

    def __len__(self) -> int:
        return len(self.order)

    def place(self, e: Estimate) -> int:
        """Where a layout of this plan's scenario would rank among those that fit, 1 the first,
        by the plan's own order (a plan ranked by its step): in the tie, by its margin, then its
        step; after it, by its step.

        Parameters
        ----------
        e : Estimate
            The layout, evaluated on the plan's scenario.

        Returns
        -------
        rank : int
            One more than the rows that come before it.
        """
        steps, margins = self.step_time[self.order], self.margin[self.order]
        tied, t, m = self.tied[self.order], float(e.step_time), float(e.margin)
        if self.band > 1 and t <= self.band * steps.min():  # it ties the fastest
            ahead = tied & ((margins > m) | ((margins == m) & (steps < t)))
        else:
            ahead = tied | (steps < t)
        return int(ahead.sum()) + 1

    @property
    def ties(self) -> int:
        """How many of the first rows tie the fastest, the best among them first: 0 where the
        steps are not predicted."""
        return int(self.tied.sum())

    def knobs(self, index: int | np.integer) -> dict[str, Any]:
        """Evaluated layout ``index`` (in evaluation order) as keywords, slice_shape included.

        Parameters
        ----------
        index : int
            The layout's position in ``layouts``, in evaluation order.

        Returns
        -------
        knobs : dict of str to Any
            "slice_shape" (the slice in the order the layout uses) and each of ``KNOBS``;
            "etp" None where the experts split over TP as the rest (the default).
        """
        knobs = {k: self.layouts[k][index].item() for k in KNOBS}
        if knobs["etp"] == knobs["y"]:  # the experts split over TP as the rest: the default
            knobs["etp"] = None
        return {"slice_shape": self.axis_orders[self.layouts["axis_order"][index]], **knobs}

    def layout(self, rank: int) -> dict[str, Any]:
        """The knobs of the layout at ``rank`` (0 is the best), slice_shape in the order it uses.

        Parameters
        ----------
        rank : int
            The layout's place among those that fit, 0 the best.

        Returns
        -------
        knobs : dict of str to Any
            As ``knobs`` gives them: "slice_shape" and each of ``KNOBS``.
        """
        return self.knobs(self.order[rank])

    def values(self, rank: int) -> tuple[Cluster, Workload, Layout, Options]:
        """The four values ``evaluate`` takes for the layout at ``rank``.

        Parameters
        ----------
        rank : int
            The layout's place among those that fit, 0 the best.

        Returns
        -------
        cluster : Cluster
            The plan's cluster, its slice in the order the layout uses.
        workload : Workload
            The plan's workload.
        layout : Layout
            The plan's shared layout with the layout's knobs.
        options : Options
            The plan's options.
        """
        return self.values_at(self.order[rank])

    def values_at(self, index: int | np.integer) -> tuple[Cluster, Workload, Layout, Options]:
        """The four values of evaluated layout ``index`` (in evaluation order).

        Parameters
        ----------
        index : int
            The layout's position in ``layouts``, in evaluation order.

        Returns
        -------
        cluster : Cluster
            The plan's cluster, its slice in the order the layout uses.
        workload : Workload
            The plan's workload.
        layout : Layout
            The plan's shared layout with the layout's knobs.
        options : Options
            The plan's options.
        """
        knobs = self.knobs(index)
        cluster = dataclasses.replace(self.cluster, slice_shape=knobs.pop("slice_shape"))
        return cluster, self.workload, dataclasses.replace(self.base, **knobs), self.options

    def estimate(self, rank: int) -> Estimate:
        """The full estimate of the layout at ``rank``: the very numbers of its row.

        Parameters
        ----------
        rank : int
            The layout's place among those that fit, 0 the best.

        Returns
        -------
        estimate : Estimate
            ``evaluate``'s estimate of the layout (times [s], memory [bytes], batch [tokens]).
        """
        return evaluate(*self.values(rank))


def plan(
    *,
    model: Model,
    chip: Chip,
    batch: float,
    seq_len: int,
    slice_shape: tuple[int, ...] | None = None,
    chips: int | None = None,
    pods: int = 1,
    mfu: float | None = None,
    precision: Precision | None = None,
    ep: int | None = None,
    etp: int | None = None,
    cp: int | None = None,
    cp_kind: str | None = None,
    remat: str | None = None,
    schedule: str | None = None,
    max_tp: int | None = None,
    max_pp: int | None = None,
    rank_by: str = "step",
    **options: Any,
) -> Plan:
    """Enumerate, evaluate and rank every legal layout (see the module's docstring).

    ``slice_shape`` (a TPU slice, or (nodes, GPUs per node)) or ``chips`` (GPUs) sets the pod;
    ``options`` pass on to ``estimate``: any of ``OPTIONS`` (the knobs of a layout are searched).
    ``ep``, ``etp`` and ``cp`` fix those degrees instead of searching them (``etp`` 1 folds EP
    over TP x X; left out, both ways are tried), ``cp_kind`` how CP passes keys
    and values (default "ring"), ``remat`` the recompute policy (default: each the frameworks
    offer, ``FRAMEWORK_REMAT``), ``schedule`` the pipeline schedule (default: each the stack
    runs). ``max_tp`` and ``max_pp`` cap TP and the pipeline stages. ``rank_by`` "wall" ranks by the
    whole run's wall clock (with ``tokens``; on one cluster chip-hours, energy and cost rank alike).

    Parameters
    ----------
    model : Model
        The model: its D, F, L, N_h, K, H, V and, for a mixture of experts, its experts.
    chip : Chip
        The chip: a preset (``presets.HARDWARE``) or one of your own.
    batch : float
        B, the global batch, every sequence together [tokens]; one number.
    seq_len : int
        T, the sequence length [tokens]; one number.
    slice_shape : tuple of int, optional
        One pod's slice, its axis lengths [chips]: a TPU slice, or (nodes, GPUs per node); every
        order of a TPU slice's axes is tried, the one given first. None: ``chips`` sets it, or
        else the chip's default slice.
    chips : int, optional
        N, the GPUs of one pod [chips], placed on nodes (``gpu_slice``); GPUs only. None:
        ``slice_shape`` sets the pod.
    pods : int, default 1
        P, the pods the data-center network joins, each holding the same slice.
    mfu : float, optional
        η, the share of peak the chips sustain on the FLOPs they do. None: the step is predicted
        term by term (MODEL.md §C).
    precision : Precision, optional
        The bytes a parameter and an activation (MODEL.md §B.2). None: ``Workload``'s default,
        the chapter's 10 bytes a parameter.
    ep : int, optional
        The expert-parallel degree EP, held for every layout. None: searched.
    etp : int, optional
        The routed experts' tensor parallelism, held: 1 folds EP over TP x X. None: both ways
        are tried.
    cp : int, optional
        The context-parallel degree CP, held for every layout. None: searched.
    cp_kind : str, optional
        How CP passes keys and values, one of ``CP_KINDS``. None: "ring".
    remat : str, optional
        The recompute policy, one of ``REMAT_POLICIES``. None: each the frameworks offer,
        ``FRAMEWORK_REMAT``.
    schedule : str, optional
        The pipeline schedule, one of ``SCHEDULES``. None: each the stack runs.
    max_tp : int, optional
        The largest tensor degree Y tried. None: no cap.
    max_pp : int, optional
        The most pipeline stages Z tried. None: no cap.
    rank_by : str, default "step"
        "step" ranks by the step time [s]; "wall" by the whole run's wall clock [s].
    **options
        Any of ``OPTIONS`` by name, passed on to ``estimate`` for every layout.

    Returns
    -------
    plan : Plan
        Every evaluated layout, and those that fit ranked best first (``Plan.layout(rank)``,
        ``Plan.estimate(rank)``).

    Raises
    ------
    ValueError
        Saying what would be needed when no layout fits.
    InputError
        Naming the field, for a value out of range, a keyword that is not of ``OPTIONS``, an
        array where the plan needs one number, or when no layout the planner tries can run
        (the EP, expert TP or CP degree held, else the batch).

    References
    ----------
    .. [1] docs/MODEL.md §C (the planner), §A.3 (the strategies and the split), §A.6
       (pipeline), §B.3 (ZeRO stages), §B.4 (recompute), §B.6 (pipeline schedules), §D.2 and
       §D.3 (expert and context parallelism) and §H (the wall clock).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism; Pipelining; Scaling Between Pods.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> p = plan(model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=3e6, seq_len=2048,
    ...          slice_shape=(16, 16, 16), mfu=0.4)
    >>> best = p.layout(0)
    >>> best["x"], best["y"], best["z"], p.estimate(0).compute_bound.item()
    (1024, 4, 1, True)
    """
    cluster, workload, base, opts = plan_values(
        model, chip, batch, seq_len, slice_shape, chips, pods, mfu, precision, options
    )
    limits = {
        name: Whole()(name, v)
        for name, v in (("max_tp", max_tp), ("max_pp", max_pp))
        if v is not None
    }
    held = held_knobs(ep, etp, cp, cp_kind, remat, schedule)
    orders, evaluated = evaluated_layouts(cluster, workload, base, opts, held, limits)
    if not evaluated:
        raise _what_would_run(held, (cluster, workload, base, opts), limits, batch)
    merged = {k: np.concatenate([e[k] for e in evaluated]) for k in evaluated[0]}
    if not merged["fits"].any():
        raise _what_would_fit(merged, cluster, workload, opts)
    layouts = {k: merged[k] for k in (*KNOBS, "axis_order")}
    by = Choice(("step", "wall"))("rank_by", rank_by)
    return Plan(
        layouts,
        orders,
        merged["step_time"],
        merged["fits"],
        merged["memory"],
        ranking(merged, by),
        tied_with_fastest(merged, by),
        merged["margin"],
        float(merged["band"][0]),
        cluster,
        workload,
        opts,
        base,
    )


def held_knobs(ep, etp, cp, cp_kind, remat, schedule) -> dict[str, Any]:
    """What a plan holds as given rather than searches, checked: EP, expert TP, CP and its kind
    (``fixed_degrees``), the recompute policies and the pipeline schedules it tries.

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
    remat : str, optional
        The recompute policy, one of ``REMAT_POLICIES``. None: each of ``FRAMEWORK_REMAT``.
    schedule : str, optional
        The pipeline schedule, one of ``SCHEDULES``. None: the stack's (``stack_schedules``).

    Returns
    -------
    held : dict of str to Any
        "ep", "etp", "cp", "cp_kind" (``fixed_degrees``), "remat" (a tuple of policies) and
        "schedules" (a tuple of one name, or None): ``evaluate_order``'s keywords.

    Raises
    ------
    InputError
        Naming the field, for a degree that is not a whole number or a name not of its choices.
    """
    held = {**fixed_degrees(ep, etp, cp, cp_kind), "remat": _policies(remat)}
    held["schedules"] = None if schedule is None else (Choice(NAMES)("schedule", schedule),)
    return held


def evaluated_layouts(
    cluster: Cluster,
    workload: Workload,
    base: Layout,
    options: Options,
    held: dict,
    limits: dict,
    batches: np.ndarray | None = None,
) -> tuple[tuple, list[dict]]:
    """Every layout of the cluster that can run, evaluated: one ``evaluate_order`` call per order
    of the slice's axes (an order whose placements all repeat an earlier's has none). With
    ``batches``, every layout at each of them (a "batch" column, the strategy map's).

    Parameters
    ----------
    cluster : Cluster
        The chips, checked: the chip, the slice in the user's order, and the pods.
    workload : Workload
        What is trained, checked: the model, the batch B [tokens], its sequences.
    base : Layout
        The checked layout that holds what every layout shares.
    options : Options
        How the numbers are read, checked.
    held : dict
        What the plan holds rather than searches (``held_knobs``).
    limits : dict
        "max_tp" and "max_pp" where given: the largest Y and Z tried (``splits``).
    batches : np.ndarray, optional
        Global batches B [tokens], each layout evaluated at every one. None: at
        ``workload.batch``.

    Returns
    -------
    orders : tuple
        The slice's shape with its axes in each order tried, the user's first.
    evaluated : list of dict
        Each order's layouts (``evaluate_order``), the orders with none left out.
    """
    shape = cluster.slice_shape
    # The user's order first, so that among equal layouts theirs wins (the sort below is stable).
    orders = (
        (shape,) if cluster.chip.is_gpu else tuple(dict.fromkeys(itertools.permutations(shape)))
    )
    placed = placements(orders, splits(math.prod(shape), workload.model, **limits), cluster.chip)
    if batches is not None:  # each placement at every batch, the batches varying fastest
        placed = product(placed, {"batch": batches})
    every = [
        evaluate_order(
            dataclasses.replace(cluster, slice_shape=order),
            workload,
            base,
            options,
            only(placed, placed["axis_order"] == i),
            **held,
            max_pp=limits.get("max_pp"),
        )
        for i, order in enumerate(orders)
    ]
    return orders, [e for e in every if e]


def _policies(remat: str | None) -> tuple:
    """The recompute policies to try: the one given, else each the frameworks offer."""
    return FRAMEWORK_REMAT if remat is None else (REMAT_CHOICE("remat", remat),)


def plan_keywords(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options
) -> dict[str, Any]:
    """The keywords of ``plan`` for the cluster and the workload of these values, with their
    options: a plan for a scenario (its layout's knobs are what the plan chooses).

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and the pods.
    workload : Workload
        What is trained: the model, the batch B [tokens], its sequences.
    layout : Layout
        The scenario's layout; only its fields of ``OPTIONS`` are kept.
    options : Options
        How the numbers are read.

    Returns
    -------
    keywords : dict of str to Any
        The fields of ``WHERE`` and ``OPTIONS`` by name, as the values hold them.
    """
    held = {**vars(cluster), **as_asked(workload), **vars(layout), **vars(options)}
    return {name: held[name] for name in (*WHERE, *OPTIONS)}


def chooses_layout(given) -> bool:
    """Whether the fields given set a layout of the user's own (``CHOSEN``): else ``estimate``
    takes the plan's first row (``scenario_plan``).

    Parameters
    ----------
    given : iterable of str
        The names of the fields given.

    Returns
    -------
    chooses : bool
        True when any of them is one of ``CHOSEN``.
    """
    return any(name in CHOSEN for name in given)


def as_planned(e: Estimate, held: dict) -> Estimate:
    """A plan's row as ``estimate`` reports it: a CP the plan chose (none held) is the batch's
    doing, said as ``evaluate`` says a CP it implies (``cp_implied``).

    Parameters
    ----------
    e : Estimate
        The plan's row, evaluated.
    held : dict of str to Any
        The knobs given, by name.

    Returns
    -------
    estimate : Estimate
        ``e``, its CP said as implied where the plan chose it.
    """
    return dataclasses.replace(e, cp_implied=cp_implied(held.get("cp"), e.layout.cp))


def scenario_plan(values: tuple, held: dict, **limits) -> Plan:
    """The plan of a scenario (``plan_keywords``), the knobs of ``HELD`` that ``held`` gives held
    and the rest searched; its first row is ``estimate``'s layout where the user chooses none
    (MODEL.md §C).

    Parameters
    ----------
    values : tuple
        The scenario's four values, ``Cluster``, ``Workload``, ``Layout`` and ``Options``.
    held : dict of str to Any
        The knobs given, by name; those of ``HELD`` are held.
    **limits
        ``plan``'s other keywords: ``max_tp``, ``max_pp``, ``rank_by``.

    Returns
    -------
    plan : Plan
        As ``plan`` returns it.
    """
    keywords = plan_keywords(*values)
    keywords.update({name: held.get(name) for name in HELD})  # what is not given is searched
    return plan(**keywords, **limits)


def plan_values(model, chip, batch, seq_len, slice_shape, chips, pods, mfu, precision, options):
    """The four values a plan is for, checked: one batch, sequence length, count of pods and MFU.

    Parameters
    ----------
    model : Model
        The model.
    chip : Chip
        The chip.
    batch : float
        B, the global batch [tokens].
    seq_len : int
        T, the sequence length [tokens].
    slice_shape : tuple of int, optional
        One pod's slice [chips]. None: ``chips`` sets it, or else the chip's default slice.
    chips : int, optional
        N, the GPUs of one pod [chips], placed on nodes (``gpu_slice``); GPUs only. None:
        ``slice_shape`` sets the pod.
    pods : int
        P, the pods the data-center network joins.
    mfu : float, optional
        η, the MFU given. None: the step is predicted.
    precision : Precision, optional
        The bytes a parameter and an activation. None: ``Workload``'s default.
    options : dict of str to Any
        The other fields, each of ``OPTIONS``.

    Returns
    -------
    cluster : Cluster
        The chips.
    workload : Workload
        What is trained.
    base : Layout
        What every layout shares, its strategy ``BEST``.
    options : Options
        How the numbers are read.

    Raises
    ------
    InputError
        Naming the field: a keyword not of ``OPTIONS``, no ``seq_len``, ``chips`` no slice has, an
        array where the plan needs one number, a value out of range, or values that cannot run
        together (``feasible.together``).
    """
    for name in options:
        if name not in OPTIONS:
            raise refuse(
                name,
                f"left out: plan searches {', '.join(KNOBS)} itself; of estimate's other options it"
                f" takes {', '.join(OPTIONS)}",
                repr(options[name]),
            )
    if seq_len is None:
        raise refuse("seq_len", "one number to plan for", None)
    if chips is not None:
        chips = Whole()("chips", chips)
        slice_shape = slice_for(chip, chips)
    keywords = dict(
        model=model,
        chip=chip,
        batch=batch,
        seq_len=seq_len,
        slice_shape=slice_shape,
        pods=pods,
        mfu=mfu,
        **options,
        **({} if precision is None else {"precision": precision}),
    )
    values = split_keywords(keywords)
    for value in values:
        for name in ONE_VALUE:
            if np.ndim(getattr(value, name, None)):
                got = keywords.get(name, getattr(value, name))  # as given, not as rounded
                raise refuse(name, "one number to plan for", np.asarray(got).tolist())
    cluster, workload, base, opts = values
    feasible.together(*values)
    return cluster, workload, dataclasses.replace(base, strategy=BEST), opts


def _what_would_run(held: dict, values: tuple, limits: dict, batch) -> ValueError:
    """The refusal when no layout the planner tries can run: the EP, expert TP or CP degree it
    was held to, if the layouts run without it; else the batch."""
    for name in ("cp", "ep", "etp"):
        if held[name] is not None and evaluated_layouts(*values, {**held, name: None}, limits)[1]:
            return refuse(
                name,
                "a degree some layout the planner tries can run with (dividing its data axis, and"
                " for CP the sequence and, under Ulysses, each TP shard's KV heads), or left out to"
                " be searched",
                held[name],
            )
    return refuse(
        "batch",
        "enough for some layout the planner tries to run: a whole sequence per data replica and"
        " microbatch, with 1 to 32 microbatches per stage",
        batch,
    )


def _what_would_fit(
    merged: dict, cluster: Cluster, workload: Workload, options: Options
) -> ValueError:
    """The refusal when no layout fits: what the leanest needs, and how many more chips would do."""
    chip, model, pods = cluster.chip, workload.model, cluster.pods
    need, overhead = float(merged["memory"].min()), float(options.overhead_bytes)
    limit = options.fits_below * chip.usable_hbm
    # overhead does not shrink
    more = math.ceil((need - overhead) / (limit - overhead)) if overhead < limit else 0
    return ValueError(
        f"no layout of {model.name} fits on {math.prod(cluster.slice_shape) * pods:,} {chip.name} "
        "chips"
        + (f" ({pods} pods)" if pods > 1 else "")
        + f": the leanest needs {need / 1e9:.1f} GB per chip of {limit / 1e9:.0f} GB"
        + (
            f", and the runtime overhead alone is {overhead / 1e9:.0f} GB"
            if overhead >= limit
            else ", too close to call within the peak's uncertainty (tight): more chips"
            " would leave room (or a smaller batch, or a leaner precision)"
            if need <= limit
            else f". About {more}x the chips would do (or a smaller batch, or a leaner precision)"
        )
    )
