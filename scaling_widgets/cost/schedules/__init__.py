"""Pipeline schedules, one module each (MODEL.md §A.6, §B.4, §B.6). A new schedule is a new file.

A schedule's module gives everything the rest of the house asks of it:

- ``NAME`` (what the CLI, the API and a saved scenario call it), ``LABEL`` (what the panel shows)
  and ``ORDER`` (its place in lists);
- ``VIRTUAL_STAGES``: the virtual stages (chunks a device) it runs, the first the default; ``(1,)``
  for a schedule without chunks. The planner tries each;
- ``bubble(stages, microbatches, virtual_stages)``: the idle time over the useful work of a step;
- ``in_flight(stage, stages, microbatches, virtual_stages)``: the microbatches whose activations
  pipeline stage r (0 the first) holds at once, at the start of its first backward pass;
- ``logits_in_flight(stages, microbatches)``: the last stage's microbatches whose logits are alive;
- ``passes(device, stages, microbatches, virtual_stages)``: the forward ("F") and backward ("B")
  passes a device runs, in order, as (kind, microbatch, chunk), for the timeline
  (``step/timeline.py``);
- ``SPLIT_BACKWARD`` (optional): true for a schedule that splits each backward pass into the
  input's gradient ("B") and the weights' ("W"), each as long as a forward.

Every function takes keyword arguments that may be arrays, except ``passes`` (one layout's picture).
The functions below dispatch over a name or an array of names, one per layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..choices import per_choice
from ..registry import members


@dataclass(frozen=True)
class Schedule:
    """What a schedule's module declares (see the package's docstring)."""

    name: str
    label: str
    order: int
    virtual_stages: tuple
    bubble: Callable
    in_flight: Callable
    logits_in_flight: Callable
    passes: Callable
    split_backward: bool = False

    @property
    def takes_virtual_stages(self) -> bool:
        return self.virtual_stages != (1,)


def _member(module) -> Schedule:
    return Schedule(
        name=module.NAME,
        label=module.LABEL,
        order=module.ORDER,
        virtual_stages=tuple(module.VIRTUAL_STAGES),
        bubble=module.bubble,
        in_flight=module.in_flight,
        logits_in_flight=module.logits_in_flight,
        passes=module.passes,
        split_backward=getattr(module, "SPLIT_BACKWARD", False),
    )


SCHEDULES: dict[str, Schedule] = members(__name__, __path__, _member)
NAMES = tuple(SCHEDULES)


def bubble(
    *,
    schedule: str | ArrayLike,
    stages: ArrayLike,
    microbatches: ArrayLike,
    virtual_stages: ArrayLike = 1,
) -> np.ndarray:
    """Idle time over useful work, each layout by its own schedule; 0 with one stage.

    Returns
    -------
    bubble : np.ndarray
        The idle time over the useful work of a step, by each layout's ``schedule``.

    Examples
    --------
    >>> bubble(schedule=["gpipe", "1f1b", "interleaved"], stages=4, microbatches=16,
    ...        virtual_stages=[1, 1, 2]).tolist()
    [0.1875, 0.1875, 0.09375]
    """
    Z, m, v = (np.asarray(a, dtype=float) for a in (stages, microbatches, virtual_stages))
    idle = per_choice(
        schedule, lambda name: SCHEDULES[name].bubble(stages=Z, microbatches=m, virtual_stages=v)
    )
    return np.where(Z > 1, idle, 0.0)


def in_flight_microbatches(
    *,
    schedule: str | ArrayLike,
    stages: ArrayLike,
    microbatches: ArrayLike,
    virtual_stages: ArrayLike = 1,
    stage: ArrayLike = 0,
) -> np.ndarray:
    """Microbatches whose activations pipeline stage r holds at once (r = 0 the first, the one that
    holds the most), by each layout's schedule; one stage holds one microbatch at a time.

    Returns
    -------
    microbatches : np.ndarray
        The microbatches stage ``stage`` holds at the start of its first backward pass (not
        always whole: interleaved stages hold parts of them) [microbatches].

    Examples
    --------
    >>> [float(in_flight_microbatches(schedule=s, stages=4, microbatches=16, virtual_stages=2))
    ...  for s in ("gpipe", "1f1b", "interleaved")]
    [16.0, 4.0, 5.5]
    >>> [float(in_flight_microbatches(schedule="interleaved", stage=r, stages=4, microbatches=4,
    ...                               virtual_stages=8)) for r in (0, 3)]
    [4.0, 3.625]
    """
    Z, m, v = (np.asarray(a, dtype=float) for a in (stages, microbatches, virtual_stages))
    r = np.asarray(stage, dtype=float)
    held = per_choice(
        schedule,
        lambda name: SCHEDULES[name].in_flight(stage=r, stages=Z, microbatches=m, virtual_stages=v),
    )
    return np.where(Z == 1, 1.0, held)


def logits_in_flight(
    *, schedule: str | ArrayLike, stages: ArrayLike, microbatches: ArrayLike
) -> np.ndarray:
    """The last stage's microbatches whose logits are alive at once, by each layout's schedule.

    Returns
    -------
    microbatches : np.ndarray
        The microbatches whose logits the last stage holds; 1 with one stage [microbatches].
    """
    Z, m = np.asarray(stages, dtype=float), np.asarray(microbatches, dtype=float)
    held = per_choice(
        schedule, lambda name: SCHEDULES[name].logits_in_flight(stages=Z, microbatches=m)
    )
    return np.where(Z > 1, held, 1.0)
