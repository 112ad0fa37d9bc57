"""The one observer that evaluates a scenario for the widgets.

``Analysis.of(scenario)`` is shared by every widget bound to that scenario: it recomputes once
per change (``Scenario.revision``) and publishes the results as traits, which the views follow.
Its ``estimate`` is ``scenario.estimate()`` itself; the memory bars are ``compare_strategies``
of the same values, as ``estimate --json`` lists them; the roofline's curves are the chapter's
token-level model of the same layouts over a grid of batches. A failure keeps the last results
on screen and sets ``error``.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass

import numpy as np
from traitlets import Dict, HasTraits, Instance, Unicode

from ..cost import Estimate, Layout, compare_strategies, evaluate, split_candidates
from ..cost.mesh import axis_rings, role_layout, span_axes
from ..cost.nodes import node_spans
from ..text.explain import group_places, layout_name
from .scenario import Scenario

GRID_POINTS = 256
NAMES = {"dp": "DP", "fsdp": "FSDP", "tp": "TP", "fsdp+tp": "FSDP+TP"}


@dataclass(frozen=True, eq=False)
class RooflineData:
    """Per-layer times over a grid of global batches, for every strategy (SPEC A.3, A.10).

    ``comm[curve][pass]``: "fwd" is the forward pass's communication; "both" is the binding
    pass's communication scaled to the whole layer, T_math · max(T_comm/T_math per pass), so it
    crosses ``compute["both"]`` exactly where the strategy turns compute-bound. NaN where a
    strategy moves nothing in that pass.
    """

    batch: np.ndarray
    compute: dict
    comm: dict
    labels: dict
    crossover: dict  # curve -> smallest compute-bound batch (inf: never)
    current_curve: str
    current_batch: float
    current: dict  # pass -> (compute, communication) at the current batch [s]

    def compute_at(self, batch, passes: str = "both"):
        """The compute line at any batch (it is proportional to the batch)."""
        per_token = self.compute[passes][0] / self.batch[0]
        return np.asarray(batch, dtype=float) * per_token


@dataclass(frozen=True, eq=False)
class MemoryData:
    """The busiest chip's peak of each strategy at the current batch [bytes] (SPEC E)."""

    strategies: tuple
    labels: tuple
    parts: np.ndarray  # rows: BAR_PARTS; a column per strategy
    hbm_bytes: float
    limit_bytes: float  # the share of HBM a layout may fill (SPEC B.8)
    current: str
    runs: tuple = ()  # per strategy: False where it cannot run here (its bar is empty)
    stages: tuple = ()  # per strategy: its busiest stage, "stage 1 of 4" ("" with one stage)

    @property
    def totals(self):
        return self.parts.sum(axis=0)


@dataclass(frozen=True, eq=False)
class MeshData:
    """How the current layout sits on the slice (SPEC A.1, A.7)."""

    slice_shape: tuple
    shares: tuple  # per slice axis, outermost first: its (X, Y, Z) factors
    x: int
    y: int
    z: int
    pods: int
    mx: float
    my: float
    wrap_x: bool
    wrap_y: bool
    splits: tuple  # every legal (X, Y) of one pipeline stage, Y ascending
    places: tuple  # where X and Y sit, in words
    gpu: bool  # a GPU cluster: the axes are nodes and GPUs per node

    @property
    def chips(self) -> int:
        return math.prod(self.slice_shape) * self.pods


class Analysis(HasTraits):
    """Estimates, roofline and memory of one scenario, recomputed when it changes."""

    scenario = Instance(Scenario)
    estimate = Instance(Estimate, allow_none=True)  # the scenario's own layout
    strategies = Dict()  # strategy -> Estimate of its default layout, or the error saying why it cannot run
    roofline = Instance(RooflineData, allow_none=True)
    memory = Instance(MemoryData, allow_none=True)
    mesh = Instance(MeshData, allow_none=True)
    error = Unicode("")

    _shared = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, scenario: Scenario) -> Analysis:
        """The analysis every widget of this scenario shares."""
        if scenario not in cls._shared:
            cls._shared[scenario] = cls(scenario=scenario)
        return cls._shared[scenario]

    def __init__(self, scenario: Scenario):
        super().__init__(scenario=scenario)
        scenario.observe(self._recompute, "revision")
        self._recompute()

    def _recompute(self, change=None) -> None:
        try:
            current, strategies, roofline, memory, mesh = evaluate_scenario(self.scenario)
        except ValueError as err:  # the scenario validated, so this is a bug; keep the last view
            self.error = f"Could not evaluate this scenario: {err}"
            return
        with self.hold_trait_notifications():
            self.strategies, self.roofline, self.memory, self.mesh = strategies, roofline, memory, mesh
            self.estimate, self.error = current, ""


def evaluate_scenario(s: Scenario):
    """(current estimate, {strategy: estimate or error}, RooflineData, MemoryData, MeshData)."""
    cluster, workload, layout, options = s.values()
    current = evaluate(cluster, workload, layout, options)
    strategies = compare_strategies(cluster, workload, layout, options)
    strategies[current.strategy] = current
    return current, strategies, _roofline(s, current), _memory(s, strategies), _mesh(s, current)


def batch_grid(batch: float, chips: int = 1) -> np.ndarray:
    """Global batches for the curves: 1e4 to 1e9 tokens, widened to hold ``batch``, and at
    least a token per chip (no layout runs on less)."""
    lo, hi = max(min(1e4, batch / 10), chips), max(1e9, batch * 10)
    return np.logspace(math.log10(lo), math.log10(hi), GRID_POINTS)


def _roofline(s: Scenario, current: Estimate) -> RooflineData:
    """The chapter's per-layer times over a grid of batches, token by token (no sequences): each
    strategy's own layout, the split in use held fixed, and the best split re-chosen per batch."""
    cluster, workload, layout, options = s.values()
    grid = batch_grid(s.batch, int(current.chips))
    tokens = dataclasses.replace(workload, batch=grid, seq_len=None, tokens=None)
    # One microbatch: the per-layer times and crossovers do not depend on it, and a token per data
    # replica is then enough for every batch of the grid (4·Z microbatches refuse its small end).
    base = Layout(z=current.z, virtual_stages=layout.virtual_stages, schedule=layout.schedule, microbatches=1)
    layouts = {name: dataclasses.replace(base, strategy=name) for name in ("dp", "fsdp", "tp")}
    layouts["optimal"] = dataclasses.replace(base, strategy="fsdp+tp")
    held = dataclasses.replace(base, strategy=current.strategy, x=int(current.x), y=int(current.y), zero=current.zero)
    if layout.axis_roles is not None:  # whole axes by hand: the curve sits where the roles put the groups
        held = dataclasses.replace(held, x=None, y=None, z=None, axis_roles=layout.axis_roles)
    layouts[current.strategy] = held
    # The per-layer times do not depend on the step: a measured step, which only some batches of
    # the grid could reach, must not refuse the curves; nor attention FLOPs, which need the
    # sequences this token-level grid does not have.
    options = dataclasses.replace(options, measured_step_time=None, attention_flops=False)
    curves = {}
    for name, own in layouts.items():
        try:
            curves[name] = evaluate(cluster, tokens, own, options)
        except ValueError:  # this strategy cannot run here (too few heads for its TP): no curve
            continue
    now = current.layer
    compute = {"fwd": _full(now.math[0], now), "both": _full(now.t_math, now)}
    grid_compute = curves[current.strategy].layer
    comm = {name: _comm(e.layer) for name, e in curves.items()}
    crossover = {name: float(np.min(e.crossover_batch)) for name, e in curves.items()}
    labels = {name: NAMES[name] for name in ("dp", "fsdp", "tp")}
    labels["optimal"] = "FSDP+TP, best split"
    if current.strategy == "fsdp+tp":
        labels["fsdp+tp"] = layout_name(current).split(", ")[0]
    if s.pods > 1:
        dcn = _full(grid_compute.t_math * grid_compute.comm_ratio("dcn"), grid_compute)
        comm["dcn"] = {"fwd": np.full(dcn.shape, np.nan), "both": dcn}
        crossover["dcn"] = s.pods * float(current.critical_tokens_per_pod)
        labels["dcn"] = f"DCN ({s.pods} pods)"
    mine = _comm(now)
    return RooflineData(
        batch=grid, compute={"fwd": _full(grid_compute.math[0], grid_compute), "both": _full(grid_compute.t_math,
                                                                                            grid_compute)},
        comm=comm, labels=labels, crossover=crossover, current_curve=current.strategy, current_batch=float(s.batch),
        current={p: (float(compute[p]), float(mine[p])) for p in ("fwd", "both")},
    )  # fmt: skip


def _comm(t) -> dict:
    """Per pass: "fwd" the forward's traffic; "both" the binding pass's, scaled to the layer."""
    fwd = _full(np.maximum(t.x[0], t.y[0]), t)
    scaled = _full(t.t_math * np.maximum(t.comm_ratio("x"), t.comm_ratio("y")), t)
    return {"fwd": np.where(fwd > 0, fwd, np.nan), "both": np.where(scaled > 0, scaled, np.nan)}


def _full(values, t) -> np.ndarray:
    """Traffic that does not depend on the batch comes back as a scalar: spread it over the grid."""
    return np.broadcast_to(values, t.t_math.shape)


def _mesh(s: Scenario, e: Estimate) -> MeshData:
    rings = axis_rings(slice_shape=s.slice_shape, pod_shape=s.hardware.pod_shape, rule=s.hardware.wraparound)
    if s.axis_roles:
        span = role_layout(slice_shape=s.slice_shape, roles=s.axis_roles, rings=rings)[3]
    elif s.hardware.is_gpu:
        hw = s.hardware
        span = node_spans(
            slice_shape=s.slice_shape, x=int(e.x), y=int(e.y), z=e.z, nvlink_bw=hw.ici_bw, nic_bw=hw.scaleout_bw
        )
    else:
        span = span_axes(slice_shape=s.slice_shape, x=int(e.x), y=int(e.y), z=e.z, rings=rings)
    X, Y = split_candidates(math.prod(s.slice_shape) // e.z)
    return MeshData(
        slice_shape=s.slice_shape, shares=tuple(tuple(int(f) for f in axis) for axis in span.shares),
        x=int(e.x), y=int(e.y), z=e.z, pods=s.pods, mx=float(e.mx), my=float(e.my),
        wrap_x=bool(e.wrap_x), wrap_y=bool(e.wrap_y), splits=tuple(zip(X.tolist(), Y.tolist())),
        places=tuple(group_places(e)), gpu=s.hardware.is_gpu,
    )  # fmt: skip


def _memory(s: Scenario, strategies: dict) -> MemoryData:
    """One bar per strategy that can run; one that cannot is an empty bar whose label says so."""
    parts = np.array([[_bar_part(e, kinds) for e in strategies.values()] for kinds in BAR_PARTS.values()])
    labels = tuple(
        layout_name(e).split(", ")[0] if isinstance(e, Estimate) else f"{NAMES[n]}: cannot run"
        for n, e in strategies.items()
    )  # fmt: skip
    return MemoryData(
        strategies=tuple(strategies), labels=labels, parts=parts, hbm_bytes=s.hardware.hbm_bytes,
        limit_bytes=s.fits_below * s.hardware.hbm_bytes, current=s.strategy,
        runs=tuple(isinstance(e, Estimate) for e in strategies.values()),
        stages=tuple(_stage(e) for e in strategies.values()),
    )  # fmt: skip


# The memory bar's parts, each the sum of the peak's parts (SPEC E.1) it stands for.
BAR_PARTS = {
    "weights": ("weights",), "gradients": ("grads",), "optimizer state": ("optimizer",),
    "activations": ("activations", "working_set"), "logits": ("logits",), "buffers": ("buffers", "overhead"),
    "allocator": ("allocator",),
}  # fmt: skip


def _stage(e) -> str:
    """The busiest stage, briefly: "stage 1 of 4"; "" with one stage, or where it cannot run."""
    if not isinstance(e, Estimate) or int(np.max(e.z)) == 1:
        return ""
    return f"stage {int(e.peak.stage) + 1} of {int(np.max(e.z))}"


def _bar_part(e, kinds) -> float:
    return sum(float(getattr(e.peak, k)) for k in kinds) if isinstance(e, Estimate) else 0.0
