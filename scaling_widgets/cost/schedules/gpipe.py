"""GPipe (Huang et al. 2019): every microbatch's forward pass, then every backward pass
(MODEL.md §A.6). Each stage idles (Z − 1)/m of the useful work and holds all m microbatches."""

from __future__ import annotations

import numpy as np

NAME, LABEL, ORDER = "gpipe", "GPipe", 0
VIRTUAL_STAGES = (1,)


def bubble(
    *,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """(Z − 1)/m."""
    return (stages - 1) / microbatches


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """All m: no backward pass starts before the last forward."""
    return microbatches + 0 * stage


def logits_in_flight(
    *, stages: float | np.ndarray, microbatches: float | np.ndarray
) -> float | np.ndarray:
    """All m, as the activations."""
    return microbatches


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """All forwards, then all backwards."""
    return [("F", j, device) for j in range(microbatches)] + [
        ("B", j, device) for j in range(microbatches)
    ]
