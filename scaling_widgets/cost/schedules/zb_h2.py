"""ZB-H2 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, sec. 2.2): ZB-H1 with a longer
warm-up, 2(Z − r) − 1 forwards on stage r, and twice as many W passes put off, 2r, so that every
stage, once started, never waits (MODEL.md §B.6).

Each stage is busy from its first pass to its last, but the stages start and end (Z − 1) forwards
apart: the paper's zero bubble is the steady state of steps that overlap, which needs its
"post-validation" of the optimizer step. The stacks we model all clip gradients by their global
norm, a sync that ends the step on every stage at once, so a step idles (Z − 1)/(3m) of its work
as ZB-H1 does (a non-V schedule cannot idle less with the last stage starting Z − 1 forwards
late), holding 2Z − 1 microbatches on the first stage instead of Z: it is here so that a user
can see it, and the planner never prefers it (no stack we model runs it).
"""

from __future__ import annotations

import numpy as np

from .one_f_one_b import logits_in_flight
from .zb_h1 import bubble

NAME, LABEL, ORDER = "zb-h2", "ZB-H2", 4
VIRTUAL_STAGES = (1,)
NEEDS = "m ≥ 2Z − 1"
__all__ = ["bubble", "in_flight", "logits_in_flight", "passes", "runs"]


def runs(*, stages: np.ndarray, microbatches: np.ndarray) -> np.ndarray:
    """Where the schedule can run: m ≥ 2Z − 1, enough microbatches to fill its warm-up (ZB-H2's
    and ZBV's).

    Parameters
    ----------
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.

    Returns
    -------
    runs : np.ndarray of bool
        True where the schedule can run m microbatches on Z stages.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: ZB-H2 and ZBV).
    .. [2] P. Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, sec. 2.2.
    .. [3] P. Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024.
    """
    return microbatches >= 2 * stages - 1


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """2(Z − r) − 1, its warm-up's forwards: 2Z − 1 on the first stage, twice 1F1B's less one.
    The W passes put off hold less, what the weights' gradients need (the paper's M_W).

    Parameters
    ----------
    stage : float or array_like
        r, the pipeline stage, 0 the first.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the stage holds at the start of its first backward
        pass [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: ZB-H2) and §E.1 (what the peak holds).
    .. [2] P. Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, sec. 2.2.
    """
    return np.minimum(2 * (stages - stage) - 1, microbatches)


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """2(Z − d) − 1 forwards; then a B and a forward in turn, a W between them once 2d have been
    put off; then the last B passes, each with a W, and the W passes left.

    Parameters
    ----------
    device : int
        d, the device (0 the first), which runs stage d.
    stages : int
        Z, the pipeline stages.
    microbatches : int
        m, the microbatches a step.
    virtual_stages : int
        v, the virtual stages a device runs; unused.

    Returns
    -------
    passes : list of tuple of (str, int, int)
        The device's passes in the order it runs them, each (kind, microbatch, chunk): kind "F" a
        forward, "B" the input's gradient, "W" the weights'; chunk the virtual stage of the model
        the pass runs, 0 the first layers.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: ZB-H2).
    .. [2] P. Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, sec. 2.2.
    """
    m, d = microbatches, device
    warmup = min(2 * (stages - d) - 1, m)
    inputs = [("B", j, d) for j in range(m)]
    weights = [("W", j, d) for j in range(m)]
    order, done_b, done_w = [("F", j, d) for j in range(warmup)], 0, 0
    for j in range(warmup, m):
        order.append(inputs[done_b])
        done_b += 1
        if done_b > 2 * d:  # the W before the next forward: no more than 2Z − 1 held
            order.append(weights[done_w])
            done_w += 1
        order.append(("F", j, d))
    for b in inputs[done_b:]:
        order.append(b)
        done_b += 1
        if done_b > 2 * d and done_w < m:
            order.append(weights[done_w])
            done_w += 1
    return order + weights[done_w:]
