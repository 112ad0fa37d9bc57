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
    """m ≥ 2Z − 1."""
    return microbatches >= 2 * stages - 1


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """2(Z − r) − 1, its warm-up's forwards: 2Z − 1 on the first stage, twice 1F1B's less one.
    The W passes put off hold less, what the weights' gradients need (the paper's M_W)."""
    return np.minimum(2 * (stages - stage) - 1, microbatches)


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """2(Z − d) − 1 forwards; then a B and a forward in turn, a W between them once 2d have been
    put off; then the last B passes, each with a W, and the W passes left."""
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
