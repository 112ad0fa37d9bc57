"""The split a layout takes when none is given: the fastest legal one, as the planner ranks
(MODEL.md §A.3, §C).

The chapter's rule (``split.best_split``: compute-bound down to the smallest batch) picks by the
layer alone. A user asks for the split that runs fastest, so every legal split is evaluated, all at
once, and ranked as ``plan`` ranks: one that fits before one that does not, then the shorter
step; a tie (every compute-bound split at an MFU given) goes to the chapter's pick.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..checks import scalar
from ..cluster.placement import split_choices
from ..values import Cluster, Layout, Options, Workload


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
    trial = evaluate(
        _along_last_axis(cluster),
        _along_last_axis(workload),
        dataclasses.replace(_along_last_axis(layout), x=X, y=Y),
        _along_last_axis(options),
    )
    keys = np.broadcast_arrays(~chapters_pick, trial.step_time, ~np.asarray(trial.fits))
    order = np.lexsort(keys, axis=-1)  # the last key first: fits, then the step, then ours
    best = order[..., :1]
    X, Y = np.broadcast_arrays(X, Y, best)[:2]
    x = np.take_along_axis(X, best, axis=-1)[..., 0]
    y = np.take_along_axis(Y, best, axis=-1)[..., 0]
    return dataclasses.replace(layout, x=scalar(x[()]), y=scalar(y[()]))


def _along_last_axis(value):
    """A value whose per-layout arrays gain a last axis, to broadcast against the candidates."""
    changes = {
        field.name: np.asarray(getattr(value, field.name))[..., None]
        for field in dataclasses.fields(value)
        if isinstance(getattr(value, field.name), np.ndarray)
        and getattr(value, field.name).ndim > 0
    }
    return dataclasses.replace(value, **changes) if changes else value
