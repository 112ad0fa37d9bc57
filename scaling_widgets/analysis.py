"""The one observer that evaluates a scenario for the widgets.

``Analysis.of(scenario)`` is shared by every widget bound to that scenario: it recomputes once
per change (``Scenario.revision``) and publishes the results as traits, which the views follow.
A failure keeps the last results on screen and sets ``error``.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
from traitlets import Dict, HasTraits, Instance, Unicode

from .cost import STRATEGIES, Estimate, Exactness, estimate, pick, split_candidates
from .cost.mesh import axis_rings, role_layout, span_axes
from .cost.nodes import node_spans
from .report import group_places
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
    """Memory per chip of each strategy at the current batch [bytes] (SPEC A.4)."""

    strategies: tuple
    labels: tuple
    parts: np.ndarray  # rows: weights, grads, optimizer, activations, overhead; a column per strategy
    hbm_bytes: float
    limit_bytes: float  # the share of HBM a layout may fill (SPEC B.8)
    current: str

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
    strategies = Dict()  # strategy -> Estimate of its default layout
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
            current, strategies, roofline, memory, mesh = evaluate(self.scenario)
        except ValueError as err:  # the scenario validated, so this is a bug; keep the last view
            self.error = f"Could not evaluate this scenario: {err}"
            return
        with self.hold_trait_notifications():
            self.strategies, self.roofline, self.memory, self.mesh = strategies, roofline, memory, mesh
            self.estimate, self.error = current, ""


def evaluate(s: Scenario):
    """(current estimate, {strategy: estimate}, RooflineData, MemoryData, MeshData) of a scenario."""
    grid = batch_grid(s.batch)
    batches = np.concatenate([[s.batch], grid])  # index 0: the current batch; then the curves
    common = dict(
        model=s.model, chip=s.hardware, batch=batches, slice_shape=s.slice_shape, pods=s.pods,
        microbatches=s.microbatches, mfu=s.mfu, tokens=s.tokens, precision=s.precision, seq_len=s.seq_len,
        attention_flops=s.attention_flops, remat=s.remat, measured_step_time=s.measured_step_time,
        exact=Exactness(ring_factor=s.ring_factor, halve_without_wrap=s.halve_without_wrap, latency=s.latency),
        overhead_bytes=s.overhead_bytes, fits_below=s.fits_below, schedule=s.schedule,
        virtual_stages=s.virtual_stages, sequence_parallel=s.sequence_parallel,
    )  # fmt: skip
    own, z = None, s.z
    if s.axis_roles:
        own = estimate(strategy=s.strategy, axis_roles=s.axis_roles, **common)
        z = own.z
    elif s.strategy == "fsdp+tp" and not s.optimal_split:
        own = estimate(strategy=s.strategy, x=s.x, y=s.y, z=z, **common)
    elif s.zero is not None:
        own = estimate(strategy=s.strategy, zero=s.zero, z=z, **common)
    defaults = {name: estimate(strategy=name, z=z, **common) for name in STRATEGIES}
    own = own or defaults[s.strategy]
    # FSDP + TP at the split in use now, held fixed over the whole grid.
    fixed = own.strategy == "fsdp+tp" and (s.axis_roles or not s.optimal_split)
    both = own if own.strategy == "fsdp+tp" else defaults["fsdp+tp"]
    held = own if fixed else estimate(strategy="fsdp+tp", x=_first(both.x), y=_first(both.y), z=z, **common)
    now = {name: pick(e, 0) for name, e in defaults.items()}
    now[own.strategy] = current = pick(own, 0)
    curves = {name: defaults[name] for name in ("dp", "fsdp", "tp")}
    curves.update({own.strategy: own, "fsdp+tp": held, "optimal": defaults["fsdp+tp"]})
    return current, now, _roofline(s, curves, own), _memory(s, now), _mesh(s, current)


def batch_grid(batch: float) -> np.ndarray:
    """Global batches for the curves: 1e4 to 1e9 tokens, widened to hold ``batch``."""
    lo, hi = min(1e4, batch / 10), max(1e9, batch * 10)
    return np.logspace(math.log10(lo), math.log10(hi), GRID_POINTS)


def _roofline(s: Scenario, curves: dict, own: Estimate) -> RooflineData:
    layer = own.layer
    compute = {"fwd": _full(layer.math[0], layer), "both": _full(layer.t_math, layer)}
    comm = {}
    for name, e in curves.items():
        t = e.layer
        fwd = _full(np.maximum(t.x[0], t.y[0]), t)
        scaled = _full(t.t_math * np.maximum(t.comm_ratio("x"), t.comm_ratio("y")), t)
        comm[name] = {"fwd": np.where(fwd > 0, fwd, np.nan), "both": np.where(scaled > 0, scaled, np.nan)}
    crossover = {name: float(np.min(e.crossover_batch)) for name, e in curves.items()}
    held = curves["fsdp+tp"]
    labels = {name: NAMES[name] for name in ("dp", "fsdp", "tp")}
    labels["fsdp+tp"] = f"FSDP {_first(held.x)} x TP {_first(held.y)}"
    labels["optimal"] = "FSDP+TP, best split"
    if s.pods > 1:
        dcn = _full(layer.t_math * layer.comm_ratio("dcn"), layer)
        comm["dcn"] = {"fwd": np.full(dcn.shape, np.nan), "both": dcn}
        crossover["dcn"] = s.pods * float(own.critical_tokens_per_pod)
        labels["dcn"] = f"DCN ({s.pods} pods)"
    name = own.strategy  # index 0 is the current batch, the rest the grid
    return RooflineData(
        batch=own.batch[1:], compute={p: v[1:] for p, v in compute.items()},
        comm={c: {p: v[1:] for p, v in by_pass.items()} for c, by_pass in comm.items()},
        labels=labels, crossover=crossover, current_curve=name, current_batch=float(s.batch),
        current={p: (float(compute[p][0]), float(comm[name][p][0])) for p in ("fwd", "both")},
    )  # fmt: skip


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


def _memory(s: Scenario, now: dict) -> MemoryData:
    parts = np.array(
        [
            [float(getattr(e.memory, k)) for e in now.values()]
            for k in ("params", "grads", "optimizer", "activations", "overhead")
        ]
    )
    labels = tuple(NAMES[n] if n != "fsdp+tp" else f"FSDP {int(e.x)} x TP {int(e.y)}" for n, e in now.items())
    return MemoryData(
        strategies=tuple(now), labels=labels, parts=parts, hbm_bytes=s.hardware.hbm_bytes,
        limit_bytes=s.fits_below * s.hardware.hbm_bytes, current=s.strategy,
    )  # fmt: skip


def _first(values) -> int:
    """The value at the current batch (index 0), whether or not it varies over the grid."""
    return int(np.ravel(values)[0])
