"""Everything MODEL.md §A.10 reports about a layout: ``evaluate(cluster, workload, layout,
options)``.

This is the one path the CLI, the panel and the planner take. The four values checked their own
fields when they were built; ``feasible.together`` checks them against each other, ``place`` puts
the groups on the slice and refuses what cannot run, then the times and the memory follow. Batch
and every knob of a layout broadcast (see ``Layout``). ``estimate(**keywords)`` is the same call
with the four values' fields as keywords.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np

from . import blocks
from .checks import scalar
from .choices import per_choice
from .cluster import feasible
from .cluster.placement import Placement, place
from .memory.chapter import layout_memory
from .memory.peak import peak_memory
from .result import Estimate
from .run import with_run
from .schedules import bubble
from .search.fastest import fastest_microbatches, fastest_split
from .stacks import REGISTRY
from .step.chapter import chapter_step, time_to_train
from .step.pipeline import stage_traffic_time
from .step.predict import predict
from .step.profiles import default_stack, profile_of
from .strategies import STRATEGIES
from .transformer.context import cp_seconds_per_token
from .transformer.counts import param_count, token_flops
from .transformer.experts import layer_keywords
from .transformer.layer import LayerTimes, crossover_batch, crossover_of, layer_times
from .transformer.thresholds import layout_thresholds
from .values import Cluster, Layout, Options, Workload, computed, split_keywords


def evaluate(
    cluster: Cluster,
    workload: Workload,
    layout: Layout | None = None,
    options: Options | None = None,
) -> Estimate:
    """Evaluate a layout: per-layer times, thresholds, memory, step time (MODEL.md §A.3 to §A.6,
    §A.10).

    Raises ``InputError`` (a ``ValueError`` naming the field) for a value out of range or a
    layout that cannot run (``feasible.together``, ``place``).

    Parameters
    ----------
    cluster, workload : the chips, and what is trained on them
    layout : how the work is spread; None: ``Layout()``, the strategy's own split and ZeRO stage
    options : how the numbers are read; None: ``Options()``, the step predicted term by term

    Returns
    -------
    estimate : Estimate
        Everything MODEL.md §A.10 reports, one entry per layout where the inputs are arrays
        (times [s], memory [bytes], batch [tokens]).

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> chip, model = HARDWARE["tpu-v5p"], MODELS["llama-2-13b"]
    >>> e = evaluate(Cluster(chip, (16, 16, 16)), Workload(model, [5e5, 3e6]), Layout(),
    ...              Options(mfu=0.4))
    >>> e.x.tolist(), e.y.tolist(), e.compute_bound.tolist(), e.step_time.round(2).tolist()
    ([512, 1024], [8, 4], [False, True], [0.05, 0.31])
    """
    options = options or Options()
    layout = _resolved(layout or Layout(), cluster, options)
    shape = blocks.layouts_shape(cluster, workload, layout, options)
    if math.prod(shape) > blocks.BLOCK:  # a large grid runs faster in cache-sized blocks
        joined = blocks.in_blocks(evaluate, shape, cluster, workload, layout, options)
        return _whole(joined, cluster, workload, layout, options)
    feasible.together(cluster, workload, layout, options)
    layout = fastest_split(cluster, workload, layout, options, evaluate)
    layout = fastest_microbatches(cluster, workload, layout, options, evaluate)
    placed = place(cluster, workload, layout, options.exact)
    return _evaluate(cluster, workload, layout, options, placed)


def per_layer(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options
) -> tuple[LayerTimes, np.ndarray]:
    """A layout's layer alone, by ``evaluate``'s checks and placement: its times and its crossover
    batch (MODEL.md §A.3), what a roofline draws, without the memory or the step.

    Returns
    -------
    layer : LayerTimes
        Per-chip times of each pass [s].
    crossover : np.ndarray
        The smallest global batch at which the layout is compute-bound [tokens].
    """
    layout = _resolved(layout, cluster, options)
    feasible.together(cluster, workload, layout, options)
    placed = place(cluster, workload, layout, options.exact)
    on_mesh = _on_mesh(cluster, workload, _with_placed_cp(layout, placed), options, placed)
    return layer_times(batch=workload.batch, **on_mesh), crossover_batch(**on_mesh)


def _with_placed_cp(layout: Layout, placed: Placement) -> Layout:
    """The layout with the CP it runs with: as given, or implied by whole sequences (a whole
    number we computed: set, not checked again, which would cost the planner a tenth of its
    time)."""
    if layout.cp is not None:
        return layout
    placed_cp = copy.copy(layout)
    object.__setattr__(placed_cp, "cp", scalar(placed.cp))
    return placed_cp


def validate(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> None:
    """The check ``evaluate`` makes, without the evaluation: raises ``InputError`` or returns.

    A measured step is the exception: whether it is possible depends on the layout's FLOPs at
    peak, which only the evaluation knows (``step.chapter.chapter_step``).

    Returns
    -------
    None
        When the four values can run together; otherwise it raises ``InputError``.
    """
    layout = _resolved(layout, cluster, options)
    feasible.together(cluster, workload, layout, options)
    placed = place(cluster, workload, layout, options.exact)
    if options.measured_step_time is not None:
        _evaluate(cluster, workload, layout, options, placed)


def estimate(**keywords: Any) -> Estimate:
    """``evaluate`` with the fields of ``Cluster``, ``Workload``, ``Layout`` and ``Options`` as
    keywords.

    Returns
    -------
    estimate : Estimate
        As ``evaluate`` returns it (times [s], memory [bytes], batch [tokens]).

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], batch=16e6,
    ...              seq_len=4096, slice_shape=(16, 16, 16), x=[512, 128], y=8, z=[1, 4],
    ...              zero=[3, 1], remat=["checkpoints", "full"], schedule=["1f1b", "interleaved"],
    ...              virtual_stages=[1, 2])
    >>> e.microbatches.tolist(), e.bubble.tolist(), (e.memory.total / 1e9).round(1).tolist()
    ([1, 15], [0.0, 0.1], [41.1, 19.6])
    """
    return evaluate(*split_keywords(keywords))


def _whole(e: Estimate, cluster, workload, asked: Layout, options) -> Estimate:
    """An estimate joined from blocks, with what describes the whole grid: the values asked
    for, and whether any layout runs a CP the batch implied."""
    implied = asked.cp is None and bool(np.any(np.asarray(e.layout.cp) > 1))
    return dataclasses.replace(
        e, cluster=cluster, workload=workload, options=options, cp_implied=implied
    )


def _resolved(layout: Layout, cluster: Cluster, options: Options) -> Layout:
    """The layout with its strategy's own ZeRO stage where none is given, and sequence parallelism
    where the stack's TP always shards the sequence (torchtitan's; MODEL.md §F.2)."""
    if layout.zero is None:
        layout = computed(layout, zero=STRATEGIES[layout.strategy].zero)
    stack = options.stack or (default_stack(cluster.chip) if options.profile is None else None)
    if stack is not None and REGISTRY[stack].tp_shards_sequence and not layout.sequence_parallel:
        layout = computed(layout, sequence_parallel=True)
    return layout


def _evaluate(cluster, workload, layout, options, placed: Placement) -> Estimate:
    """The layout's layer, thresholds, memory and step, composed into an ``Estimate``."""
    implied = layout.cp is None
    layout = _with_placed_cp(layout, placed)
    chip, model, P = cluster.chip, workload.model, cluster.pods
    B, Z, m, v = workload.batch, placed.z, placed.microbatches, layout.virtual_stages
    # The stack: how fast it runs (MODEL.md §C.3) and what it keeps in memory (MODEL.md §E.2).
    profile = profile_of(chip, options)
    on_mesh = _on_mesh(cluster, workload, layout, options, placed)
    layer = layer_times(batch=B, **on_mesh)
    params = param_count(**model.dims())
    flops = token_flops(workload, layout, options, params.active)  # the experts a token meets
    idle = bubble(schedule=layout.schedule, stages=Z, microbatches=m, virtual_stages=v)
    chips, C = math.prod(cluster.slice_shape) * P, chip.flops
    times = chapter_step(workload, options, layer, flops, params.active, chips, C, idle)
    e = Estimate(
        cluster=cluster,
        workload=workload,
        layout=layout,
        options=options,
        x=placed.x,
        y=placed.y,
        z=Z,
        mx=placed.mx,
        my=placed.my,
        wrap_x=placed.span.wrap_x,
        wrap_y=placed.span.wrap_y,
        microbatches=m,
        cp_implied=implied and np.any(np.asarray(layout.cp) > 1),
        params=params,
        layer=layer,
        crossover_batch=crossover_of(layer_times(batch=0.0, **on_mesh), layer, B),
        **layout_thresholds(cluster, workload, layout, placed),
        memory=layout_memory(workload, layout, options, placed, P, params.total),
        peak=peak_memory(
            workload=workload,
            layout=layout,
            placed=placed,
            pods=P,
            params=params,
            profile=profile,
            overhead=options.overhead_bytes,
            fp8=options.matmul_dtype == "fp8",
        ),
        flops_per_token=flops["model"],
        hardware_flops_per_token=flops["hardware"],
        bubble=idle,
        stage_traffic=_stage_traffic(cluster, workload, layout, placed),
        training_time=_training_time(workload, times["step_time"]),
        **times,
    )
    predicting = options.mfu is None and options.measured_step_time is None
    return with_run(_predicted(e, profile) if predicting else e)


def _on_mesh(cluster, workload, layout, options, placed: Placement) -> dict:
    """The layer's keywords for this placement (``layer_times``, ``crossover_batch``): the traffic
    of the strategy at its ZeRO stage, the widths, the groups and spans, the chip, and the expert
    and context-parallel traffic per token (MODEL.md §A.3, §D.2, §D.3)."""
    chip, model, X, Y = cluster.chip, workload.model, placed.x, placed.y
    whole, sharded = STRATEGIES[layout.strategy].traffic  # weights whole on X, or sharded (ZeRO-3)
    traffic = scalar(np.where(np.asarray(layout.zero) == 3, sharded, whole))
    # a MoE layer holds (E/EP + S)·F_e, EP of X (or of TP x X) split the experts (MODEL.md §D.2)
    experts = layer_keywords(
        chip=chip, model=model, ep=layout.ep, etp=layout.etp, x=X, y=Y, mx=placed.mx, my=placed.my
    )

    def kv(kind):
        return cp_seconds_per_token(
            chip=chip,
            model=model,
            cp=layout.cp,
            kind=kind,
            seq_len=workload.seq_len or 1,
            x=X,
            y=Y,
            mx=placed.mx,
        )

    return dict(
        strategy=traffic,
        d_model=model.d_model,
        d_ff=model.active_width,  # a MoE layer computes its active width (MODEL.md §D.1)
        x=X,
        y=Y,
        pods=cluster.pods,
        mx=placed.mx,
        my=placed.my,
        exact=options.exact,
        wrap_x=placed.span.wrap_x,
        wrap_y=placed.span.wrap_y,
        flops=chip.flops,
        ici_bw=chip.ici_bw,
        dcn_bw=chip.dcn_bw,
        **experts,
        cp_seconds=0.0 if np.all(np.asarray(layout.cp) == 1) else per_choice(layout.cp_kind, kv),
    )


def _stage_traffic(cluster, workload, layout, placed: Placement):
    """Each chip of a stage sends its [B/(X·Y·P), D] share of the activations on (MODEL.md §A.6,
    §B.6)."""
    return stage_traffic_time(
        batch=workload.batch / (placed.x * placed.y * cluster.pods),
        d_model=workload.model.d_model,
        stages=placed.z,
        microbatches=placed.microbatches,
        bandwidth=cluster.chip.ici_bw,
        virtual_stages=layout.virtual_stages,
    )


def _predicted(e: Estimate, profile) -> Estimate:
    """The estimate with its step predicted term by term (MODEL.md §C.2, §C.5): MFU and HFU
    follow."""
    remat = np.asarray(e.remat)
    # The chapter's checkpoints keep the MLP's matmul outputs alone: a framework that kept only
    # those would run the attention block again backward. Its memory stays the chapter's count;
    # the predicted step, and the hardware FLOPs, pay for that recompute (MODEL.md §C.2).
    checkpoints = (remat == "checkpoints") * 1.0
    terms = predict(
        e=e,
        profile=profile,
        remat_forward=(remat == "full") * 1.0,
        attention_forward=(remat == "selective") * 1.0,
        rest_forward=checkpoints,
    )
    hidden = {"ep": terms.pop("ep_hidden"), "cp": terms.pop("cp_hidden")}
    step = sum(terms.values())
    peak = e.chips * e.chip.flops
    hardware = e.hardware_flops_per_token + checkpoints * attention_block_flops(e)
    return dataclasses.replace(
        e,
        step_time=step,
        compute_time=terms["matmul"] + terms["memory_bound"],
        mfu=e.batch * e.flops_per_token / (peak * step),
        hfu=e.batch * hardware / (peak * step),
        hardware_flops_per_token=hardware,
        training_time=_training_time(e.workload, step),
        step_breakdown=terms,
        hidden=hidden,
    )


def attention_block_flops(e: Estimate) -> float:
    """The attention block's forward FLOPs per token, all layers: its projections, 2·Ψ_attention,
    and the scores and their weighted sum, 4·L·T·N_h·H (MODEL.md §B.1)."""
    model, T = e.model, e.seq_len or 1
    return 2 * float(e.params.attention) + 4 * model.layers * T * model.heads * model.head_dim


def _training_time(workload, step):
    return (
        None
        if workload.tokens is None
        else time_to_train(tokens=workload.tokens, batch=workload.batch, step_time=step)
    )
