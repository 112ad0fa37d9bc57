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

from ..ground.checks import scalar
from ..layout import feasible
from ..layout.fastest import fastest_microbatches, fastest_split
from ..layout.placement import Placement, place
from ..memory.chapter import layout_memory
from ..memory.peak import peak_memory
from ..schedules import bubble
from ..stacks import REGISTRY
from ..step.profiles import default_stack
from ..strategies import STRATEGIES
from ..transformer.counts import param_count
from ..transformer.layer import LayerTimes, crossover_batch, crossover_of, layer_times
from ..values import Cluster, Layout, Options, Workload, computed, split_keywords
from . import blocks
from .layer import layout_thresholds, on_mesh, stage_traffic
from .result import Estimate
from .step import chapter_step, predicted, profile_of, token_flops, training_time, with_run


def evaluate(
    cluster: Cluster,
    workload: Workload,
    layout: Layout | None = None,
    options: Options | None = None,
) -> Estimate:
    """Evaluate a layout: per-layer times, thresholds, memory, step time (MODEL.md §A.3 to §A.6,
    §A.10).

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and the pods.
    workload : Workload
        What is trained on them: the model, the batch B [tokens], its sequences.
    layout : Layout, optional
        How the work is spread. None: ``Layout()``, the strategy's own split and ZeRO stage.
    options : Options, optional
        How the numbers are read. None: ``Options()``, the step predicted term by term.

    Returns
    -------
    estimate : Estimate
        Everything MODEL.md §A.10 reports, one entry per layout where the inputs are arrays
        (times [s], memory [bytes], batch [tokens]).

    Raises
    ------
    InputError
        For a value out of range or a layout that cannot run (``feasible.together``,
        ``place``): a ``ValueError`` that names the field.

    References
    ----------
    .. [1] docs/MODEL.md §A.3 to §A.6 (the strategies, memory, step and pipeline), §A.10 (what
       is reported) and §C (the predicted step).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism; Pipelining; Scaling Between Pods.

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

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and the pods.
    workload : Workload
        What is trained: the model and the batch B [tokens].
    layout : Layout
        How the work is spread.
    options : Options
        How the numbers are read (its ``exact`` corrections).

    Returns
    -------
    layer : LayerTimes
        Per-chip times of each pass [s].
    crossover : np.ndarray
        The smallest global batch at which the layout is compute-bound [tokens].

    Raises
    ------
    InputError
        For a layout that cannot run (``feasible.together``, ``place``).

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer) and §A.10 (the crossover batch).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism.
    """
    layout = _resolved(layout, cluster, options)
    feasible.together(cluster, workload, layout, options)
    placed = place(cluster, workload, layout, options.exact)
    layout = _with_placed_cp(layout, placed)
    keywords = on_mesh(_replicas(cluster, layout), workload, layout, options, placed)
    return layer_times(batch=workload.batch, **keywords), crossover_batch(**keywords)


def _replicas(cluster: Cluster, layout: Layout) -> Cluster:
    """The cluster as the layer and the thresholds count it: its pods the data replicas over DCN,
    groups of the pods a pipeline or a TP group spans (MODEL.md §B.10, §B.11)."""
    return computed(cluster, pods=cluster.replicas(layout))


def _with_placed_cp(layout: Layout, placed: Placement) -> Layout:
    """The layout with the CP it runs with: as given, or implied by whole sequences (a whole
    number we computed: set, not checked again, which would cost the planner a tenth of its
    time)."""
    if layout.cp is not None and np.all(np.asarray(layout.cp_pods) == 1):
        return layout
    placed_cp = copy.copy(layout)  # CP as implied, or its group in all the pods it spans
    object.__setattr__(placed_cp, "cp", scalar(placed.cp))
    return placed_cp


def validate(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> None:
    """The check ``evaluate`` makes, without the evaluation: raises ``InputError`` or returns.

    A measured step is the exception: whether it is possible depends on the layout's FLOPs at
    peak, which only the evaluation knows (``evaluation.step.chapter_step``).

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and the pods.
    workload : Workload
        What is trained: the model, the batch B [tokens], its sequences.
    layout : Layout
        How the work is spread.
    options : Options
        How the numbers are read.

    Returns
    -------
    None
        When the four values can run together; otherwise it raises ``InputError``.

    Raises
    ------
    InputError
        For values that cannot run together, or a layout that cannot be placed.
    """
    layout = _resolved(layout, cluster, options)
    feasible.together(cluster, workload, layout, options)
    placed = place(cluster, workload, layout, options.exact)
    if options.measured_step_time is not None:
        _evaluate(cluster, workload, layout, options, placed)


def estimate(**keywords: Any) -> Estimate:
    """``evaluate`` with the fields of ``Cluster``, ``Workload``, ``Layout`` and ``Options`` as
    keywords.

    Parameters
    ----------
    **keywords
        The fields of the four values by name (``split_keywords``); ``chip``, ``model`` and
        ``batch`` are needed.

    Returns
    -------
    estimate : Estimate
        As ``evaluate`` returns it (times [s], memory [bytes], batch [tokens]).

    Raises
    ------
    TypeError
        For a keyword that is no field, or when ``chip``, ``model`` or ``batch`` is missing.
    InputError
        As ``evaluate``.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], batch=16e6,
    ...              seq_len=4096, slice_shape=(16, 16, 16), x=[512, 128], y=8, z=[1, 4],
    ...              zero=[3, 1], remat=["checkpoints", "full"], schedule=["1f1b", "interleaved"],
    ...              virtual_stages=[1, 2])
    >>> e.microbatches.tolist(), e.bubble.tolist(), (e.memory.total / 1e9).round(1).tolist()
    ([1, 15], [0.0, 0.1], [41.1, 6.4])
    """
    return evaluate(*split_keywords(keywords))


def _whole(e: Estimate, cluster, workload, asked: Layout, options) -> Estimate:
    """An estimate joined from blocks, with what describes the whole grid: the values asked
    for, and whether any layout runs a CP the batch implied."""
    implied = cp_implied(asked.cp, e.layout.cp)
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


def cp_implied(asked, runs) -> bool:
    """Whether a CP runs that nobody asked for: none given, and some layout runs CP > 1 (the
    batch's doing, which the report names, with ``--cp 1`` to refuse it; MODEL.md §D.3).

    Parameters
    ----------
    asked : int, array_like or None
        The CP given; None where the batch sets it.
    runs : int or array_like
        The CP each layout runs.

    Returns
    -------
    implied : bool
        True where the batch switched CP on.
    """
    return asked is None and bool(np.any(np.asarray(runs) > 1))


def _evaluate(cluster, workload, layout, options, placed: Placement) -> Estimate:
    """The layout's layer, thresholds, memory and step, composed into an ``Estimate``."""
    asked_cp = layout.cp
    layout = _with_placed_cp(layout, placed)
    chip, model = cluster.chip, workload.model
    B, Z, m, v = workload.batch, placed.z, placed.microbatches, layout.virtual_stages
    replicas = _replicas(cluster, layout)
    P = replicas.pods
    # The stack: how fast it runs (MODEL.md §C.3) and what it keeps in memory (MODEL.md §E.2).
    profile = profile_of(chip, options)
    keywords = on_mesh(replicas, workload, layout, options, placed)
    layer = layer_times(batch=B, **keywords)
    params = param_count(**model.dims())
    chunk = model.layers / (Z * v)  # a pipeline chunk's layers, on average
    flops = token_flops(workload, layout, options, params, chunk)  # the experts a token meets
    idle = bubble(schedule=layout.schedule, stages=Z, microbatches=m, virtual_stages=v)
    chips, C = cluster.chips, chip.flops
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
        cp_implied=cp_implied(asked_cp, layout.cp),
        params=params,
        layer=layer,
        crossover_batch=crossover_of(layer_times(batch=0.0, **keywords), layer, B),
        **layout_thresholds(replicas, workload, layout, placed),
        memory=layout_memory(workload, layout, options, placed, P, params.total),
        peak=peak_memory(
            workload=workload,
            layout=layout,
            placed=placed,
            pods=P,
            params=params,
            profile=profile,
            overhead=options.overhead_bytes,
            fp8=options.matmul_dtype == "fp8" and not options.fp8_params,
            fp8_matmuls=options.matmul_dtype == "fp8",
            loss_chunks=options.loss_chunks,
            swiglu_fp8=options.swiglu_input_fp8,
            blas_workspace=cluster.chip.blas_workspace,
            memory_limit=cluster.chip.usable_hbm,
            kv_caches=options.kv_caches_held,
        ),
        flops_per_token=flops["model"],
        hardware_flops_per_token=flops["hardware"],
        bubble=idle,
        stage_traffic=stage_traffic(replicas, workload, layout, placed),
        training_time=training_time(workload, times["step_time"]),
        **times,
    )
    predicting = options.mfu is None and options.measured_step_time is None
    return with_run(predicted(e, profile) if predicting else e)
