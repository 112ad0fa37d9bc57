"""DualPipe (DeepSeek-V3 technical report, sec. 3.2.1; deepseek-ai/DualPipe): microbatches enter
from both ends of the pipeline at once, half each way, so device i holds stage i of the one
direction and stage Z − 1 − i of the other: twice the weights of a stage. Its steady state runs
the forward of one microbatch overlapped with the backward of another, a pair whose expert and
context-parallel traffic hides under the other's compute (MODEL.md §B.6).

DeepSeek-V3's Table 2 gives a bubble of (Z/2 − 1)(F&B + B − 3W), F a stage's forward, B its full
backward, W the weights' part and F&B a pair; with the pair as long as its two passes, B = 2F,
W = F, that is (Z − 2)/(3m) of the work, and Z + 1 microbatches in flight on every device.
"""

from __future__ import annotations

import numpy as np

from .one_f_one_b import logits_in_flight

NAME, LABEL, ORDER = "dualpipe", "DualPipe", 6
VIRTUAL_STAGES = (1,)
WEIGHT_COPIES = 2  # a stage of each direction
ENDS_TOGETHER = True  # the first device starts one direction and ends the other
NEEDS = "m ≥ 2Z, both even"
__all__ = ["bubble", "in_flight", "logits_in_flight", "paired_share", "passes", "runs"]


def runs(*, stages: np.ndarray, microbatches: np.ndarray) -> np.ndarray:
    """Where DualPipe can run: Z and m even, m ≥ 2Z (``DualPipe.step``'s asserts).

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
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipe).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, sec. 3.2.1.
    .. [3] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipe.py`` (``DualPipe.step``).
    """
    return (stages % 2 == 0) & (microbatches % 2 == 0) & (microbatches >= 2 * stages)


def bubble(
    *,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Idle time over useful work, (Z/2 − 1)(F&B + B − 3W) over m(F + B), at F = W = 1, B = 2,
    F&B = 3: (Z − 2)/(3m).

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused.

    Returns
    -------
    bubble : float or np.ndarray
        The idle time over the useful work of a step (a ratio).

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipe).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, sec. 3.2.1
       and Table 2.
    .. [3] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3, README.md``
       (its table of bubbles and memory).
    """
    return (stages - 2) / (3 * microbatches)


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Microbatches a device holds, Z + 1 on every device: Z forwards before its first backward,
    one more while a pair runs.

    Parameters
    ----------
    stage : float or array_like
        r, the device, 0 the first; unused: every device holds the same.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the device holds at once, Z + 1 [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipe) and §E.1 (what the peak holds).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, sec. 3.2.1
       and Table 2.
    .. [3] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3, README.md``
       (its table of bubbles and memory).
    """
    return stages + 1 + 0 * stage * microbatches


def paired_share(*, stages: np.ndarray, microbatches: np.ndarray) -> np.ndarray:
    """The first device's pairs over its m forwards: 2(m/2 − Z + 1) in its main phase and Z/2 − 1
    after it, (m − 3Z/2 + 1)/m (``passes``); on two stages it is also the middle device, whose
    first pass of the main phase is not paired.

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.

    Returns
    -------
    share : np.ndarray
        The share of the first device's forward passes run paired with another microbatch's
        backward pass.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: what pairs hide).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, sec. 3.2.1.
    .. [3] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipe.py`` (``DualPipe.step``).
    """
    return (microbatches - 1.5 * stages + 1 - (stages == 2)) / microbatches


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """A device's passes in order: ``phases`` of the device's half-rank, the first half's phase 0
    the downward direction (microbatches 0 to m/2 − 1, stage i), the second half's the upward one
    (m/2 to m − 1, stage Z − 1 − i).

    Parameters
    ----------
    device : int
        d, the device (0 the first), which runs stage d of the downward direction and
        stage Z − 1 − d of the upward one.
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
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipe).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, sec. 3.2.1.
    .. [3] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipe.py`` (``DualPipe.step``).
    """
    Z, half = stages, microbatches // 2
    down, up = (device, 0), (Z - 1 - device, half)  # (stage, first microbatch)
    first, second = (down, up) if device < Z // 2 else (up, down)
    return realize(
        phases(min(device, Z - 1 - device), Z // 2, half),
        chunks=(first[0], second[0]),
        offsets=(first[1], second[1]),
    )


def phases(h: int, H: int, n: int) -> list:
    """``DualPipe.step``'s eight phases for half-rank h of H with n microbatches a phase, as
    (kind, phase) steps, a pair as two of them; "B" a full backward, "I" a split one whose W
    comes later (first in, first out).

    Parameters
    ----------
    h : int
        The half-rank, 0 to H − 1: the device's min(d, Z − 1 − d) for DualPipe, the device d for
        DualPipeV.
    H : int
        The half-ranks: Z/2 for DualPipe, Z for DualPipeV.
    n : int
        The microbatches a phase: m/2 for DualPipe (each direction's), m for DualPipeV.

    Returns
    -------
    steps : list
        (kind, phase) steps in the order the half-rank runs them: kind "F" a forward, "B" a full
        backward, "I" a backward whose W comes later, "W" (phase None) the weights' part of the
        oldest such backward; a pair is a tuple of two steps.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: DualPipe and DualPipeV).
    .. [2] ``deepseek-ai/DualPipe@3da1bbea53606543d7f5f232338fc58096db30e3,
       dualpipe/dualpipe.py`` (``DualPipe.step``).
    """
    pair = lambda f, b: (("F", f), ("B", b))  # noqa: E731 - one forward overlapped with a backward
    order: list = [("F", 0)] * (2 * (H - h - 1)) + [("F", 0), ("F", 1)] * (h + 1)
    order += [("I", 1), ("W", None), ("F", 1)] * (H - h - 1)
    for i in range(n - 2 * H + h + 1):  # the main phase
        first = [("F", 0), ("B", 1)] if i == 0 and h == H - 1 else [pair(0, 1)]
        order += [*first, pair(1, 0)]
    order += [("B", 1), pair(1, 0)] * (H - h - 1)
    for i in range(h + 1):  # the last half of these backward passes leave their W for later
        order += [("I" if i >= (h + 1) // 2 + (h % 2 == 0) else "B", 1)]
        order += [("I" if i >= (h + 1) // 2 else "B", 0)]
    return order + [("W", None), ("I", 0)] * (H - h - 1) + [("W", None)] * (h + 1)


def realize(steps: list, chunks: tuple, offsets: tuple) -> list:
    """Steps as passes: phase k's j-th forward or backward is microbatch offsets[k] + j on
    virtual stage chunks[k]; a W is that of the oldest split backward.

    Parameters
    ----------
    steps : list
        The (kind, phase) steps of ``phases``, a pair as a tuple of two.
    chunks : tuple of int
        The virtual stage of the model each phase runs, (phase 0's, phase 1's).
    offsets : tuple of int
        The first microbatch of each phase, (phase 0's, phase 1's).

    Returns
    -------
    passes : list of tuple
        The passes, each (kind, microbatch, chunk), an "I" written as a "B"; a pair is a tuple of
        two passes.
    """
    count = {"F": [0, 0], "B": [0, 0]}
    waiting: list = []

    def one(kind, k):
        if kind == "W":
            return ("W", *waiting.pop(0))
        name = "F" if kind == "F" else "B"
        j = offsets[k] + count[name][k]
        count[name][k] += 1
        if kind == "I":
            waiting.append((j, chunks[k]))
        return (name, j, chunks[k])

    return [
        tuple(one(*s) for s in step) if isinstance(step[0], tuple) else one(*step) for step in steps
    ]
