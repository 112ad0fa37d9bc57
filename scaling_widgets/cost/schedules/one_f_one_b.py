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
    """Microbatches stage r holds, min(Z − r, m): backward passes start after Z − r forwards.

    Parameters
    ----------
    stage : float or array_like
        r, the pipeline stage, 0 the first.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused: 1F1B runs one chunk a device.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the stage holds at the start of its first backward
        pass [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.4 (activation memory) and §E.1 (what the peak holds).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021, sec. 2.2.
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/schedules.py``
       (``forward_backward_pipelining_without_interleaving``: Z − r − 1 warm-up forwards).
    """
    return np.minimum(stages - stage, microbatches)


def logits_in_flight(
    *, stages: float | np.ndarray, microbatches: float | np.ndarray
) -> float | np.ndarray:
    """The last stage's microbatches whose logits are alive, one: the last stage runs each
    microbatch's backward pass right after its forward.

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
    """A device's passes in order: Z − d − 1 forwards, then one forward and one backward, then
    the last backwards.

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
        forward, "B" a backward; chunk the virtual stage of the model the pass runs, 0 the first
        layers.

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (pipeline) and §B.6 (pipeline schedules: the picture).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021, sec. 2.2.
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/schedules.py``
       (``forward_backward_pipelining_without_interleaving``: Z − r − 1 warm-up forwards).
    """
    forwards = [("F", j, device) for j in range(microbatches)]
    backwards = [("B", j, device) for j in range(microbatches)]
    return alternate(forwards, backwards, warmup=min(stages - device - 1, microbatches))


def alternate(
    forwards: list[tuple[str, int, int]], backwards: list[tuple[str, int, int]], warmup: int
) -> list[tuple[str, int, int]]:
    """``warmup`` forwards, then one forward and one backward in turn, then the backwards left.

    Parameters
    ----------
    forwards : list of tuple of (str, int, int)
        A device's forward passes, (kind, microbatch, chunk), in the order it runs them.
    backwards : list of tuple of (str, int, int)
        Its backward passes, in the order it runs them.
    warmup : int
        The forwards run before the first backward.

    Returns
    -------
    passes : list of tuple of (str, int, int)
        The forwards and backwards interleaved, in the order the device runs them.
    """
    order = forwards[:warmup]
    for f, b in zip(forwards[warmup:], backwards):
        order += [f, b]
    return order + backwards[len(forwards) - warmup :]
