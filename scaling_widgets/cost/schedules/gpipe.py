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
    """Idle time over useful work: (Z − 1)/m.

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused: GPipe runs one chunk a device.

    Returns
    -------
    bubble : float or np.ndarray
        The idle time over the useful work of a step (a ratio).

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (pipeline) and §B.6 (pipeline schedules).
    .. [2] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    .. [3] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to
       Scale Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Pipelining.
    .. [4] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    """
    return (stages - 1) / microbatches


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Microbatches a stage holds, all m: no backward pass starts before the last forward.

    Parameters
    ----------
    stage : float or array_like
        r, the pipeline stage, 0 the first; every stage holds all m.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused: GPipe runs one chunk a device.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the stage holds at the start of its first backward
        pass [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.4 (activation memory) and §E.1 (what the peak holds).
    .. [2] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    """
    return microbatches + 0 * stage


def logits_in_flight(
    *, stages: float | np.ndarray, microbatches: float | np.ndarray
) -> float | np.ndarray:
    """The last stage's microbatches whose logits are alive: all m, as the activations.

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages; unused.
    microbatches : float or array_like
        m, the microbatches a step.

    Returns
    -------
    microbatches : float or np.ndarray
        The last stage's microbatches whose logits are alive at once [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §E.1 (what the peak holds: logits and loss).
    .. [2] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    """
    return microbatches


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """A device's passes in order: all forwards, then all backwards.

    Parameters
    ----------
    device : int
        d, the device (0 the first), which runs stage d.
    stages : int
        Z, the pipeline stages; unused.
    microbatches : int
        m, the microbatches a step.
    virtual_stages : int
        v, the virtual stages a device runs; unused.

    Returns
    -------
    passes : list of tuple of (str, int, int)
        The device's passes in the order it runs them, each (kind, microbatch, chunk): kind "F" a
        forward, "B" a backward; chunk the virtual stage of the model the pass runs, 0 the first
        layers.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: the picture).
    .. [2] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    """
    return [("F", j, device) for j in range(microbatches)] + [
        ("B", j, device) for j in range(microbatches)
    ]
