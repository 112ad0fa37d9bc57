"""1F1B (PipeDream-Flush; Narayanan et al. 2021): after a warm-up of forwards, each stage
alternates one forward and one backward pass (MODEL.md §A.6, §B.4). It idles as GPipe does,
(Z − 1)/m, but stage r holds only min(Z − r, m) microbatches."""

from __future__ import annotations

import numpy as np

from .gpipe import bubble  # (Z − 1)/m: it idles as GPipe does

NAME, LABEL, ORDER = "1f1b", "1F1B", 1
VIRTUAL_STAGES = (1,)
__all__ = ["bubble", "in_flight", "logits_in_flight", "passes"]


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """min(Z − r, m): backward passes start after Z − r forwards."""
    return np.minimum(stages - stage, microbatches)


def logits_in_flight(
    *, stages: float | np.ndarray, microbatches: float | np.ndarray
) -> float | np.ndarray:
    """One: the last stage runs each microbatch's backward pass right after its forward."""
    return 1.0 + 0 * microbatches


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """Z − d − 1 forwards, then one forward and one backward, then the last backwards."""
    forwards = [("F", j, device) for j in range(microbatches)]
    backwards = [("B", j, device) for j in range(microbatches)]
    return alternate(forwards, backwards, warmup=min(stages - device - 1, microbatches))


def alternate(
    forwards: list[tuple[str, int, int]], backwards: list[tuple[str, int, int]], warmup: int
) -> list[tuple[str, int, int]]:
    """``warmup`` forwards, then one forward and one backward in turn, then the backwards left."""
    order = forwards[:warmup]
    for f, b in zip(forwards[warmup:], backwards):
        order += [f, b]
    return order + backwards[len(forwards) - warmup :]
