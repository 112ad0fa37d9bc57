"""Everything SPEC A.10 reports about one layout, composed from the cost functions.

This is the one entry point the CLI and the panel call. Batch, pods, MFU, X and Y broadcast;
the slice shape and the pipeline depth Z are one value per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _checks
from .inputs import BOOK_PRECISION, Chip, Model, Precision
from .layer import STRATEGIES, LayerTimes, crossover_batch, layer_times
from .memory import MemoryPerChip, memory_per_chip
from .mesh import axis_rings, check_fits_pod, span_axes
from .pipeline import bubble_overhead
from .split import best_split
from .thresholds import critical_tokens_per_chip, critical_tokens_per_pod, tp_limit, x_opt
from .training import ParamCount, param_count, step_time, time_to_train


@dataclass(frozen=True, eq=False)
class Estimate:
    """SPEC A.10 for one layout (or an array of them). Times [s], memory [bytes], batch [tokens]."""

    model: Model
    chip: Chip
    precision: Precision
    strategy: str
    batch: np.ndarray
    slice_shape: tuple[int, ...]
    x: np.ndarray
    y: np.ndarray
    z: int
    pods: np.ndarray
    mx: np.ndarray
    my: np.ndarray
    wrap_x: np.ndarray
    wrap_y: np.ndarray
    microbatches: np.ndarray
    params: ParamCount
    layer: LayerTimes
    crossover_batch: np.ndarray  # the smallest batch at which this very layout is compute-bound
    critical_tokens_per_chip: np.ndarray  # NaN for pure TP
    tp_limit: np.ndarray
    critical_tokens_per_pod: np.ndarray
    x_opt: np.ndarray
    memory: MemoryPerChip
    mfu: np.ndarray
    bubble: np.ndarray  # idle time relative to useful work, (Z - 1)/m
    step_time: np.ndarray
    training_time: np.ndarray | None  # None without ``tokens``

    def __repr__(self):
        shape = np.shape(self.step_time)
        return f"Estimate({self.model.name} on {self.chip.name}, {self.strategy}, shape={shape})"

    @property
    def chips(self):
        """All chips of all pods."""
        return math.prod(self.slice_shape) * self.pods

    @property
    def tokens_per_chip(self):
        return self.batch / self.chips

    @property
    def compute_bound(self):
        return self.layer.compute_bound

    @property
    def bottleneck(self):
        return self.layer.bottleneck

    @property
    def fits(self):
        return self.memory.total <= self.chip.hbm_bytes


def estimate(
    *,
    model: Model,
    chip: Chip,
    batch,
    strategy: str = "fsdp+tp",
    slice_shape=None,
    pods=1,
    x=None,
    y=None,
    z: int = 1,
    microbatches=None,
    mx=None,
    my=None,
    wraparound: bool | None = None,
    mfu=0.4,
    tokens=None,
    precision: Precision = BOOK_PRECISION,
) -> Estimate:
    """Evaluate a layout: per-layer times, thresholds, memory, step time (SPEC A.3 to A.6, A.10).

    ``slice_shape`` defaults to the chip's full pod. With ``x``/``y`` unset the layout follows
    the strategy: DP and FSDP put every chip of a stage on X, TP on Y, and FSDP + TP takes
    ``best_split``. ``mx``/``my`` override the axes spanned, ``wraparound`` the rings.
    ``microbatches`` defaults to 4·Z (GPipe's rule of thumb for a small bubble).

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> e = estimate(model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=[5e5, 3e6],
    ...              slice_shape=(16, 16, 16))
    >>> e.x.tolist(), e.y.tolist(), e.compute_bound.tolist(), e.step_time.round(2).tolist()
    ([512, 1024], [8, 4], [False, True], [0.05, 0.31])
    """
    _checks.one_of("strategy", strategy, STRATEGIES)
    shape = check_fits_pod(chip.pod_shape if slice_shape is None else slice_shape, chip.pod_shape)
    B = _checks.positive("batch", batch)
    P = _checks.whole("pods", pods)
    Z = int(_checks.whole("z", z))
    stage_chips, leftover = divmod(math.prod(shape), Z)
    if leftover:
        raise ValueError(f"z must divide the slice's {math.prod(shape)} chips; got {Z}")
    rings = axis_rings(slice_shape=shape, pod_shape=chip.pod_shape, rule=chip.wraparound)
    if wraparound is not None:
        rings = (bool(wraparound),) * len(shape)
    hw = dict(flops=chip.flops, ici_bw=chip.ici_bw, dcn_bw=chip.dcn_bw)
    D, F = model.d_model, model.d_ff
    if x is None and y is None and strategy == "fsdp+tp":
        x, y = best_split(batch=B, d_model=D, d_ff=F, slice_shape=shape, z=Z, pods=P, rings=rings, mx=mx, my=my, **hw)
    X, Y = _layout(strategy, stage_chips, x, y)
    span = span_axes(slice_shape=shape, x=X, y=Y, z=Z, rings=rings)
    M_X = span.mx if mx is None else _checks.positive("mx", mx)
    M_Y = span.my if my is None else _checks.positive("my", my)
    m = _checks.whole("microbatches", 4 * Z if microbatches is None else microbatches)

    layout = dict(strategy=strategy, d_model=D, d_ff=F, x=X, y=Y, pods=P, mx=M_X, my=M_Y, **hw)
    layer = layer_times(batch=B, **layout)
    params = param_count(**model.dims())
    bubble = bubble_overhead(stages=Z, microbatches=m)
    comm_per_step = model.layers / Z * layer.t_comms  # each stage runs L/Z layers
    step = step_time(
        batch=B,
        params=params.total,
        chips=math.prod(shape) * P,
        flops=chip.flops,
        mfu=mfu,
        comm_time=comm_per_step,
        bubble=bubble,
    )
    memory = memory_per_chip(
        params=params.total,
        layers=model.layers,
        d_model=D,
        d_ff=F,
        batch=B,
        x=X,
        y=Y,
        z=Z,
        pods=P,
        shard_weights_over_x=strategy in ("fsdp", "fsdp+tp"),
        weight_bytes=precision.weight_bytes,
        grad_bytes=precision.grad_bytes,
        optimizer_bytes=precision.optimizer_bytes,
        activation_bytes=precision.activation_bytes,
    )
    spans = dict(mx=np.maximum(M_X, 1), my=np.maximum(M_Y, 1))  # a group of one spans no axis
    return Estimate(
        model=model,
        chip=chip,
        precision=precision,
        strategy=strategy,
        batch=B,
        slice_shape=shape,
        x=X,
        y=Y,
        z=Z,
        pods=P,
        mx=M_X,
        my=M_Y,
        wrap_x=span.wrap_x,
        wrap_y=span.wrap_y,
        microbatches=m,
        params=params,
        layer=layer,
        crossover_batch=crossover_batch(**layout),
        critical_tokens_per_chip=critical_tokens_per_chip(
            strategy=strategy, flops=chip.flops, ici_bw=chip.ici_bw, d_ff=F, stages=Z, **spans
        ),
        tp_limit=tp_limit(flops=chip.flops, ici_bw=chip.ici_bw, d_ff=F, my=spans["my"]),
        critical_tokens_per_pod=critical_tokens_per_pod(flops=chip.flops, dcn_bw=chip.dcn_bw),
        x_opt=x_opt(batch=B / P, d_ff=F, chips=stage_chips, **spans),
        memory=memory,
        mfu=_checks.fraction("mfu", mfu),
        bubble=bubble,
        step_time=step,
        training_time=None if tokens is None else time_to_train(tokens=tokens, batch=B, step_time=step),
    )


def _layout(strategy: str, stage_chips: int, x, y):
    """X and Y of a strategy: DP/FSDP put a stage's chips on X, TP on Y, FSDP + TP splits them."""
    forced = {"dp": ("y", 1), "fsdp": ("y", 1), "tp": ("x", 1)}.get(strategy)
    given = {"x": x, "y": y}
    if forced is not None:
        name, one = forced
        if given[name] is not None and np.any(np.asarray(given[name]) != one):
            raise ValueError(f"{name} must be 1 for strategy {strategy!r} (use 'fsdp+tp'); got {given[name]!r}")
        given[name] = one
    for name, other in (("x", "y"), ("y", "x")):
        if given[name] is None:
            share = _checks.whole(other, given[other])
            if np.any(stage_chips % share):
                raise ValueError(f"{other} must divide the {stage_chips} chips of a stage; got {given[other]!r}")
            given[name] = stage_chips // share
    return _checks.whole("x", given["x"]), _checks.whole("y", given["y"])


def compare_strategies(**kwargs) -> dict[str, Estimate]:
    """``estimate`` of every strategy on the same inputs, each with its own default layout."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("strategy", "x", "y")}
    return {s: estimate(strategy=s, **kwargs) for s in STRATEGIES}
