"""Everything MODEL.md §A.10 reports about a layout: ``evaluate(cluster, workload, layout,
options)``.

This is the one path the CLI, the panel and the planner take. The four values checked their own
fields when they were built; ``feasible.together`` checks them against each other, ``place`` puts
the groups on the slice and refuses what cannot run, then the times and the memory follow. Batch
and every knob of a layout broadcast (see ``Layout``). ``estimate(**keywords)`` is the same call
with the four values' fields as keywords.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .checks import InputError, refuse, scalar
from .choices import per_choice
from .cluster import feasible
from .cluster.placement import Placement, place
from .memory.chapter import memory_per_chip
from .memory.peak import peak_memory
from .result import Estimate
from .schedules import bubble, in_flight_microbatches
from .step.chapter import time_to_train
from .step.pipeline import stage_share, stage_traffic_time
from .step.predict import predict
from .step.profiles import profile_of
from .strategies import STRATEGIES
from .transformer.activations import activation_bytes_per_layer
from .transformer.context import cp_seconds_per_token
from .transformer.counts import flops_per_token, param_count, recompute_flops_per_token
from .transformer.experts import all_to_all, dispatch_bytes, held_width, routed_params
from .transformer.layer import crossover_batch, layer_times
from .transformer.thresholds import (
    critical_tokens_per_chip,
    critical_tokens_per_pod,
    tp_limit,
    x_opt,
)
from .values import VALUES, Cluster, Layout, Options, Workload


def evaluate(
    cluster: Cluster,
    workload: Workload,
    layout: Layout | None = None,
    options: Options | None = None,
):
    """Evaluate a layout: per-layer times, thresholds, memory, step time (MODEL.md §A.3 to §A.6,
    §A.10).

    Raises ``InputError`` (a ``ValueError`` naming the field) for a value out of range or a
    layout that cannot run (``check``).

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> chip, model = HARDWARE["tpu-v5p"], MODELS["llama-2-13b"]
    >>> e = evaluate(Cluster(chip, (16, 16, 16)), Workload(model, [5e5, 3e6]), Layout(),
    ...              Options(mfu=0.4))
    >>> e.x.tolist(), e.y.tolist(), e.compute_bound.tolist(), e.step_time.round(2).tolist()
    ([512, 1024], [8, 4], [False, True], [0.05, 0.31])
    """
    layout, options = _resolved(layout or Layout()), options or Options()
    feasible.together(cluster, workload, layout, options)
    placed = place(cluster, workload, layout, options.exact)
    return _evaluate(cluster, workload, layout, options, placed)


def validate(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> None:
    """The check ``evaluate`` makes, without the evaluation: raises ``InputError`` or returns.

    A measured step is the exception: whether it is possible depends on the layout's FLOPs at
    peak, which only the evaluation knows (``_step``).
    """
    layout = _resolved(layout)
    feasible.together(cluster, workload, layout, options)
    placed = place(cluster, workload, layout, options.exact)
    if options.measured_step_time is not None:
        _evaluate(cluster, workload, layout, options, placed)


def estimate(**keywords) -> Estimate:
    """``evaluate`` with the fields of ``Cluster``, ``Workload``, ``Layout`` and ``Options`` as
    keywords.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], batch=16e6,
    ...              seq_len=4096, slice_shape=(16, 16, 16), x=[512, 128], y=8, z=[1, 4],
    ...              zero=[3, 1], remat=["checkpoints", "full"], schedule=["1f1b", "interleaved"],
    ...              virtual_stages=[1, 2])
    >>> e.bubble.tolist(), (e.memory.total / 1e9).round(1).tolist()
    ([0.0, 0.09375], [41.1, 18.6])
    """
    return evaluate(*split_keywords(keywords))


def split_keywords(keywords: dict) -> tuple[Cluster, Workload, Layout, Options]:
    """The four values from their fields given as keywords; an unknown keyword raises."""
    groups = {kind: tuple(kind.__dataclass_fields__) for kind in VALUES}
    unknown = set(keywords) - {name for names in groups.values() for name in names}
    if unknown:
        known = ", ".join(name for names in groups.values() for name in names)
        raise TypeError(
            f"estimate() got an unexpected keyword {sorted(unknown)[0]!r}; allowed: {known}"
        )
    for needed in ("chip", "model", "batch"):
        if needed not in keywords:
            raise TypeError(f"estimate() needs the keyword {needed!r}")
    return tuple(
        kind(**{k: keywords[k] for k in names if k in keywords}) for kind, names in groups.items()
    )


def _resolved(layout: Layout) -> Layout:
    """The layout with its strategy's own ZeRO stage where none is given."""
    if layout.zero is not None:
        return layout
    return dataclasses.replace(layout, zero=STRATEGIES[layout.strategy].zero)


def _evaluate(cluster, workload, layout, options, placed: Placement) -> Estimate:
    chip, model, P = cluster.chip, workload.model, cluster.pods
    B, X, Y, Z, m = workload.batch, placed.x, placed.y, placed.z, placed.microbatches
    chips = math.prod(cluster.slice_shape) * P
    # The stack: how fast it runs (MODEL.md §C.3) and what it keeps in memory (MODEL.md §E.2).
    profile = profile_of(chip, options)
    whole_or_sharded = STRATEGIES[layout.strategy].traffic
    traffic = scalar(
        np.where(np.asarray(layout.zero) == 3, whole_or_sharded[1], whole_or_sharded[0])
    )
    span = placed.span
    # A MoE layer computes its active width and holds (E/EP + S)·F_e per chip (MODEL.md §D.1, §D.2).
    held = held_width(model, layout.ep)
    a2a = 0.0 if model.moe is None else all_to_all(chip, model, layout.ep)(X, Y, placed.mx)
    kv = (
        0.0
        if np.all(np.asarray(layout.cp) == 1)
        else per_choice(
            layout.cp_kind,
            lambda kind: cp_seconds_per_token(
                chip=chip,
                model=model,
                cp=layout.cp,
                kind=kind,
                seq_len=workload.seq_len or 1,
                x=X,
                y=Y,
                mx=placed.mx,
            ),
        )
    )
    on_mesh = dict(
        strategy=traffic,
        d_model=model.d_model,
        d_ff=model.active_width,
        d_ff_weights=held,
        x=X,
        y=Y,
        pods=P,
        mx=placed.mx,
        my=placed.my,
        exact=options.exact,
        wrap_x=span.wrap_x,
        wrap_y=span.wrap_y,
        flops=chip.flops,
        ici_bw=chip.ici_bw,
        dcn_bw=chip.dcn_bw,
        ep_seconds=a2a,
        cp_seconds=kv,
    )
    layer = layer_times(batch=B, **on_mesh)
    params = param_count(**model.dims())
    # a token's FLOPs: the experts it goes through
    flops = _flops(workload, layout, options, params.active)
    v = layout.virtual_stages
    idle = bubble(schedule=layout.schedule, stages=Z, microbatches=m, virtual_stages=v)
    # Each chip of a stage sends its [B/(X·Y·P), D] share of the activations on (MODEL.md §A.6,
    # §B.6).
    stage_traffic = stage_traffic_time(
        batch=B / (X * Y * P),
        d_model=model.d_model,
        stages=Z,
        microbatches=m,
        bandwidth=chip.ici_bw,
        virtual_stages=v,
    )
    times = _step(workload, options, layer, flops, params.active, chips, chip.flops, idle)
    spans = dict(mx=np.where(placed.mx > 0, placed.mx, 1), my=np.where(placed.my > 0, placed.my, 1))
    e = Estimate(
        cluster=cluster,
        workload=workload,
        layout=layout,
        options=options,
        x=X,
        y=Y,
        z=Z,
        mx=placed.mx,
        my=placed.my,
        wrap_x=span.wrap_x,
        wrap_y=span.wrap_y,
        microbatches=m,
        params=params,
        layer=layer,
        crossover_batch=crossover_batch(**on_mesh),
        critical_tokens_per_chip=critical_tokens_per_chip(
            strategy=layout.strategy,
            flops=chip.flops,
            ici_bw=chip.ici_bw,
            d_ff=model.active_width,
            stages=Z,
            d_ff_weights=held,
            **spans,
        ),
        tp_limit=tp_limit(
            flops=chip.flops, ici_bw=chip.ici_bw, d_ff=model.active_width, my=spans["my"]
        ),
        critical_tokens_per_pod=critical_tokens_per_pod(
            flops=chip.flops, dcn_bw=chip.dcn_bw, weights_per_compute=held / model.active_width
        ),
        x_opt=x_opt(batch=B / P, d_ff=held, chips=math.prod(cluster.slice_shape) // Z, **spans),
        memory=_memory(workload, layout, options, placed, P, params.total),
        peak=peak_memory(
            workload=workload,
            layout=layout,
            placed=placed,
            pods=P,
            params=params,
            profile=profile,
            overhead=options.overhead_bytes,
        ),
        flops_per_token=flops["model"],
        hardware_flops_per_token=flops["hardware"],
        bubble=idle,
        stage_traffic=stage_traffic,
        training_time=_training_time(workload, times["step_time"]),
        **times,
    )
    predicting = options.mfu is None and options.measured_step_time is None
    return _predicted(e, profile) if predicting else e


def _predicted(e: Estimate, profile) -> Estimate:
    """The estimate with its step predicted term by term (MODEL.md §C.2, §C.5): MFU and HFU
    follow."""
    remat = np.asarray(e.remat)
    terms = predict(
        e=e,
        profile=profile,
        remat_forward=(remat == "full") * 1.0,
        attention_forward=(remat == "selective") * 1.0,
    )
    step = sum(terms.values())
    peak = e.chips * e.chip.flops
    return dataclasses.replace(
        e,
        step_time=step,
        compute_time=terms["matmul"] + terms["memory_bound"],
        mfu=e.batch * e.flops_per_token / (peak * step),
        hfu=e.batch * e.hardware_flops_per_token / (peak * step),
        training_time=_training_time(e.workload, step),
        step_breakdown=terms,
    )


def _flops(workload, layout, options, Psi) -> dict:
    """Model FLOPs per token, and hardware FLOPs with the recompute (MODEL.md §B.1) and a MoE's
    padding to its capacity factor (MODEL.md §D.2): work done that trains nothing."""
    model = workload.model
    shape = dict(
        layers=model.layers,
        seq_len=workload.seq_len or 1,
        heads=model.heads,
        head_dim=model.head_dim,
    )
    f = flops_per_token(params=Psi, attention=options.attention_flops, **shape)

    def recompute(policy):
        return recompute_flops_per_token(
            params=Psi, remat=policy, attention=options.attention_flops, **shape
        )

    return {"model": f, "hardware": f + per_choice(layout.remat, recompute) + _padding_flops(model)}


def _padding_flops(model) -> float:
    """6·(CF − 1)·k/(k + S) of the experts' active parameters: the padded tokens' FLOPs per
    token."""
    if model.moe is None:
        return 0.0
    moe, c = model.moe, 3 if model.gated else 2
    experts = (
        (moe.top_k + moe.shared) * c * model.d_model * moe.d_ff * (model.layers - moe.dense_layers)
    )
    return 6 * (model.padded_work - 1) * experts


def _step(workload, options, layer, flops, Psi, chips, C, bubble) -> dict:
    """Compute, exposed communication, the step, and the utilisation it achieves (MODEL.md §A.10,
    §B.1).

    The chips sustain ``mfu`` of peak on every FLOP they do, recompute included: compute takes
    B·f_hw/(N·C·η). The exposed communication is the layer's communication per compute over the
    whole model's compute at peak. A step is the longer of the two, stretched by the bubble; the
    MFU and HFU reported are what that step achieves. A measured step replaces it instead.
    """
    B = workload.batch
    ideal = B * flops["hardware"] / (chips * C)  # the step's FLOPs at peak
    # The layer is the chapter's two-matrix MLP; the rest of the model moves and computes in the
    # same proportion, so its communication per compute scales to the whole model.
    comm = layer.t_comms / layer.t_math * 6 * B * Psi / (chips * C)
    if options.measured_step_time is None:
        # None: predicted afterwards
        compute = ideal / (1.0 if options.mfu is None else options.mfu)
        step = np.maximum(compute, comm) * (1 + bubble)
    else:
        step = np.broadcast_arrays(
            np.asarray(options.measured_step_time, dtype=float), ideal * bubble
        )[0]
        short = ideal > step
        if np.any(short):  # the first layout whose measured step is shorter than its FLOPs at peak
            need, got = (np.broadcast_to(a, short.shape)[short][0] for a in (ideal, step))
            raise refuse(
                "measured_step_time",
                f"at least {need:.4g} s, what this layout's FLOPs take at the chips'"
                " peak (a shorter step would mean a utilisation above 100%)",
                f"{got:g}",
            )
        compute = step
    return {
        "compute_time": compute,
        "comm_time": comm,
        "step_time": step,
        "mfu": B * flops["model"] / (chips * C * step),
        "hfu": ideal / step,
    }


def _memory(workload, layout, options, placed: Placement, P, Psi):
    """Memory per chip (MODEL.md §A.4, §B.3, §B.4, §B.8, §D.2), the activations of the microbatches
    in flight.

    A MoE model's routed experts are split over EP chips of the data axis, and what ZeRO shards of
    them is sharded over the X/EP chips that hold the same experts.
    """
    model, precision = workload.model, workload.precision
    X, Y, Z, m, v, EP = (
        placed.x,
        placed.y,
        placed.z,
        placed.microbatches,
        layout.virtual_stages,
        layout.ep,
    )
    routed = routed_params(model)
    # The busiest stage holds v·ceil(L/(Z·v)) layers: it counts as L over that many stages.
    Z_busiest = stage_share(layers=model.layers, stages=Z, virtual_stages=v)
    shape = dict(
        layers=model.layers,
        d_model=model.d_model,
        d_ff=model.active_width,
        batch=workload.batch,
        z=Z_busiest,
        pods=P,
        zero=layout.zero,
        gated=model.gated,
        weight_bytes=precision.weight_bytes,
        grad_bytes=precision.grad_bytes,
        optimizer_bytes=precision.optimizer_bytes,
        activation_bytes=precision.activation_bytes,
    )
    memory = memory_per_chip(params=Psi - routed, x=X, y=Y, **shape)
    if routed:
        experts = memory_per_chip(params=routed, x=X / EP, y=Y * EP, **shape)
        memory = dataclasses.replace(
            memory,
            params=memory.params + experts.params,
            grads=memory.grads + experts.grads,
            optimizer=memory.optimizer + experts.optimizer,
        )

    # Microbatches whose activations a stage holds at once (MODEL.md §B.4, §B.6).
    in_flight = in_flight_microbatches(
        schedule=layout.schedule, stages=Z, microbatches=m, virtual_stages=v
    )

    def kept(policy):  # the chapter's checkpoints of one microbatch, or Korthikanti et al.'s bytes
        if policy == "checkpoints":
            return memory.activations / m * in_flight
        # a chip's s/CP tokens of each of its sequences (MODEL.md §D.3)
        per_layer = activation_bytes_per_layer(
            seq_len=workload.seq_len / layout.cp,
            microbatch_seqs=workload.batch / workload.seq_len / (X / layout.cp * P * m),
            d_model=model.d_model,
            heads=model.heads,
            tp=Y,
            remat=policy,
            sequence_parallel=layout.sequence_parallel,
        )
        return per_layer * model.layers / Z_busiest * in_flight

    # Full recompute keeps only each layer's input: the dispatch buffers are rebuilt in the backward
    # pass.
    dispatch = _dispatch_buffers(workload, placed, P, in_flight, Z_busiest) * (
        np.asarray(layout.remat) != "full"
    )
    activations = per_choice(layout.remat, kept) + dispatch
    return dataclasses.replace(
        memory, activations=activations, overhead=np.asarray(options.overhead_bytes, float)
    )


def _dispatch_buffers(workload, placed: Placement, P, in_flight, Z_busiest):
    """Each MoE layer keeps its tokens' k copies, sorted by expert, for the backward pass
    (``experts.dispatch_bytes``), on the stage's layers, per microbatch in flight."""
    model = workload.model
    # a chip's, one microbatch
    tokens = workload.batch / (placed.x * placed.y * P * placed.microbatches)
    per_token = dispatch_bytes(model, workload.precision.activation_bytes)
    return per_token * tokens * model.layers / Z_busiest * in_flight


def _training_time(workload, step):
    return (
        None
        if workload.tokens is None
        else time_to_train(tokens=workload.tokens, batch=workload.batch, step_time=step)
    )


def compare_strategies(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options
) -> dict:
    """Each strategy's own layout (its default split and ZeRO stage) with the rest of ``layout``
    kept: strategy -> ``Estimate``, or the ``InputError`` that says why it cannot run."""
    out = {}
    for name in STRATEGIES:
        own = dataclasses.replace(layout, strategy=name, x=None, y=None, zero=None, axis_roles=None)
        try:
            out[name] = evaluate(cluster, workload, own, options)
        except InputError as err:
            out[name] = err
    return out
