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
  A pass may be a pair, two passes run overlapped as one (DualPipe's forward of one microbatch with
  the backward of another). A backward "B" whose weights' part runs on its own ("W") is as long as
  a forward, and so is the W; a backward without a W is twice a forward.

Optional, with their defaults:

- ``V_SHAPED`` (False): its two chunks a device sit in a V (the first device runs the first
  layers and the last), whatever count of virtual stages is asked;
- ``WEIGHT_COPIES`` (1): the stages' weights a device holds, over one stage's (DualPipe: 2);
- ``ENDS_TOGETHER`` (False): the first device holds both ends of the model, the embeddings, the
  output layer and its logits (a V-shaped or two-way schedule);
- ``runs(stages, microbatches)`` and ``NEEDS``: where it can run (e.g. at least 2Z microbatches),
  and what a refusal says it needs;
- ``paired_share(stages, microbatches)`` (0): the share of a device's passes it runs in pairs,
  whose expert and context-parallel traffic hides under the other pass's compute.

``combined_share`` is Megatron-LM's pairing of one microbatch's forward with another's backward
under 1F1B, with one stage or interleaved (a layout's ``ep_overlap``).

Every function takes keyword arguments that may be arrays, except ``passes`` (one layout's picture).
The functions below dispatch over a name or an array of names, one per layout.

Tier 2 of cost/, beside hardware/ and the other registries (``tests/test_tiers.py`` declares the
order): it imports from ground/ alone."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..ground.choices import per_choice
from ..ground.records import record
from ..ground.registry import members


@record
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
    weight_copies: int = 1
    ends_together: bool = False
    runs: Callable | None = None
    needs: str = ""
    paired_share: Callable | None = None
    v_shaped: bool = False

    @property
    def takes_virtual_stages(self) -> bool:
        return self.virtual_stages != (1,)

    @property
    def fixed_chunks(self) -> int:
        """The chunks a device runs whatever is asked (a V's two), else 0: the user's choice."""
        return self.virtual_stages[0] if self.v_shaped else 0


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
        weight_copies=getattr(module, "WEIGHT_COPIES", 1),
        ends_together=getattr(module, "ENDS_TOGETHER", False),
        runs=getattr(module, "runs", None),
        needs=getattr(module, "NEEDS", ""),
        paired_share=getattr(module, "paired_share", None),
        v_shaped=getattr(module, "V_SHAPED", False),
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

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.
    virtual_stages : int or array_like, default 1
        v, the virtual stages (chunks of layers) a device runs; 1 for a schedule without chunks.

    Returns
    -------
    bubble : np.ndarray
        The idle time over the useful work of a step, by each layout's ``schedule`` (a ratio).

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

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.
    virtual_stages : int or array_like, default 1
        v, the virtual stages (chunks of layers) a device runs; 1 for a schedule without chunks.
    stage : int or array_like, default 0
        r, the pipeline stage whose microbatches are counted, 0 the first.

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

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.

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


def runs(*, schedule: str | ArrayLike, stages: ArrayLike, microbatches: ArrayLike) -> np.ndarray:
    """Where each layout's schedule can run its microbatches on its stages (one stage: always).

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.

    Returns
    -------
    runs : np.ndarray of bool
        True where the schedule can run m microbatches on Z stages (its ``runs``; a schedule
        without one runs everywhere).

    Examples
    --------
    >>> runs(schedule=["1f1b", "dualpipe", "dualpipe"], stages=4, microbatches=[4, 4, 8]).tolist()
    [True, False, True]
    """
    Z, m = np.asarray(stages), np.asarray(microbatches)

    def where(name):
        rule = SCHEDULES[name].runs
        return (
            np.ones(np.broadcast_shapes(Z.shape, m.shape), bool)
            if rule is None
            else rule(stages=Z, microbatches=m)
        )

    return (Z == 1) | np.asarray(per_choice(schedule, where), dtype=bool)


def paired_share(
    *, schedule: str | ArrayLike, stages: ArrayLike, microbatches: ArrayLike
) -> np.ndarray:
    """The share of the first device's forward passes each layout's schedule runs paired with
    another microbatch's backward pass; 0 for a schedule that pairs none, or one stage.

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.

    Returns
    -------
    share : np.ndarray
        The share of the first device's forward passes run in pairs, between 0 and 1.
    """
    Z, m = np.asarray(stages, dtype=float), np.asarray(microbatches, dtype=float)

    def share(name):
        pairs = SCHEDULES[name].paired_share
        return 0.0 * Z * m if pairs is None else np.clip(pairs(stages=Z, microbatches=m), 0, 1)

    return np.where(Z > 1, per_choice(schedule, share), 0.0)


def weight_copies(schedule: str | ArrayLike) -> np.ndarray:
    """The stages' weights a device holds under each layout's schedule, over one stage's.

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.

    Returns
    -------
    copies : np.ndarray
        The weights a device holds, in stages' worth: 1, or 2 for DualPipe.
    """
    return per_choice(schedule, lambda name: np.asarray(SCHEDULES[name].weight_copies, float))


def ends_together(schedule: str | ArrayLike) -> np.ndarray:
    """Whether each layout's schedule puts both ends of the model on its first device.

    Parameters
    ----------
    schedule : str or array_like of str
        The schedule of each layout: one of ``NAMES`` ("gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe", "dualpipev"), or an array of them, one per layout.

    Returns
    -------
    together : np.ndarray of bool
        True where the first device holds the embeddings, the output layer and its logits (a
        V-shaped or two-way schedule).
    """
    return per_choice(schedule, lambda name: np.asarray(SCHEDULES[name].ends_together))


# Megatron-LM's combined 1F1B (its --overlap-moe-expert-parallel-comm; Megatron Core's
# pipeline_parallel/combined_1f1b.py and get_pp_rank_microbatches in schedules.py): after one more
# warm-up forward than its schedule's, every forward runs with an earlier microbatch's backward.
# The memory stays its schedule's: the pair runs forward layer i with backward layer n − 1 − i,
# freeing one layer's activations as it keeps another's (model_chunk_schedule_plan.py, ``run``),
# and the extra warm-up forward is the one the schedule's steady state would have run first.


def combined_share(
    *, stages: ArrayLike, microbatches: ArrayLike, virtual_stages: ArrayLike = 1
) -> np.ndarray:
    """The share of the first device's forward passes that combined 1F1B pairs with another
    microbatch's backward: with one stage all but the first, (m − 1)/m; interleaved, all but its
    warm-up of 2(Z − 1) + (v − 1)·Z + 1 chunk-forwards, 1 − w/(m·v) (MODEL.md §B.6).

    Parameters
    ----------
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.
    virtual_stages : int or array_like, default 1
        v, the virtual stages (chunks of layers) a device runs under interleaved 1F1B; 1 for
        1F1B.

    Returns
    -------
    share : np.ndarray
        The share of the first device's forward passes run in pairs, between 0 and 1.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: Megatron-LM's combined 1F1B).
    .. [2] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/schedules.py`` (``get_pp_rank_microbatches``: the
       warm-up, one forward more with ``overlap_moe_expert_parallel_comm``).
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/combined_1f1b.py``
       (``combined_1f1b_schedule_for_no_pipelining``,
       ``combined_1f1b_schedule_for_interleaved_pipelining``).

    Examples
    --------
    >>> combined_share(stages=[1, 4], microbatches=8, virtual_stages=[1, 2]).tolist()
    [0.875, 0.3125]
    """
    Z, m, v = (np.asarray(a, dtype=float) for a in (stages, microbatches, virtual_stages))
    warmup = np.where(Z > 1, 2 * (Z - 1) + (v - 1) * Z + 1, 1.0)
    return np.clip(1 - warmup / (m * np.where(Z > 1, v, 1.0)), 0.0, 1.0)
