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

from ..checks import scalar
from ..cluster.placement import default_microbatches, place, split_choices
from ..refusals import InputError
from ..values import Cluster, Layout, Options, Workload, computed


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

    Returns
    -------
    layout : Layout
        With ``x`` and ``y`` set [chips].
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
    Z = 1 if layout.z is None else layout.z
    provisional = (
        {}
        if given
        else {"microbatches": default_microbatches(layout, Z, workload, X, cluster.pods)}
    )
    trial = evaluate(
        _along_last_axis(cluster),
        _along_last_axis(workload),
        computed(_along_last_axis(layout), x=X, y=Y, **provisional),
        _along_last_axis(options),
    )
    fits, step = np.asarray(trial.fits), trial.step_time
    if not given and not fits.any(axis=-1).all():
        # None fits as placed by default: a split that fits with more accumulation (a sequence
        # a microbatch, the least activation memory) goes first, as the microbatches then chosen
        # will make it fit.
        fits, step = _with_leanest_microbatches(cluster, workload, layout, options, evaluate, X, Y)
    keys = np.broadcast_arrays(~chapters_pick, step, ~fits)
    order = np.lexsort(keys, axis=-1)  # the last key first: fits, then the step, then ours
    best = order[..., :1]
    X, Y = np.broadcast_arrays(X, Y, best)[:2]
    x = np.take_along_axis(X, best, axis=-1)[..., 0]
    y = np.take_along_axis(Y, best, axis=-1)[..., 0]
    return computed(layout, x=scalar(x[()]), y=scalar(y[()]))


def _with_leanest_microbatches(cluster, workload, layout, options, evaluate, X, Y):
    """Whether each candidate split fits, and its step, at a sequence a microbatch (each
    replica's whole sequences, at least one): what fits there can be made to fit."""
    if workload.seq_len is None:
        lean = np.ones_like(X)
    else:
        share = workload.batch / (workload.seq_len * X * cluster.pods)
        lean = np.maximum(np.floor(share), 1).astype(np.int64)
    try:
        trial = evaluate(
            _along_last_axis(cluster),
            _along_last_axis(workload),
            computed(_along_last_axis(layout), x=X, y=Y, microbatches=lean),
            _along_last_axis(options),
        )
    except InputError:  # some split cannot run so: nothing more to learn
        return np.zeros(np.shape(X), dtype=bool), np.full(np.shape(X), np.inf)
    return np.asarray(trial.fits), trial.step_time


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

    Returns
    -------
    layout : Layout
        With ``microbatches`` set.
    """
    if layout.microbatches is not None or layout.microbatch_seqs is not None:
        return layout
    if workload.seq_len is None:
        return layout
    try:
        one = place(cluster, workload, computed(layout, microbatches=1), options.exact)
    except InputError:
        return layout  # cannot run at all: the evaluation says why
    per_replica = workload.batch * one.cp / (workload.seq_len * one.x * cluster.pods)
    share = np.maximum(np.floor(per_replica), 1).astype(np.int64)[..., None]
    counts = np.where((SIZES <= share) & (share % SIZES == 0), share // SIZES, 1)
    if np.all(counts == 1):  # at most one sequence a replica: nothing to accumulate
        return computed(layout, microbatches=1)
    if counts.ndim == 1:  # one layout: each count once
        counts = np.unique(counts)
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


def _along_last_axis(value):
    """A value whose per-layout arrays gain a last axis, to broadcast against the candidates."""
    changes = {
        field.name: np.asarray(getattr(value, field.name))[..., None]
        for field in dataclasses.fields(value)
        if isinstance(getattr(value, field.name), np.ndarray)
        and getattr(value, field.name).ndim > 0
    }
    return computed(value, **changes) if changes else value
