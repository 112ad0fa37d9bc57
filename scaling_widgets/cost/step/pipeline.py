"""Pipeline parallelism: the bubble, the stage-to-stage traffic and the busiest stage (MODEL.md
§A.6).

Each schedule's own bubble and microbatches in flight are in ``schedules/``; the formulas here
are the chapter's, for GPipe and 1F1B, and interleaved 1F1B's (MODEL.md §B.6).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def bubble_fraction(*, stages: ArrayLike, microbatches: ArrayLike) -> float | np.ndarray:
    """Share of a GPipe/1F1B step that each stage idles: (Z − 1) / (m + Z − 1) (MODEL.md §A.6).

    Returns
    -------
    fraction : float or np.ndarray
        The share of the step each stage idles, from 0 (one stage) towards 1.

    Examples
    --------
    >>> bubble_fraction(stages=[1, 4, 8], microbatches=16).round(3)
    array([0.   , 0.158, 0.304])
    """
    Z, m = np.asarray(stages, dtype=float), np.asarray(microbatches, dtype=float)
    return (Z - 1) / (m + Z - 1)


def bubble_overhead(
    *, stages: ArrayLike, microbatches: ArrayLike, virtual_stages: ArrayLike = 1
) -> float | np.ndarray:
    """Idle time relative to the useful work: (Z − 1) / m for GPipe and 1F1B (MODEL.md §A.6), and
    (Z − 1) / (v·m) for interleaved 1F1B with v virtual stages per device (MODEL.md §B.6).

    Returns
    -------
    overhead : float or np.ndarray
        The idle time over the useful work of a step.

    Examples
    --------
    >>> bubble_overhead(stages=[1, 4, 4], microbatches=16, virtual_stages=[1, 1, 4])
    array([0.      , 0.1875  , 0.046875])
    """
    Z, m, v = (np.asarray(a, dtype=float) for a in (stages, microbatches, virtual_stages))
    return (Z - 1) / (v * m)


def stage_traffic_time(
    *,
    batch: ArrayLike,
    d_model: ArrayLike,
    stages: ArrayLike,
    microbatches: ArrayLike,
    bandwidth: ArrayLike,
    virtual_stages: ArrayLike = 1,
) -> float | np.ndarray:
    """Seconds a step spends sending activations between stages: 2·B·D/(W·m) · (m + Z − 2),
    v times that with v virtual stages (each microbatch crosses every device v times, MODEL.md
    §B.6).

    Each microbatch of B/m tokens moves 2·(B/m)·D bytes each way (MODEL.md §A.6); ``bandwidth`` is
    that of the link between neighbouring stages. Zero with one stage.

    Returns
    -------
    time : float or np.ndarray
        The seconds a step spends sending activations between stages [s].

    Examples
    --------
    >>> stage_traffic_time(batch=1e6, d_model=8192, stages=[1, 4], microbatches=16,
    ...                    bandwidth=1.8e11).round(4)
    array([0.    , 0.1024])
    """
    B, D, Z, m, W, v = (
        np.asarray(a, dtype=float)
        for a in (batch, d_model, stages, microbatches, bandwidth, virtual_stages)
    )
    return (Z > 1) * v * 2 * B * D / (W * m) * (m + Z - 2)


def busiest_stage_layers(
    *, layers: ArrayLike, stages: ArrayLike, virtual_stages: ArrayLike = 1
) -> np.integer | np.ndarray:
    """Layers on the busiest pipeline stage: v·ceil(L/(Z·v)) when Z·v does not divide L (Llama 3
    405B's 126 layers over 16 stages, DeepSeek-V3's 61): that stage sets the pace and the memory.

    Returns
    -------
    layers : np.integer or np.ndarray
        The layers the busiest stage holds (a whole number for whole inputs) [layers].

    Examples
    --------
    >>> busiest_stage_layers(layers=126, stages=[16, 14], virtual_stages=1).tolist()
    [8, 9]
    """
    L, Z, v = (np.asarray(a) for a in (layers, stages, virtual_stages))
    return v * -(-L // (Z * v))


def stage_share(
    *, layers: ArrayLike, stages: ArrayLike, virtual_stages: ArrayLike = 1
) -> float | np.ndarray:
    """The stages' count as the busiest stage sees it, L / its layers: Z when they split evenly.

    Returns
    -------
    stages : float or np.ndarray
        L / ``busiest_stage_layers``: the stages the model would split into at the busiest
        stage's share.
    """
    return layers / busiest_stage_layers(
        layers=layers, stages=stages, virtual_stages=virtual_stages
    )
