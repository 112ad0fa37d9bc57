"""What the panel's plots draw, computed from the four values: the roofline over the batch, each
strategy's peak memory by part, and where the groups sit on the slice (MODEL.md §A.3, §A.7, §E.1).

They are here, beside ``evaluate``, so that the API and the CLI reach the same numbers the panel
draws. Their labels are words, which ``text/views.py`` adds (``labels`` and ``places`` are
empty here).
"""

from __future__ import annotations

import functools
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
from .transformer.experts import folds_over_tp
from .values import Cluster, Layout, Options, Workload, computed

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
    ep: int  # of X's chips, those that split the experts (of TP x X's, where it folds)
    cp: int  # and those that split each sequence: as asked, or as the sequences need
    splits: tuple  # every legal (X, Y) of one pipeline stage, Y ascending
    gpu: bool  # a GPU cluster: the axes are nodes and GPUs per node
    ep_folded: bool = False  # the EP group takes TP's chips first (expert TP 1, MODEL.md §D.2)
    places: tuple = ()  # where X and Y sit, in words (``text/views.py``)

    @property
    def chips(self) -> int:
        return math.prod(self.slice_shape) * self.pods


def batch_grid(batch: float, chips: int = 1) -> np.ndarray:
    """Global batches for the curves: 1e4 to 1e9 tokens, widened by whole decades to hold
    ``batch`` (so that most moves of the batch keep the grid, and the curves), and at least a
    token per chip (no layout runs on less).

    Parameters
    ----------
    batch : the current global batch [tokens]
    chips : all the chips of all pods

    Returns
    -------
    grid : np.ndarray
        ``GRID_POINTS`` global batches, evenly spaced on a log scale [tokens].
    """
    decades = math.floor(math.log10(batch / 10)), math.ceil(math.log10(batch * 10))
    lo, hi = max(min(1e4, 10.0 ** decades[0]), chips), max(1e9, 10.0 ** decades[1])
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
    # What every curve depends on: the slice, the model and the corrections. Not the batch, but
    # for the grid's ends, nor the step: a measured step, which only some batches of the grid
    # could reach, must not refuse the curves; nor attention FLOPs, which need the sequences this
    # token-level grid does not have.
    on = (
        cluster.chip,
        cluster.slice_shape,
        int(cluster.pods),
        workload.model,
        workload.precision,
        options.exact,
        float(grid[0]),
        float(grid[-1]),
    )
    # One microbatch: the per-layer times and crossovers do not depend on it, and a token per data
    # replica is then enough for every batch of the grid (4·Z microbatches refuse its small end).
    base = (int(current.z), int(layout.virtual_stages), str(layout.schedule))
    layouts = {name: (name, None, None, None, None) for name in STRATEGIES if name != BEST}
    layouts["optimal"] = ("optimal", None, None, None, None)
    # the current layout's own split held fixed; whole axes by hand sit where the roles put them
    held = (current.strategy, int(current.x), int(current.y), int(current.zero), None)
    if layout.axis_roles is not None:
        held = (current.strategy, None, None, int(current.zero), tuple(layout.axis_roles))
    layouts[current.strategy] = held
    curves = {}
    for name, own in layouts.items():
        curve = _curve(*on, *base, *own)
        if curve is not None:  # None: this strategy cannot run here (too few heads for its TP)
            curves[name] = curve
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


@functools.lru_cache(maxsize=64)
def _curve(chip, slice_shape, pods, model, precision, exact, lo, hi, z, v, schedule, *own):
    """One curve of the roofline, ``per_layer`` over the grid from ``lo`` to ``hi``: a
    strategy's own layout, the current one held fixed ("strategy, x, y, zero, axis_roles"), or
    "optimal", the chapter's split at each batch; None where it cannot run. Kept for the moves
    of the panel that change none of it: a change of batch redraws the point, not the curves."""
    strategy, x, y, zero, roles = own
    grid = np.logspace(math.log10(lo), math.log10(hi), GRID_POINTS)
    grid[0], grid[-1] = lo, hi
    cluster = Cluster(chip=chip, slice_shape=slice_shape, pods=pods)
    tokens = Workload(model=model, batch=grid, precision=precision)
    options = Options(exact=exact)
    layout = Layout(
        strategy=BEST if strategy == "optimal" else strategy,
        x=x,
        y=y,
        z=None if roles else z,
        zero=zero,
        virtual_stages=v,
        schedule=schedule,
        microbatches=1,
        axis_roles=roles,
    )
    if strategy == "optimal":
        layout = _chapters_split(cluster, tokens, layout, exact)
    try:
        return per_layer(cluster, tokens, layout, options)
    except InputError:
        return None


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
        ep_folded=bool(folds_over_tp(e.layout.etp, y)) and int(e.layout.ep) > 1,
        cp=int(e.layout.cp),
        wrap_y=bool(e.wrap_y),
        splits=tuple(zip(X.tolist(), Y.tolist())),
        gpu=chip.is_gpu,
    )
