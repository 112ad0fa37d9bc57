"""A pipeline schedule slot by slot, for a picture (MODEL.md §A.6, §B.6).

Each device runs its forward and backward passes in the order its schedule gives (``passes`` of
the schedule's module in ``schedules/``); a pass starts
when the device is free and the passes it needs have finished (the previous chunk's forward, the
next chunk's backward, and for a weights' pass "W" its own input's "B"). A forward of one chunk
takes 1/v of a slot, a backward 2/v, or split 1/v for B and 1/v for W; a pair of passes run
overlapped (DualPipe's) starts when both can and lasts as long as the two. The idle time left
over is the bubble: (Z − 1)/(v·m) of the work for 1F1B and interleaved, (Z − 1)/m for GPipe,
(Z − 1)/(3m) for ZB-H1, ZB-H2 and DualPipeV, (Z − 2)/(3m) for DualPipe, (Z − 1)/(6m) for ZBV.
This is one layout's picture, so it walks the passes one by one (at most a few thousand).
"""

from __future__ import annotations

import numpy as np

from ..ground.records import record
from ..ground.refusals import refuse
from ..schedules import SCHEDULES


@record(eq=False)
class Timeline:
    """Every pass of a step: its device, start and end [slots], whether it is a backward (B or W),
    its microbatch, its kind ("F", "B" or "W"), and whether it ran paired with another."""

    device: np.ndarray
    start: np.ndarray
    end: np.ndarray
    backward: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray
    paired: np.ndarray

    @property
    def busy(self) -> float:
        """Slots of work per device."""
        return float((self.end - self.start).sum() / (self.device.max() + 1))

    @property
    def bubble(self) -> float:
        """Idle time relative to the work, as the step's makespan shows it: what a step that ends
        in a sync of every stage (the optimizer's) idles."""
        return float(self.end.max() / self.busy - 1)

    @property
    def steady_bubble(self) -> float:
        """Idle time relative to the work between a device's first pass and its last, on the
        device that idles most: what steps that overlap, with no sync between them, idle (the
        zero-bubble papers' count, with their optimizer's post-validation)."""
        spans = [
            self.end[self.device == d].max() - self.start[self.device == d].min()
            for d in range(int(self.device.max()) + 1)
        ]
        return float(max(spans) / self.busy - 1)


def timeline(
    *, schedule: str, stages: int, microbatches: int, virtual_stages: int = 1, combined=False
) -> Timeline:
    """The passes of one step of ``schedule`` on Z stages with m microbatches.

    Parameters
    ----------
    schedule : str
        A name of ``SCHEDULES``: "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zbv",
        "dualpipe" or "dualpipev"; with one stage, 1F1B stands for any.
    stages : int
        Z, the pipeline stages, with Z·m·v up to 20,000.
    microbatches : int
        m, the microbatches a step.
    virtual_stages : int, default 1
        v, the chunks of layers a device holds (interleaved 1F1B).
    combined : bool, default False
        Each forward after one more warm-up forward runs paired with the backward the
        schedule runs next (Megatron-LM's combined 1F1B, a layout's ``ep_overlap``).

    Returns
    -------
    timeline : Timeline
        Every pass of the step: its device, start and end [slots], whether it is a backward,
        its microbatch.

    Raises
    ------
    InputError
        For more than 20,000 passes (Z·m·v), or a schedule whose passes wait on each other.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules, drawn slot by slot) and §A.6 (pipeline).
    .. [2] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    .. [3] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021.
    .. [4] P. Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024.
    .. [5] P. Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024.
    .. [6] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.
    .. [7] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/schedules.py`` (``get_pp_rank_microbatches``: one
       more warm-up forward under ``overlap_moe_expert_parallel_comm``).

    Examples
    --------
    >>> t = timeline(schedule="1f1b", stages=4, microbatches=8)
    >>> round(t.bubble, 3), round(3 / 8, 3)  # (Z - 1)/m
    (0.375, 0.375)
    """
    Z, m, v = stages, microbatches, virtual_stages
    if Z * m * v > 20_000:
        raise refuse("microbatches", "few enough for a picture: Z·m·v up to 20,000 passes", m)
    if Z == 1:  # one stage has no schedule to choose: 1F1B stands for it
        schedule, v = "1f1b", 1
    passes = SCHEDULES[schedule].passes
    orders = [passes(device=d, stages=Z, microbatches=m, virtual_stages=v) for d in range(Z)]
    orders = [[_parts(p) for p in (_combined(o) if combined else o)] for o in orders]
    # a backward whose weights' part runs on its own is as long as a forward
    split = [{(j, c) for pair in order for kind, j, c in pair if kind == "W"} for order in orders]
    done: dict = {}
    free = [0.0] * Z
    rows, position = [], [0] * Z
    while any(position[d] < len(orders[d]) for d in range(Z)):
        progressed = False
        for d in range(Z):
            while position[d] < len(orders[d]):
                pair = orders[d][position[d]]
                needs = [_needs(kind, j, c, Z * v) for kind, j, c in pair]
                if any(need is not None and need not in done for need in needs):
                    break
                start = max([free[d], *(done[need] for need in needs if need is not None)])
                for kind, j, c in pair:
                    end = start + (2.0 if kind == "B" and (j, c) not in split[d] else 1.0) / v
                    rows.append((d, start, end, kind != "F", j, kind, len(pair) > 1))
                    start = end
                done.update({p: end for p in pair})
                free[d] = end
                position[d] += 1
                progressed = True
        if not progressed:  # an order that waits on itself: not a schedule
            raise refuse("schedule", "one whose passes can all run", schedule)
    return Timeline(*(np.array(column) for column in zip(*rows)))


def _combined(order: list) -> list:
    """A 1F1B order (warm-up forwards, then a forward and a backward in turn) as combined 1F1B
    runs it: one more warm-up forward, then each forward paired with the next backward."""
    forwards = [p for p in order if p[0] == "F"]
    backwards = [p for p in order if p[0] == "B"]
    warmup = order.index(backwards[0])  # its own warm-up and the first forward after it
    pairs = list(zip(forwards[warmup:], backwards))
    return forwards[:warmup] + pairs + backwards[len(pairs) :]


def _parts(item) -> tuple:
    """A pass as the passes it runs at once: itself, or the two of a pair."""
    return item if isinstance(item[0], tuple) else (item,)


def _needs(kind: str, j: int, c: int, chunks: int):
    """The pass that must finish first: the previous chunk's forward, the next chunk's backward,
    a weights' pass its own chunk's input backward."""
    if kind == "F":
        return None if c == 0 else ("F", j, c - 1)
    if kind == "W":
        return ("B", j, c)
    return ("F", j, c) if c == chunks - 1 else ("B", j, c + 1)
