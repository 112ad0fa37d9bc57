"""The roofline the panel draws: the chapter's per-layer times over a grid of global batches, for
every strategy, and the current layout's point (MODEL.md §A.3, §A.10)."""

from __future__ import annotations

import functools
import math
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike

from ..evaluation.evaluate import per_layer
from ..evaluation.result import Estimate
from ..ground.records import record
from ..ground.refusals import InputError
from ..layout.split_choice import split_choices
from ..strategies import BEST, STRATEGIES
from ..values import Cluster, Layout, Options, Workload, computed

GRID_POINTS = 256
# each strategy's own layout, the best split, the pods' DCN
CURVES = (*STRATEGIES, "optimal", "dcn")


@record(eq=False)
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
    pods: int = 1  # the data replicas over DCN: the pods, or groups of the pods a group spans
    spans: int = 1  # the pods a replica holds: a pipeline's or a TP group's (MODEL.md §B.10, §B.11)
    labels: dict = field(default_factory=dict)  # curve -> its name (``text/views.py``)

    def compute_at(self, batch: ArrayLike, passes: str = "both") -> float | np.ndarray:
        """The compute line at any batch (it is proportional to the batch).

        Parameters
        ----------
        batch : float or array_like
            B, the global batch [tokens].
        passes : str, default "both"
            "fwd", the forward pass, or "both", the whole layer.

        Returns
        -------
        time : float or np.ndarray
            The layer's compute per chip at ``batch`` [s].
        """
        per_token = self.compute[passes][0] / self.batch[0]
        return np.asarray(batch, dtype=float) * per_token


def batch_grid(batch: float, chips: int = 1) -> np.ndarray:
    """Global batches for the curves: 1e4 to 1e9 tokens, widened by whole decades to hold
    ``batch`` (so that most moves of the batch keep the grid, and the curves), and at least a
    token per chip (no layout runs on less).

    Parameters
    ----------
    batch : float
        B, the current global batch [tokens].
    chips : int, default 1
        N, all the chips of all pods [chips].

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

    Parameters
    ----------
    current : Estimate
        The current layout's estimate (one layout): its values, split and point.

    Returns
    -------
    data : RooflineData
        Each curve's compute and communication per layer over the grid, where each turns
        compute-bound, and the current layout's point [s, tokens].
    """
    cluster, workload, options = current.cluster, current.workload, current.options
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
    # Nor on the schedule, which may need more microbatches than one (DualPipe's 2Z): 1F1B's.
    # Z: the stages in each pod, the pipeline spanning pp_pods of them (MODEL.md §B.10)
    spans = int(current.layout.pp_pods)
    base = (int(current.z) // spans, 1, "1f1b", spans)
    layouts = {name: (name, None, None, None, None, 1, 1) for name in STRATEGIES if name != BEST}
    layouts["optimal"] = ("optimal", None, None, None, None, 1, 1)
    layouts[current.strategy] = _held(current)
    curves = {}
    for name, own in layouts.items():
        curve = _curve(*on, *base, *own)
        if curve is not None:  # None: this strategy cannot run here (too few heads for its TP)
            curves[name] = curve
    now, grid_layer = current.layer, curves[current.strategy][0]
    comm = {name: _comm(layer) for name, (layer, _) in curves.items()}
    crossover = {name: float(np.min(c)) for name, (_, c) in curves.items()}
    pods, tp_pods = int(current.pods), int(current.layout.tp_pods)
    if pods > 1 or tp_pods > 1:  # gradients, or TP's traffic across pods (MODEL.md §B.11)
        ratio = grid_layer.comm_ratio("dcn")
        dcn = _full(grid_layer.t_math * ratio, grid_layer)
        comm["dcn"] = {"fwd": np.full(dcn.shape, np.nan), "both": dcn}
        crossover["dcn"] = pods * float(current.critical_tokens_per_pod)
        if tp_pods > 1 and np.ravel(ratio)[-1] > 1:  # TP's share grows with the batch: never
            crossover["dcn"] = float("inf")
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
        spans=spans * tp_pods,
        current={p: (float(compute[p]), float(mine[p])) for p in ("fwd", "both")},
    )


def _held(current: Estimate) -> tuple:
    """The current layout's curve: its own split held fixed (whole axes by hand where the roles
    put them; Y a pod's share of TP), its ZeRO stage and its FSDP and TP across pods
    ("strategy, x, y, zero, axis_roles, fsdp_pods, tp_pods")."""
    layout = current.layout
    roles = None if layout.axis_roles is None else tuple(layout.axis_roles)
    T = int(layout.tp_pods)
    split = (None, None) if roles else (int(current.x), int(current.y) // T)
    return (current.strategy, *split, int(current.zero), roles, int(layout.fsdp_pods), T)


@functools.lru_cache(maxsize=64)
def _curve(chip, slice_shape, pods, model, precision, exact, lo, hi, z, v, schedule, spans, *own):
    """One curve of the roofline, ``per_layer`` over the grid from ``lo`` to ``hi``: a
    strategy's own layout, the current one held fixed ("strategy, x, y, zero, axis_roles,
    fsdp_pods, tp_pods"), or "optimal", the chapter's split at each batch; None where it cannot run.
    Kept for the moves of the panel that change none of it: a change of batch redraws the point,
    not the curves."""
    strategy, x, y, zero, roles, fsdp_pods, tp_pods = own
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
        fsdp_pods=fsdp_pods,
        pp_pods=spans,
        tp_pods=tp_pods,
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
