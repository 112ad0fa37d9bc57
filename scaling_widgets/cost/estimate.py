"""Everything SPEC A.10 reports about one layout, composed from the cost functions.

This is the one entry point the CLI, the panel and the planner call. Batch, pods, MFU and
every knob of a layout broadcast: X, Y, Z, the ZeRO stage, the microbatches, the recompute
policy and the schedule (names, or arrays of names); the slice shape is one per call.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import _checks
from ._choices import per_choice
from .activations import SCHEDULES, activation_bytes_per_layer, in_flight_microbatches
from .inputs import BOOK_PRECISION, Chip, Model, Precision
from .layer import CHAPTER, STRATEGIES, Exactness, crossover_batch, layer_times
from .layout import resolve_layout
from .memory import memory_per_chip
from .mesh import check_fits_pod
from .nodes import check_gpu_slice
from .pipeline import bubble_overhead, stage_traffic_time
from .result import Estimate
from .thresholds import critical_tokens_per_chip, critical_tokens_per_pod, tp_limit, x_opt
from .training import (
    REMAT_POLICIES,
    flops_per_token,
    param_count,
    recompute_flops_per_token,
    step_time,
    time_to_train,
    utilisation,
)  # fmt: skip


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
    z: int | None = None,
    zero: int | None = None,
    seq_len=None,
    attention_flops: bool = False,
    remat: str = "checkpoints",
    measured_step_time=None,
    schedule: str = "1f1b",
    virtual_stages: int = 1,
    sequence_parallel: bool = False,
    microbatch_seqs=None,
    exact: Exactness = CHAPTER,
    overhead_bytes=0.0,
    fits_below=1.0,
    axis_roles=None,
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
    ``best_split``. ``axis_roles`` (one of "x", "y", "z" per slice axis) gives whole axes to the
    groups instead. ``mx``/``my`` override the axes spanned, ``wraparound`` the rings.
    ``microbatches`` defaults to 4·Z (GPipe's rule of thumb for a small bubble). ``zero`` is the
    ZeRO stage on the data axis (SPEC B.3): DP defaults to 0, FSDP and FSDP + TP to 3; DP at
    stage 3 is FSDP, and below stage 3 FSDP (+ TP) moves DP's traffic (an AllReduce, 2Ψ per rank)
    over X: what pipelining wants (SPEC A.6).
    ``attention_flops`` counts 12·L·T·N_h·H per token (needs ``seq_len``), ``remat`` the
    recomputation in the hardware FLOPs (SPEC B.1). ``measured_step_time`` calibrates: the step
    takes that long, and the MFU and HFU it implies are reported instead of ``mfu``.
    With a ``remat`` other than the chapter's "checkpoints", activation memory follows SPEC B.4
    (Korthikanti et al.), with ``sequence_parallel`` and microbatches of ``microbatch_seqs``
    sequences held in flight as the pipeline ``schedule`` dictates (B.6). ``exact``
    switches on the SPEC B.7 corrections; ``overhead_bytes`` per chip and ``fits_below`` (a share
    of HBM) make "fits" the cautious question of SPEC B.8.
    Every knob of a layout may be an array, one value per layout: ``z`` (with ``x`` and ``y``
    given), ``zero``, ``remat``, ``schedule``, ``virtual_stages``, ``microbatches``; the planner
    evaluates a cluster's layouts this way.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> e = estimate(model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=[5e5, 3e6],
    ...              slice_shape=(16, 16, 16))
    >>> e.x.tolist(), e.y.tolist(), e.compute_bound.tolist(), e.step_time.round(2).tolist()
    ([512, 1024], [8, 4], [False, True], [0.05, 0.31])
    >>> e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], batch=4e6, seq_len=8192,
    ...              slice_shape=(16, 16, 16), x=[512, 128], y=8, z=[1, 4], zero=[3, 1],
    ...              remat=["checkpoints", "full"], schedule=["1f1b", "interleaved"], virtual_stages=[1, 2])
    >>> e.bubble.tolist(), (e.memory.total / 1e9).round(1).tolist()
    ([0.0, 0.09375], [10.4, 8.1])
    """
    _checks.one_of("strategy", strategy, STRATEGIES)
    for name, value, kind in (("model", model, Model), ("chip", chip, Chip), ("precision", precision, Precision)):
        if not isinstance(value, kind):
            raise ValueError(f"{name} must be a {kind.__name__} (see scaling_widgets.presets); got {value!r}")
    if z is not None and np.any(_checks.whole("z", z) > model.layers):
        raise ValueError(f"z must be a whole number of stages from 1 to the model's {model.layers} layers; got {z!r}")
    zero = {"dp": 0, "tp": 0}.get(strategy, 3) if zero is None else _scalar(_checks.whole("zero", zero, minimum=0))
    if np.size(zero) == 0 or np.any(zero > 3):
        raise ValueError(f"zero must be a ZeRO stage 0, 1, 2 or 3 (or an array of them) for {strategy!r}; got {zero!r}")
    remat = _checks.each_one_of("remat", remat, REMAT_POLICIES)
    needs_seq = attention_flops or np.any(remat != "checkpoints") or microbatch_seqs is not None
    if needs_seq and seq_len is None:
        raise ValueError(f"seq_len is needed for attention FLOPs, microbatch sizes or remat={remat!r}; got None")
    schedule = _checks.each_one_of("schedule", schedule, SCHEDULES)
    virtual_stages = _scalar(_checks.whole("virtual_stages", virtual_stages))
    if np.any((virtual_stages != 1) & (schedule != "interleaved")):
        raise ValueError(f"virtual_stages goes with schedule 'interleaved'; got {virtual_stages} with {schedule!r}")
    if microbatch_seqs is not None and microbatches is not None:
        raise ValueError("give microbatches or microbatch_seqs, not both: one follows from the other")
    if microbatch_seqs is not None:
        _checks.positive("microbatch_seqs", microbatch_seqs)
    _checks.non_negative("overhead_bytes", overhead_bytes)
    _checks.fraction("fits_below", fits_below)
    _checks.non_negative("latency", exact.latency)
    for name, value in (("seq_len", seq_len), ("measured_step_time", measured_step_time)):
        if value is not None:
            _checks.positive(name, value)
    if axis_roles is not None and not isinstance(axis_roles, (tuple, list)):
        raise ValueError(f"axis_roles must be a list of 'x', 'y' or 'z', one per slice axis; got {axis_roles!r}")
    check = check_gpu_slice if chip.is_gpu else check_fits_pod
    shape = check(chip.pod_shape if slice_shape is None else slice_shape, chip.pod_shape)
    B = _checks.positive("batch", batch)
    P = _checks.whole("pods", pods)
    _checks.fraction("mfu", mfu)
    for name, value in (("x", x), ("y", y), ("z", z), ("microbatches", microbatches)):
        if value is not None:
            _checks.whole(name, value)
    for name, value in (("mx", mx), ("my", my), ("tokens", tokens)):
        if value is not None:
            _checks.positive(name, value)
    with _checks.trusted():  # every input is checked: the functions below need not check again
        return _estimate(
            model, chip, precision, strategy, zero, shape, B, P, x, y, z, axis_roles, microbatches, mx, my,
            wraparound, mfu, tokens, (seq_len, attention_flops, remat, measured_step_time),
            (exact, overhead_bytes, fits_below),
            (schedule, virtual_stages, bool(sequence_parallel), microbatch_seqs),
        )  # fmt: skip


def _estimate(
    model,
    chip,
    precision,
    strategy,
    zero,
    shape,
    B,
    P,
    x,
    y,
    z,
    axis_roles,
    microbatches,
    mx,
    my,
    wraparound,
    mfu,
    tokens,
    accounting,
    cautions,
    pipelining,
) -> Estimate:
    exact, overhead_bytes, fits_below = cautions
    Z, X, Y, span = resolve_layout(
        exact=exact,
        chip=chip,
        model=model,
        strategy=strategy,
        slice_shape=shape,
        batch=B,
        pods=P,
        x=x,
        y=y,
        z=z,
        axis_roles=axis_roles,
        wraparound=wraparound,
        mx=mx,
        my=my,
    )
    stage_chips = math.prod(shape) // Z
    M_X = span.mx if mx is None else np.asarray(mx, dtype=float)
    M_Y = span.my if my is None else np.asarray(my, dtype=float)
    hw = dict(flops=chip.flops, ici_bw=chip.ici_bw, dcn_bw=chip.dcn_bw)
    D, F = model.d_model, model.d_ff
    schedule, v, sequence_parallel, microbatch_seqs = pipelining
    seq_len = accounting[0]
    sequences = B / (seq_len or 1) / (X * P)  # per data-parallel replica
    if microbatch_seqs is not None:
        microbatches = np.maximum(np.round(sequences / microbatch_seqs), 1).astype(np.int64)
    m = _checks.whole("microbatches", 4 * Z if microbatches is None else microbatches)

    # What moves over X follows where the weights live: sharded (ZeRO-3) or replicated (0-2).
    replicated = {"dp": "dp", "fsdp": "dp", "fsdp+tp": "dp+tp"}  # ZeRO 0-2: weights whole on X
    sharded = {"dp": "fsdp", "fsdp": "fsdp", "fsdp+tp": "fsdp+tp"}  # ZeRO-3
    traffic = _scalar(np.where(zero == 3, sharded.get(strategy, strategy), replicated.get(strategy, strategy)))
    layout = dict(
        strategy=traffic, d_model=D, d_ff=F, x=X, y=Y, pods=P, mx=M_X, my=M_Y, exact=exact, wrap_x=span.wrap_x,
        wrap_y=span.wrap_y, **hw,
    )  # fmt: skip
    layer = layer_times(batch=B, **layout)
    params = param_count(**model.dims())
    seq_len, attention_flops, remat, measured = accounting
    shape_of = dict(layers=model.layers, seq_len=seq_len or 1, heads=model.heads, head_dim=model.head_dim)
    model_flops = flops_per_token(params=params.total, attention=attention_flops, **shape_of)
    hardware_flops = model_flops + per_choice(
        remat, lambda r: recompute_flops_per_token(params=params.total, remat=r, attention=attention_flops, **shape_of)
    )
    chips = math.prod(shape) * P
    bubble = bubble_overhead(stages=Z, microbatches=m, virtual_stages=v)
    # Each chip of a stage sends its [B/(X·Y·P), D] share of the activations on (SPEC A.6, B.6).
    stage_traffic = stage_traffic_time(
        batch=B / (X * Y * P), d_model=D, stages=Z, microbatches=m, bandwidth=chip.ici_bw, virtual_stages=v
    )
    # The exposed communication of a step (SPEC A.10). The layer is the chapter's two-matrix MLP;
    # the rest of the model (a gated MLP's third matrix, attention, embeddings) moves and computes
    # in the same proportion, so the layer's communication per compute scales to the whole model.
    matmul_time = 6 * B * params.total / (chips * chip.flops)  # the whole model's, at full utilisation
    comm_per_step = layer.t_comms / layer.t_math * matmul_time
    step = step_time(
        batch=B, params=params.total, flops_per_token=model_flops, chips=chips, flops=chip.flops, mfu=mfu,
        comm_time=comm_per_step, bubble=bubble,
    )  # fmt: skip
    if measured is not None:  # calibration: the step took this long; what utilisation is that?
        step = np.broadcast_to(np.asarray(measured, dtype=float), np.shape(step))
        mfu = utilisation(batch=B, flops_per_token=model_flops, chips=chips, flops=chip.flops, step_time=step)
    hfu = mfu * hardware_flops / model_flops
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
        zero=zero,
        gated=model.gated,
        weight_bytes=precision.weight_bytes,
        grad_bytes=precision.grad_bytes,
        optimizer_bytes=precision.optimizer_bytes,
        activation_bytes=precision.activation_bytes,
    )
    memory = dataclasses.replace(memory, overhead=np.asarray(overhead_bytes, dtype=float))
    if np.any(remat != "checkpoints"):  # SPEC B.4: what each layer keeps, times the microbatches in flight

        def held(schedule):  # microbatches whose activations a stage holds at once
            return in_flight_microbatches(schedule=schedule, stages=Z, microbatches=m, virtual_stages=v)

        in_flight = np.where(Z == 1, 1, per_choice(schedule, held))

        def kept(policy):  # the chapter's checkpoints, or Korthikanti et al.'s bytes per layer
            if policy == "checkpoints":
                return memory.activations
            per_layer = activation_bytes_per_layer(
                seq_len=seq_len, microbatch_seqs=sequences / m, d_model=D, heads=model.heads, tp=Y, remat=policy,
                sequence_parallel=sequence_parallel,
            )  # fmt: skip
            return per_layer * model.layers / Z * in_flight

        memory = dataclasses.replace(memory, activations=per_choice(remat, kept))
    spans = dict(mx=np.where(M_X > 0, M_X, 1), my=np.where(M_Y > 0, M_Y, 1))  # a group of one spans no axis
    return Estimate(
        model=model,
        chip=chip,
        precision=precision,
        strategy=strategy,
        zero=zero,
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
        mfu=np.asarray(mfu, dtype=float),
        hfu=np.asarray(hfu, dtype=float),
        flops_per_token=model_flops,
        remat=remat,
        calibrated=measured is not None,
        schedule=schedule,
        virtual_stages=v,
        sequence_parallel=sequence_parallel,
        exact=exact,
        fits_below=float(fits_below),
        bubble=bubble,
        stage_traffic=stage_traffic,
        comm_time=comm_per_step,
        step_time=step,
        training_time=None if tokens is None else time_to_train(tokens=tokens, batch=B, step_time=step),
    )


def _scalar(a):
    """A 0-d array as its Python value (an int or a name), so one layout's knobs print and serialize."""
    return a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a


def compare_strategies(**kwargs) -> dict[str, Estimate]:
    """``estimate`` of every strategy on the same inputs, each with its own default layout."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("strategy", "x", "y", "axis_roles", "zero")}
    return {s: estimate(strategy=s, **kwargs) for s in STRATEGIES}
