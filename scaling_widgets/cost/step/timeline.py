"""A pipeline schedule slot by slot, for a picture (MODEL.md §A.6, §B.6).

Each device runs its forward and backward passes in the order its schedule gives (``passes`` of
the schedule's module in ``schedules/``); a pass starts
when the device is free and the pass it needs has finished (the previous chunk's forward, the
next chunk's backward, and for a weights' pass "W" its own input's "B"). A forward of one chunk
takes 1/v of a slot, a backward 2/v, or split 1/v for B and 1/v for W: the idle time left over is
the bubble, (Z − 1)/(v·m) of the work for 1F1B and interleaved, (Z − 1)/m for GPipe,
(Z − 1)/(3m) for ZB-H1.
This is one layout's picture, so it walks the passes one by one (at most a few thousand).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..refusals import refuse
from ..schedules import SCHEDULES


@dataclass(frozen=True, eq=False)
class Timeline:
    """Every pass of a step: its device, start and end [slots], whether it is a backward (B or W),
    its microbatch, and its kind ("F", "B" or "W")."""

    device: np.ndarray
    start: np.ndarray
    end: np.ndarray
    backward: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray

    @property
    def busy(self) -> float:
        """Slots of work per device."""
        return float((self.end - self.start).sum() / (self.device.max() + 1))

    @property
    def bubble(self) -> float:
        """Idle time relative to the work, as the step's makespan shows it."""
        return float(self.end.max() / self.busy - 1)


def timeline(*, schedule: str, stages: int, microbatches: int, virtual_stages: int = 1) -> Timeline:
    """The passes of one step of ``schedule`` on Z stages with m microbatches.

    Parameters
    ----------
    schedule : a name of ``SCHEDULES``
    stages, microbatches, virtual_stages : Z, m and v, whole numbers with Z·m·v up to 20,000

    Returns
    -------
    timeline : Timeline
        Every pass of the step: its device, start and end [slots], whether it is a backward,
        its microbatch.

    Examples
    --------
    >>> t = timeline(schedule="1f1b", stages=4, microbatches=8)
    >>> round(t.bubble, 3), round(3 / 8, 3)  # (Z - 1)/m
    (0.375, 0.375)
    """
    Z, m, v = stages, microbatches, virtual_stages
    if Z * m * v > 20_000:
        raise refuse("microbatches", "few enough for a picture: Z·m·v up to 20,000 passes", m)
    passes, split = SCHEDULES[schedule].passes, SCHEDULES[schedule].split_backward
    length = {"F": 1.0 / v, "B": (1.0 if split else 2.0) / v, "W": 1.0 / v}
    orders = [passes(device=d, stages=Z, microbatches=m, virtual_stages=v) for d in range(Z)]
    done: dict = {}
    free = [0.0] * Z
    rows, position = [], [0] * Z
    while any(position[d] < len(orders[d]) for d in range(Z)):
        progressed = False
        for d in range(Z):
            while position[d] < len(orders[d]):
                kind, j, c = orders[d][position[d]]
                need = _needs(kind, j, c, Z * v)
                if need is not None and need not in done:
                    break
                start = max(free[d], done.get(need, 0.0))
                end = start + length[kind]
                done[(kind, j, c)], free[d] = end, end
                rows.append((d, start, end, kind != "F", j, kind))
                position[d] += 1
                progressed = True
        if not progressed:  # an order that waits on itself: not a schedule
            raise refuse("schedule", "one whose passes can all run", schedule)
    device, start, end, backward, micro, kinds = (np.array(column) for column in zip(*rows))
    return Timeline(device, start, end, backward, micro, kinds)


def _needs(kind: str, j: int, c: int, chunks: int):
    """The pass that must finish first: the previous chunk's forward, the next chunk's backward,
    a weights' pass its own chunk's input backward."""
    if kind == "F":
        return None if c == 0 else ("F", j, c - 1)
    if kind == "W":
        return ("B", j, c)
    return ("F", j, c) if c == chunks - 1 else ("B", j, c + 1)
