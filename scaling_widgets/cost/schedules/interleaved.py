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
    """Idle time over useful work: (Z − 1)/(v·m).

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages (chunks of layers) a device runs.

    Returns
    -------
    bubble : float or np.ndarray
        The idle time over the useful work of a step (a ratio).

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021, sec. 2.2.
    """
    return (stages - 1) / (virtual_stages * microbatches)


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Microbatches stage r holds: Megatron-LM's warm-up of 2·(Z − r − 1) + (v − 1)·Z
    chunk-forwards plus one, in microbatches of v chunks: min(Z + (Z − 1 − 2r)/v, m); on the first
    stage Z·(1 + (Z − 1)/(Z·v)). With one chunk it is 1F1B's min(Z − r, m).

    Parameters
    ----------
    stage : float or array_like
        r, the pipeline stage, 0 the first.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages (chunks of layers) a device runs.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the stage holds at the start of its first backward pass,
        in microbatches of all v chunks [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.4 (activation memory) and §E.1 (what the peak holds).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021, sec. 2.2.
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/schedules.py`` (``get_pp_rank_microbatches``, the
       warm-up of ``forward_backward_pipelining_with_interleaving``).
    """
    Z, m, v, r = stages, microbatches, virtual_stages, stage
    return np.where(v == 1, np.minimum(Z - r, m), np.minimum(Z + (Z - 1 - 2 * r) / v, m))


def logits_in_flight(
    *, stages: float | np.ndarray, microbatches: float | np.ndarray
) -> float | np.ndarray:
    """The last stage's microbatches whose logits are alive: one, as 1F1B.

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages; unused.
    microbatches : float or array_like
        m, the microbatches a step; it sets only the result's shape.

    Returns
    -------
    microbatches : float or np.ndarray
        The last stage's microbatches whose logits are alive at once [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §E.1 (what the peak holds: logits and loss).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021, sec. 2.2.
    """
    return 1.0 + 0 * microbatches


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """Microbatches in groups of Z, each group through every chunk of the device in turn; a
    warm-up of 2·(Z − d − 1) + (v − 1)·Z chunk-forwards, then one forward and one backward.

    Parameters
    ----------
    device : int
        d, the device (0 the first), which runs chunks d, d + Z, ..., d + (v − 1)·Z.
    stages : int
        Z, the pipeline stages.
    microbatches : int
        m, the microbatches a step; a multiple of Z.
    virtual_stages : int
        v, the virtual stages (chunks of layers) a device runs.

    Returns
    -------
    passes : list of tuple of (str, int, int)
        The device's passes in the order it runs them, each (kind, microbatch, chunk): kind "F" a
        forward, "B" a backward; chunk the virtual stage of the model the pass runs, 0 the first
        layers.

    Raises
    ------
    InputError
        If m is not a multiple of Z.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: the picture).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021, sec. 2.2.
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/schedules.py`` (``get_pp_rank_microbatches``, the
       warm-up of ``forward_backward_pipelining_with_interleaving``).
    """
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
