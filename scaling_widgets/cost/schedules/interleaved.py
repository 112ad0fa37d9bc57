"""Interleaved 1F1B (Narayanan et al. 2021, sec. 2.2): each device holds v chunks of layers
("virtual stages"), so a microbatch crosses every device v times and the bubble shrinks to
(Z − 1)/(v·m) (MODEL.md §B.6), at v times the stage-to-stage traffic."""

from __future__ import annotations

import numpy as np

from ..ground.refusals import refuse
from .one_f_one_b import alternate

NAME, LABEL, ORDER = "interleaved", "interleaved 1F1B", 2
VIRTUAL_STAGES = (2, 4)  # the first is the default: with one chunk it is 1F1B


def bubble(
    *,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """(Z − 1)/(v·m)."""
    return (stages - 1) / (virtual_stages * microbatches)


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Megatron-LM's warm-up of 2·(Z − r − 1) + (v − 1)·Z chunk-forwards plus one, in microbatches
    of v chunks: min(Z + (Z − 1 − 2r)/v, m); on the first stage Z·(1 + (Z − 1)/(Z·v)). With one
    chunk it is 1F1B's min(Z − r, m)."""
    Z, m, v, r = stages, microbatches, virtual_stages, stage
    return np.where(v == 1, np.minimum(Z - r, m), np.minimum(Z + (Z - 1 - 2 * r) / v, m))


def logits_in_flight(
    *, stages: float | np.ndarray, microbatches: float | np.ndarray
) -> float | np.ndarray:
    """One, as 1F1B."""
    return 1.0 + 0 * microbatches


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """Microbatches in groups of Z, each group through every chunk of the device in turn; a
    warm-up of 2·(Z − d − 1) + (v − 1)·Z chunk-forwards, then one forward and one backward."""
    Z, m, v = stages, microbatches, virtual_stages
    if m % Z:
        raise refuse("microbatches", f"a multiple of the {Z} stages for an interleaved schedule", m)
    chunks = [device + k * Z for k in range(v)]  # the virtual stages this device holds
    groups = range(0, m, Z)
    forwards = [("F", g + i, c) for g in groups for c in chunks for i in range(Z)]
    backwards = [("B", g + i, c) for g in groups for c in reversed(chunks) for i in range(Z)]
    return alternate(
        forwards, backwards, warmup=min((Z - device - 1) * 2 + (v - 1) * Z, len(forwards))
    )
