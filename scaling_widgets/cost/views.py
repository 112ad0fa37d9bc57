"""What the panel's plots draw, computed from the four values: the roofline over the batch, each
strategy's peak memory by part, and where the groups sit on the slice (MODEL.md §A.3, §A.7, §E.1).

They are here, beside ``evaluate``, so that the API and the CLI reach the same numbers the panel
draws. Their labels are words, which ``text/views.py`` adds (``labels`` and ``places`` are
empty here).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .cluster.mesh import axis_rings, role_layout, span_axes
from .cluster.nodes import node_spans
from .cluster.placement import split_choices
from .evaluate import per_layer
from .refusals import InputError
from .result import Estimate
from .search.split import split_candidates
from .strategies import BEST, STRATEGIES
from .values import Layout, computed

GRID_POINTS = 256
# each strategy's own layout, the best split, the pods' DCN
CURVES = (*STRATEGIES, "optimal", "dcn")
# The memory bar's parts, each the sum of the peak's parts (MODEL.md §E.1) it stands for.
BAR_PARTS = {
    "weights": ("weights",),
    "gradients": ("grads",),
    "optimizer state": ("optimizer",),
    "activations": ("activations", "working_set"),
    "logits": ("logits",),
    "buffers": ("buffers", "overhead"),
    "allocator": ("allocator",),
}


@dataclass(frozen=True, eq=False)
class RooflineData:
    """Per-layer times over a grid of global batches, for every strategy (MODEL.md §A.3, §A.10).

    ``comm[curve][pass]``: "fwd" is the forward pass's communication; "both" is the binding
    pass's communication scaled to the whole layer, T_math · max(T_comm/T_math per pass), so it
    crosses ``compute["both"]`` exactly where the strategy turns compute-bound. NaN where a
    strategy moves nothing in that pass. A strategy that cannot run here has no curve.
    """

    batch: np.ndarray
    compute: dict
    comm: dict
    crossover: dict  # curve -> smallest compute-bound batch (inf: never)
    current_curve: str
    current_batch: float
    current: dict  # pass -> (compute, communication) at the current batch [s]
    pods: int = 1
    labels: dict = field(default_factory=dict)  # curve -> its name (``text/views.py``)

    def compute_at(self, batch: ArrayLike, passes: str = "both") -> float | np.ndarray:
        """The compute line at any batch (it is proportional to the batch)."""
        per_token = self.compute[passes][0] / self.batch[0]
        return np.asarray(batch, dtype=float) * per_token


@dataclass(frozen=True, eq=False)
class MemoryData:
    """The busiest chip's peak of each strategy at the current batch [bytes] (MODEL.md §E)."""

    strategies: tuple
    estimates: (
        tuple  # per strategy: its ``Estimate``, or the ``InputError`` saying why it cannot run
    )
    parts: np.ndarray  # rows: BAR_PARTS; a column per strategy
    hbm_bytes: float
    limit_bytes: float  # the share of HBM a layout may fill (MODEL.md §B.8)
    current: str
    labels: tuple = ()  # per strategy: its layout's name (``text/views.py``)
    stages: tuple = ()  # per strategy: its busiest stage, "stage 1 of 4" ("" with one stage)

    @property
    def totals(self) -> np.ndarray:
        """Per strategy: its peak, the sum of its bar's parts [bytes]."""
        return self.parts.sum(axis=0)

    @property
    def runs(self) -> tuple[bool, ...]:
        """Per strategy: False where it cannot run here (its bar is empty)."""
        return tuple(isinstance(e, Estimate) for e in self.estimates)


@dataclass(frozen=True, eq=False)
class MeshData:
    """How the current layout sits on the slice (MODEL.md §A.1, §A.7)."""

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
    ep: int  # of X's chips, those that split the experts
    cp: int  # and those that split each sequence: as asked, or as the sequences need
    splits: tuple  # every legal (X, Y) of one pipeline stage, Y ascending
    gpu: bool  # a GPU cluster: the axes are nodes and GPUs per node
    places: tuple = ()  # where X and Y sit, in words (``text/views.py``)

    @property
    def chips(self) -> int:
        return math.prod(self.slice_shape) * self.pods


def batch_grid(batch: float, chips: int = 1) -> np.ndarray:
    """Global batches for the curves: 1e4 to 1e9 tokens, widened to hold ``batch``, and at
    least a token per chip (no layout runs on less).

    Parameters
    ----------
    batch : the current global batch [tokens]
    chips : all the chips of all pods

    Returns
    -------
    grid : np.ndarray
        ``GRID_POINTS`` global batches, evenly spaced on a log scale [tokens].
    """
    lo, hi = max(min(1e4, batch / 10), chips), max(1e9, batch * 10)
    grid = np.logspace(math.log10(lo), math.log10(hi), GRID_POINTS)
    grid[0] = lo  # exactly: 10**log10(16384) is a hair short of a token per chip
    return grid


def _chapters_split(cluster, workload, layout, exact) -> Layout:
    """FSDP + TP at the chapter's split at each batch of the grid: the roofline is the chapter's
    per-layer view (the estimate's own split, the fastest, is the point drawn on it)."""
    choices = split_choices(cluster, workload, layout, exact)
    if choices is None:
        return layout
    X, Y, chapters = choices
    pick = np.argmax(chapters, axis=-1)[..., None]
    x, y = (np.take_along_axis(v, pick, axis=-1)[..., 0] for v in np.broadcast_arrays(X, Y))
    return computed(layout, x=x, y=y)


def roofline(current: Estimate) -> RooflineData:
    """The chapter's per-layer times over a grid of batches, token by token (no sequences): each
    strategy's own layout, the split in use held fixed, and the chapter's split re-chosen per
    batch.

    Returns
    -------
    data : RooflineData
        Each curve's compute and communication per layer over the grid, where each turns
        compute-bound, and the current layout's point [s, tokens].
    """
    cluster, workload, layout, options = (
        current.cluster,
        current.workload,
        current.layout,
        current.options,
    )
    grid = batch_grid(float(current.batch), int(current.chips))
    tokens = dataclasses.replace(workload, batch=grid, seq_len=None, tokens=None)
    # One microbatch: the per-layer times and crossovers do not depend on it, and a token per data
    # replica is then enough for every batch of the grid (4·Z microbatches refuse its small end).
    base = Layout(
        z=current.z, virtual_stages=layout.virtual_stages, schedule=layout.schedule, microbatches=1
    )
    layouts = {
        name: dataclasses.replace(base, strategy=name) for name in STRATEGIES if name != BEST
    }
    optimal = dataclasses.replace(base, strategy=BEST)
    layouts["optimal"] = _chapters_split(cluster, tokens, optimal, options.exact)
    held = dataclasses.replace(
        base, strategy=current.strategy, x=int(current.x), y=int(current.y), zero=current.zero
    )
    if (
        layout.axis_roles is not None
    ):  # whole axes by hand: the curve sits where the roles put the groups
        held = dataclasses.replace(held, x=None, y=None, z=None, axis_roles=layout.axis_roles)
    layouts[current.strategy] = held
    # The per-layer times do not depend on the step: a measured step, which only some batches of
    # the grid could reach, must not refuse the curves; nor attention FLOPs, which need the
    # sequences this token-level grid does not have.
    options = dataclasses.replace(options, measured_step_time=None, attention_flops=False)
    curves = {}
    for name, own in layouts.items():
        try:
            curves[name] = per_layer(cluster, tokens, own, options)
        except InputError:  # this strategy cannot run here (too few heads for its TP): no curve
            continue
    now, grid_layer = current.layer, curves[current.strategy][0]
    comm = {name: _comm(layer) for name, (layer, _) in curves.items()}
    crossover = {name: float(np.min(c)) for name, (_, c) in curves.items()}
    pods = int(current.pods)
    if pods > 1:
        dcn = _full(grid_layer.t_math * grid_layer.comm_ratio("dcn"), grid_layer)
        comm["dcn"] = {"fwd": np.full(dcn.shape, np.nan), "both": dcn}
        crossover["dcn"] = pods * float(current.critical_tokens_per_pod)
    compute = {"fwd": _full(now.math[0], now), "both": _full(now.t_math, now)}
    mine = _comm(now)
    return RooflineData(
        batch=grid,
        comm=comm,
        crossover=crossover,
        current_curve=current.strategy,
        compute={
            "fwd": _full(grid_layer.math[0], grid_layer),
            "both": _full(grid_layer.t_math, grid_layer),
        },
        current_batch=float(current.batch),
        pods=pods,
        current={p: (float(compute[p]), float(mine[p])) for p in ("fwd", "both")},
    )


def _comm(t) -> dict:
    """Per pass: "fwd" the forward's traffic; "both" the binding pass's, scaled to the layer."""
    fwd = _full(np.maximum(t.x[0], t.y[0]), t)
    scaled = _full(t.t_math * np.maximum(t.comm_ratio("x"), t.comm_ratio("y")), t)
    return {"fwd": np.where(fwd > 0, fwd, np.nan), "both": np.where(scaled > 0, scaled, np.nan)}


def _full(values, t) -> np.ndarray:
    """Traffic that does not depend on the batch comes back as a scalar: spread it over the grid."""
    return np.broadcast_to(values, t.t_math.shape)


def memory_bars(strategies: dict[str, Estimate | InputError], current: Estimate) -> MemoryData:
    """The peak of each strategy's own layout (``compare_strategies``), the current one's as it is:
    one bar per strategy, an empty one where it cannot run.

    Parameters
    ----------
    strategies : strategy -> its ``Estimate``, or the ``InputError`` saying why it cannot run
    current : the current layout's estimate, which replaces its strategy's

    Returns
    -------
    data : MemoryData
        Each strategy's peak by part (``BAR_PARTS``), HBM and the share a layout may fill
        [bytes].
    """
    estimates = {**strategies, current.strategy: current}
    parts = np.array(
        [[_bar_part(e, kinds) for e in estimates.values()] for kinds in BAR_PARTS.values()]
    )
    hbm = current.chip.hbm_bytes
    return MemoryData(
        strategies=tuple(estimates),
        estimates=tuple(estimates.values()),
        parts=parts,
        hbm_bytes=hbm,
        limit_bytes=float(current.fits_below) * hbm,
        current=current.strategy,
    )


def _bar_part(e, kinds) -> float:
    return sum(float(getattr(e.peak, k)) for k in kinds) if isinstance(e, Estimate) else 0.0


def mesh(e: Estimate) -> MeshData:
    """Where the groups of one layout sit on its slice: each axis's share of X, Y and Z.

    Returns
    -------
    data : MeshData
        The slice, each axis' (X, Y, Z) share, the groups and their spans, and every legal
        (X, Y) split of one pipeline stage.
    """
    chip, shape = e.chip, e.slice_shape
    rings = axis_rings(slice_shape=shape, pod_shape=chip.pod_shape, rule=chip.wraparound)
    x, y, z = int(e.x), int(e.y), int(e.z)
    if e.layout.axis_roles is not None:
        span = role_layout(slice_shape=shape, roles=e.layout.axis_roles, rings=rings)[3]
    elif chip.is_gpu:
        span = node_spans(
            slice_shape=shape, x=x, y=y, z=z, nvlink_bw=chip.ici_bw, nic_bw=chip.scaleout_bw
        )
    else:
        span = span_axes(slice_shape=shape, x=x, y=y, z=z, rings=rings)
    X, Y = split_candidates(math.prod(shape) // z)
    return MeshData(
        slice_shape=shape,
        shares=tuple(tuple(int(f) for f in axis) for axis in span.shares),
        x=x,
        y=y,
        z=z,
        pods=int(e.pods),
        mx=float(e.mx),
        my=float(e.my),
        wrap_x=bool(e.wrap_x),
        ep=int(e.layout.ep),
        cp=int(e.layout.cp),
        wrap_y=bool(e.wrap_y),
        splits=tuple(zip(X.tolist(), Y.tolist())),
        gpu=chip.is_gpu,
    )
