"""What a layout takes when it is not given: the fastest legal split, and microbatches of whole
sequences that fit (MODEL.md §A.3, §A.6, §C).

The chapter's rule (``split.best_split``: compute-bound down to the smallest batch) picks by the
layer alone. A user asks for the split that runs fastest, so every legal split is evaluated, all at
once, and ranked as ``plan`` ranks: one that fits before one that does not, then the shorter
step; a tie (every compute-bound split at an MFU given) goes to the chapter's pick.

Microbatches split each data replica's sequences into equal whole parts, as frameworks need: the
fastest count that fits (without a pipeline, the fewest: gradient accumulation only to fit; with
one, the bubble shrinks as they grow), else the count that needs the least memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..ground.checks import scalar
from ..ground.refusals import InputError
from ..schedules import runs
from ..values import Cluster, Layout, Options, Workload, computed
from .placement import place
from .split_choice import default_microbatches, replica_sequences, split_choices


def fastest_split(
    cluster: Cluster,
    workload: Workload,
    layout: Layout,
    options: Options,
    evaluate: Callable,
) -> Layout:
    """The layout with its split chosen: ``x`` and ``y`` the fastest legal split (one per layout
    of an array); the layout as it is when its split is given or none is legal.

    ``evaluate`` is the one evaluation (``cost.evaluate``), called once on every candidate.

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and P, the pods.
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length.
    layout : Layout
        The layout as asked for, checked (``feasible.together``).
    options : Options
        How the numbers are read, passed on to ``evaluate``.
    evaluate : callable
        ``evaluate(cluster, workload, layout, options)``: the one evaluation
        (``cost.evaluate``), which returns an ``Estimate``.

    Returns
    -------
    layout : Layout
        With ``x`` and ``y`` set [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the split).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Mixed FSDP and
       Tensor Parallelism.
    """
    choices = split_choices(cluster, workload, layout, options.exact)
    if choices is None:
        return layout
    X, Y, chapters_pick = choices  # (..., candidates): each layout's values gain a last axis
    if X.ndim == 1:  # one layout: the illegal candidates, copies of the chapter's pick, go
        copies = (X == X[chapters_pick]) & (Y == Y[chapters_pick]) & ~chapters_pick
        X, Y, chapters_pick = X[~copies], Y[~copies], chapters_pick[~copies]
    # The microbatches as placed by default for each split, not chosen again for every one.
    given = layout.microbatches is not None or layout.microbatch_seqs is not None

    def trial(x, y, **microbatches):
        return evaluate(
            _along_last_axis(cluster),
            _along_last_axis(workload),
            computed(_along_last_axis(layout), x=x, y=y, **microbatches),
            _along_last_axis(options),
        )

    if given:
        tried = trial(X, Y)
        fits, step = np.asarray(tried.fits), tried.step_time
    else:
        fits, step = _fits_and_steps(trial, cluster, workload, layout, X, Y)
    keys = np.broadcast_arrays(~chapters_pick, step, ~fits)
    order = np.lexsort(keys, axis=-1)  # the last key first: fits, then the step, then ours
    best = order[..., :1]
    X, Y = np.broadcast_arrays(X, Y, best)[:2]
    x = np.take_along_axis(X, best, axis=-1)[..., 0]
    y = np.take_along_axis(Y, best, axis=-1)[..., 0]
    return computed(layout, x=scalar(x[()]), y=scalar(y[()]))


def _fits_and_steps(trial, cluster, workload, layout, X, Y):
    """Whether each candidate split fits, and its step, at the microbatches it takes by default;
    where none fits so, at a sequence a microbatch (each replica's whole sequences, the least
    activation memory): a split that fits there can be made to fit. Both in one evaluation."""
    Z = (1 if layout.z is None else layout.z) * layout.pp_pods  # the stages (MODEL.md §B.10)
    P = cluster.replicas(layout)
    by_default = default_microbatches(layout, Z, workload, X, P)
    X, Y, by_default, lean = np.broadcast_arrays(X, Y, by_default, _leanest(workload, layout, X, P))
    n = X.shape[-1]
    try:
        tried = trial(
            np.concatenate([X, X], axis=-1),
            np.concatenate([Y, Y], axis=-1),
            microbatches=np.concatenate([by_default, lean], axis=-1),
        )
    except InputError:  # some split cannot run at a sequence a microbatch: by default alone
        tried = trial(X, Y, microbatches=by_default)
        return np.asarray(tried.fits), tried.step_time
    fits, step = np.broadcast_arrays(np.asarray(tried.fits), tried.step_time)
    none_fit = ~fits[..., :n].any(axis=-1, keepdims=True)
    return (
        np.where(none_fit, fits[..., n:], fits[..., :n]),
        np.where(none_fit, step[..., n:], step[..., :n]),
    )


def _leanest(workload, layout, X, pods):
    """A sequence a microbatch: each replica's whole sequences (its CP chips sharing them), at
    least one; one microbatch without sequences."""
    if workload.seq_len is None:
        return np.ones_like(X)
    share = replica_sequences(workload, layout, X, pods)
    return np.maximum(np.floor(share), 1).astype(np.int64)


# microbatch sizes tried, in sequences: powers of two (a replica's whole share stands for itself)
SIZES = 2 ** np.arange(13)


def fastest_microbatches(
    cluster: Cluster,
    workload: Workload,
    layout: Layout,
    options: Options,
    evaluate: Callable,
) -> Layout:
    """The layout with its microbatches chosen: a replica's S whole sequences in m equal whole
    microbatches, m = S / b for b a power of two dividing S, or m = 1; the fastest that fits,
    fewer first, else the one that needs the least memory. As it is when the microbatches (or
    their size) are given, without sequences (the chapter counts tokens), or when it cannot run.

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and P, the pods.
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length.
    layout : Layout
        The layout as asked for, checked (``feasible.together``).
    options : Options
        How the numbers are read, passed on to ``evaluate``.
    evaluate : callable
        ``evaluate(cluster, workload, layout, options)``: the one evaluation
        (``cost.evaluate``), which returns an ``Estimate``.

    Returns
    -------
    layout : Layout
        With ``microbatches`` set.
    """
    if layout.microbatches is not None or layout.microbatch_seqs is not None:
        return layout
    if workload.seq_len is None:
        return layout
    try:  # the replicas' sequences, whatever count the schedule needs
        plain = computed(
            layout, microbatches=1, schedule="1f1b", virtual_stages=1, ep_overlap=False
        )
        one = place(cluster, workload, plain, options.exact)
    except InputError:
        return layout  # cannot run at all: the evaluation says why
    replicas = one.x * cluster.replicas(layout)
    per_replica = workload.batch * one.cp / (workload.seq_len * replicas)
    share = np.maximum(np.floor(per_replica), 1).astype(np.int64)[..., None]
    counts = np.where((SIZES <= share) & (share % SIZES == 0), share // SIZES, 1)
    counts = _schedules_own(counts, layout.schedule, one.z)
    if counts is None:
        return layout  # no count the schedule can run: the evaluation says why
    if np.all(counts == 1):  # at most one sequence a replica: nothing to accumulate
        return computed(layout, microbatches=1)
    if counts.ndim == 1:  # one layout: each count once (sorted(set), not np.unique: numpy's
        counts = np.array(sorted(set(counts.tolist())))  # unique imports numpy.ma, 15 ms a start)
    trial = evaluate(
        _along_last_axis(cluster),
        _along_last_axis(workload),
        computed(_along_last_axis(layout), microbatches=counts),
        _along_last_axis(options),
    )
    fits = np.asarray(trial.fits)
    step = np.where(fits, trial.step_time, np.inf)
    memory = np.where(fits, 0.0, trial.peak.reserved)
    keys = np.broadcast_arrays(counts, memory, step, ~fits)
    best = np.lexsort(keys, axis=-1)[..., :1]  # fits, then the step, then memory, then fewer
    m = np.take_along_axis(np.broadcast_to(counts, keys[0].shape), best, axis=-1)[..., 0]
    return computed(layout, microbatches=scalar(m[()]))


def _schedules_own(counts: np.ndarray, schedule, stages) -> np.ndarray | None:
    """The counts the schedule can run (e.g. DualPipe's m ≥ 2Z), each other one replaced by one
    that it can of the same layout; None where a layout has none."""
    schedule = np.asarray(schedule)[..., None] if np.ndim(schedule) else schedule
    ok = runs(schedule=schedule, stages=np.asarray(stages)[..., None], microbatches=counts)
    ok = np.broadcast_to(ok, counts.shape)
    if not ok.any(axis=-1).all():
        return None
    some = np.take_along_axis(counts, np.argmax(ok, axis=-1)[..., None], axis=-1)
    return np.where(ok, counts, some)


def _along_last_axis(value):
    """A value whose per-layout arrays gain a last axis, to broadcast against the candidates."""
    changes = {
        field.name: np.asarray(getattr(value, field.name))[..., None]
        for field in dataclasses.fields(value)
        if isinstance(getattr(value, field.name), np.ndarray)
        and getattr(value, field.name).ndim > 0
    }
    return computed(value, **changes) if changes else value
