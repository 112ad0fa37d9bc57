"""DualPipeV (Sea AI Lab's "cut-in-half" of DualPipe; deepseek-ai/DualPipe's ``DualPipeV``):
DualPipe folded into a V, as ZBV is: each device holds two chunks, d on the way down and
2Z − 1 − d on the way back, so every microbatch goes down and up the same devices and a device
holds one stage's weights, not two. It keeps DualPipe's pairs of a forward and a backward
(MODEL.md §B.6).

The DualPipe README's table, counted over its PP = 2Z chunks on Z devices: (PP/2 − 1)(F&B + B −
3W) with a chunk's F = W = 1/2 of a device's forward, B = 1 and F&B = 3/2: (Z − 1)/(3m) of the work
(ZB-H1's), with 2Z + 1 chunk-microbatches in flight, Z + 1/2 of the device's layers.
"""

from __future__ import annotations

import numpy as np

from .dualpipe import phases, realize
from .one_f_one_b import logits_in_flight
from .zb_h1 import bubble

NAME, LABEL, ORDER = "dualpipev", "DualPipeV", 7
VIRTUAL_STAGES = (2,)  # two chunks a device, in a V
V_SHAPED = True
ENDS_TOGETHER = True
NEEDS = "m ≥ 2Z"
__all__ = ["bubble", "in_flight", "logits_in_flight", "paired_share", "passes", "runs"]


def runs(*, stages: np.ndarray, microbatches: np.ndarray) -> np.ndarray:
    """Where DualPipeV can run: m ≥ 2Z (``DualPipeV.step``'s assert).

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
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipeV).
    .. [2] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipev.py`` (``DualPipeV.step``).
    """
    return microbatches >= 2 * stages


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Microbatches a device holds, Z + 1/2 on every device: 2Z chunk-forwards before its first
    backward, one more while a pair runs, each chunk half the device's layers.

    Parameters
    ----------
    stage : float or array_like
        r, the device, 0 the first; unused: every device holds the same.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused: DualPipeV runs two chunks a device.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the device holds at once, in microbatches of the device's
        layers, Z + 1/2 [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipeV) and §E.1 (what the peak holds).
    .. [2] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3, README.md``
       (its table of bubbles and memory).
    .. [3] Sea AI Lab, "Cut-in-half", blog post, https://hackmd.io/@ufotalent/r1lVXsa9Jg (linked
       from DualPipe's README.md).
    """
    return stages + 0.5 + 0 * stage * microbatches


def paired_share(*, stages: np.ndarray, microbatches: np.ndarray) -> np.ndarray:
    """The first device's pairs over its 2m chunk-forwards: 2(m − 2Z + 1) in its main phase and
    Z − 1 after it, (2m − 3Z + 1)/(2m) (``passes``).

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.

    Returns
    -------
    share : np.ndarray
        The share of the first device's chunk-forwards run paired with another microbatch's
        backward pass.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: what pairs hide).
    .. [2] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipev.py`` (``DualPipeV.step``).
    """
    return (2 * microbatches - 3 * stages + 1) / (2 * microbatches)


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """A device's passes in order: DualPipe's phases with the device as its own half-rank, of Z,
    and every microbatch in both phases: phase 0 on chunk d, phase 1 on chunk 2Z − 1 − d.

    Parameters
    ----------
    device : int
        d, the device (0 the first), which runs chunks d and 2Z − 1 − d.
    stages : int
        Z, the pipeline stages.
    microbatches : int
        m, the microbatches a step.
    virtual_stages : int
        v, the virtual stages a device runs; unused.

    Returns
    -------
    passes : list of tuple
        The device's passes in the order it runs them, each (kind, microbatch, chunk): kind "F" a
        forward, "B" a backward, "W" the weights' part of a backward split in two; chunk the virtual
        stage of the model the pass runs, 0 the first layers; a pair, a forward and another
        microbatch's backward run overlapped as one, is a tuple of two passes.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipeV).
    .. [2] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipev.py`` (``DualPipeV.step``).
    .. [3] Sea AI Lab, "Cut-in-half", blog post, https://hackmd.io/@ufotalent/r1lVXsa9Jg (linked
       from DualPipe's README.md).
    """
    Z, d = stages, device
    return realize(phases(d, Z, microbatches), chunks=(d, 2 * Z - 1 - d), offsets=(0, 0))
