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

from .cost import STRATEGIES, Estimate, estimate, pick
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

    def compute_at(self, batch, passes: str = "both"):
        """The compute line at any batch (it is proportional to the batch)."""
        per_token = self.compute[passes][0] / self.batch[0]
        return np.asarray(batch, dtype=float) * per_token


@dataclass(frozen=True, eq=False)
class MemoryData:
    """Memory per chip of each strategy at the current batch [bytes] (SPEC A.4)."""

    strategies: tuple
    labels: tuple
    parts: np.ndarray  # rows: weights, grads, optimizer, activations; one column per strategy
    hbm_bytes: float
    current: str

    @property
    def totals(self):
        return self.parts.sum(axis=0)


class Analysis(HasTraits):
    """Estimates, roofline and memory of one scenario, recomputed when it changes."""

    scenario = Instance(Scenario)
    estimate = Instance(Estimate, allow_none=True)  # the scenario's own layout
    strategies = Dict()  # strategy -> Estimate of its default layout
    roofline = Instance(RooflineData, allow_none=True)
    memory = Instance(MemoryData, allow_none=True)
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
            current, strategies, roofline, memory = evaluate(self.scenario)
        except ValueError as err:  # the scenario validated, so this is a bug; keep the last view
            self.error = f"Could not evaluate this scenario: {err}"
            return
        with self.hold_trait_notifications():
            self.strategies, self.roofline, self.memory = strategies, roofline, memory
            self.estimate, self.error = current, ""


def evaluate(s: Scenario):
    """(current estimate, {strategy: estimate}, RooflineData, MemoryData) of a scenario."""
    grid = batch_grid(s.batch)
    batches = np.concatenate([[s.batch], grid])  # index 0: the current batch; then the curves
    common = dict(
        model=s.model, chip=s.hardware, batch=batches, slice_shape=s.slice_shape, pods=s.pods,
        microbatches=s.microbatches, mfu=s.mfu, tokens=s.tokens, precision=s.precision,
    )  # fmt: skip
    own, z = None, s.z
    if s.axis_roles:
        own = estimate(strategy=s.strategy, axis_roles=s.axis_roles, **common)
        z = own.z
    elif s.strategy == "fsdp+tp" and not s.optimal_split:
        own = estimate(strategy=s.strategy, x=s.x, y=s.y, z=z, **common)
    defaults = {name: estimate(strategy=name, z=z, **common) for name in STRATEGIES}
    own = own or defaults[s.strategy]
    # FSDP + TP at the split in use now, held fixed over the whole grid.
    both = own if own.strategy == "fsdp+tp" else defaults["fsdp+tp"]
    held = estimate(strategy="fsdp+tp", x=_first(both.x), y=_first(both.y), z=z, **common)
    now = {name: pick(e, 0) for name, e in defaults.items()}
    if own.strategy == "fsdp+tp":
        now["fsdp+tp"] = pick(own, 0)
    curves = {name: defaults[name] for name in ("dp", "fsdp", "tp")}
    curves["fsdp+tp"] = held
    curves["optimal"] = defaults["fsdp+tp"]
    return pick(own, 0), now, _roofline(s, curves, own), _memory(s, now)


def batch_grid(batch: float) -> np.ndarray:
    """Global batches for the curves: 1e4 to 1e9 tokens, widened to hold ``batch``."""
    lo, hi = min(1e4, batch / 10), max(1e9, batch * 10)
    return np.logspace(math.log10(lo), math.log10(hi), GRID_POINTS)


def _roofline(s: Scenario, curves: dict, own: Estimate) -> RooflineData:
    rest = slice(1, None)
    layer = next(iter(curves.values())).layer
    compute = {"fwd": layer.math[0][rest], "both": layer.t_math[rest]}
    comm, crossover, labels = {}, {}, {}
    for name, e in curves.items():
        t = e.layer
        shape = t.t_math.shape  # traffic that does not depend on the batch comes back as a scalar
        fwd = np.broadcast_to(np.maximum(t.x[0], t.y[0]), shape)[rest]
        scaled = np.broadcast_to(t.t_math * np.maximum(t.comm_ratio("x"), t.comm_ratio("y")), shape)[rest]
        comm[name] = {"fwd": np.where(fwd > 0, fwd, np.nan), "both": np.where(scaled > 0, scaled, np.nan)}
        crossover[name] = float(np.min(e.crossover_batch))
    held = curves["fsdp+tp"]
    labels.update({name: NAMES[name] for name in ("dp", "fsdp", "tp")})
    labels["fsdp+tp"] = f"FSDP {_first(held.x)} x TP {_first(held.y)}"
    labels["optimal"] = "FSDP+TP, best split"
    if s.pods > 1:
        t = own.layer
        dcn = np.broadcast_to(t.t_math * t.comm_ratio("dcn"), t.t_math.shape)[rest]
        comm["dcn"] = {"fwd": np.full(len(compute["fwd"]), np.nan), "both": dcn}
        crossover["dcn"] = s.pods * float(own.critical_tokens_per_pod)
        labels["dcn"] = f"DCN ({s.pods} pods)"
    current = "fsdp+tp" if own.strategy == "fsdp+tp" else own.strategy
    return RooflineData(
        batch=own.batch[rest], compute=compute, comm=comm, labels=labels, crossover=crossover,
        current_curve=current, current_batch=float(s.batch),
    )  # fmt: skip


def _memory(s: Scenario, now: dict) -> MemoryData:
    parts = np.array(
        [[float(getattr(e.memory, k)) for e in now.values()] for k in ("params", "grads", "optimizer", "activations")]
    )
    labels = tuple(NAMES[n] if n != "fsdp+tp" else f"FSDP {int(e.x)} x TP {int(e.y)}" for n, e in now.items())
    return MemoryData(
        strategies=tuple(now), labels=labels, parts=parts, hbm_bytes=s.hardware.hbm_bytes, current=s.strategy
    )


def _first(values) -> int:
    """The value at the current batch (index 0), whether or not it varies over the grid."""
    return int(np.ravel(values)[0])
