"""ZB-H2 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, sec. 2.2): ZB-H1 with a longer
warm-up, 2(Z − r) − 1 forwards on stage r, and twice as many W passes put off, 2r, so that every
stage, once started, never waits (MODEL.md §B.6).

Each stage is busy from its first pass to its last, but the stages start and end (Z − 1) forwards
apart: the paper's zero bubble is the steady state of steps that overlap, which needs its
"post-validation" of the optimizer step. The stacks we model all clip gradients by their global
norm, a sync that ends the step on every stage at once, so a step idles (Z − 1)/(3m) of its work
as ZB-H1 does (a non-V schedule cannot idle less with the last stage starting Z − 1 forwards
late), holding 2Z − 1 microbatches on every stage instead of Z: it is here so that a user can see
it, and the planner never prefers it.
"""

from __future__ import annotations

import numpy as np

from .one_f_one_b import logits_in_flight
from .zb_h1 import bubble

NAME, LABEL, ORDER = "zb-h2", "ZB-H2", 4
VIRTUAL_STAGES = (1,)
NEEDS = "at least 2Z − 1 microbatches to fill its warm-up"
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
    """2Z − 1 on every stage: 2(Z − r) − 1 forwards of the warm-up, and 2r microbatches whose W
    pass is put off (a microbatch's activations live until its W)."""
    return np.minimum(2 * stages - 1, microbatches) + 0 * stage


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """2(Z − d) − 1 forwards; then a B and a forward in turn, each followed by a W once 2d of them
    have been put off; then the last B passes, each with a W, and the W passes left."""
    m, d = microbatches, device
    warmup = min(2 * (stages - d) - 1, m)
    inputs = [("B", j, d) for j in range(m)]
    weights = [("W", j, d) for j in range(m)]
    order, done_b, done_w = [("F", j, d) for j in range(warmup)], 0, 0
    for j in range(warmup, m):
        order += [inputs[done_b], ("F", j, d)]
        done_b += 1
        if done_b > 2 * d:
            order.append(weights[done_w])
            done_w += 1
    for b in inputs[done_b:]:
        order.append(b)
        done_b += 1
        if done_b > 2 * d and done_w < m:
            order.append(weights[done_w])
            done_w += 1
    return order + weights[done_w:]
