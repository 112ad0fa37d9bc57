"""ZBV (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", NeurIPS: V-ZB; PyTorch's
``ScheduleZBVZeroBubble``): each device holds two chunks of layers in a V, chunk d on the way
down and chunk 2Z − 1 − d on the way back, so the first device runs both the first and the last
layers; backward passes split into B and W as in ZB-H1 (MODEL.md §B.6).

With the forward, the input's and the weights' gradient equally long, each device is busy from
its first pass to its last at 1F1B's memory (2Z chunk-microbatches, Z microbatches of the
device's layers). As with ZB-H2, the devices start and end a few passes apart; a step that ends
in the optimizer's global sync idles half of ZB-H1's, (Z − 1)/(6m): the last device starts
(Z − 1) chunk-forwards, half a microbatch's forward each, after the first.
"""

from __future__ import annotations

import numpy as np

from .one_f_one_b import logits_in_flight
from .zb_h2 import NEEDS, runs  # its warm-up fills as ZB-H2's: m ≥ 2Z − 1

NAME, LABEL, ORDER = "zbv", "ZBV", 5
VIRTUAL_STAGES = (2,)  # two chunks a device, in a V
V_SHAPED = True
ENDS_TOGETHER = True
__all__ = ["NEEDS", "bubble", "in_flight", "logits_in_flight", "passes", "runs"]


def bubble(
    *,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Idle time over useful work of a step that ends in a sync: (Z − 1)/(6m).

    Parameters
    ----------
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused: ZBV runs two chunks a device.

    Returns
    -------
    bubble : float or np.ndarray
        The idle time over the useful work of a step (a ratio).

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: ZBV).
    .. [2] P. Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024.
    """
    return (stages - 1) / (6 * microbatches)


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Microbatches a device holds, Z on every device: 2Z chunk-microbatches of half its layers,
    1F1B's memory.

    Parameters
    ----------
    stage : float or array_like
        r, the device, 0 the first; unused: every device holds the same.
    stages : float or array_like
        Z, the pipeline stages.
    microbatches : float or array_like
        m, the microbatches a step.
    virtual_stages : float or array_like
        v, the virtual stages a device runs; unused: ZBV runs two chunks a device.

    Returns
    -------
    microbatches : float or np.ndarray
        The microbatches whose activations the device holds at once, in microbatches of the device's
        layers, min(Z, m) [microbatches].

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: ZBV) and §E.1 (what the peak holds).
    .. [2] P. Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024.
    """
    return np.minimum(stages, microbatches) + 0 * stage


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """PyTorch's order for device d with chunks d (0) and 2Z − 1 − d (1): 2(Z − d) − 1 forwards
    of chunk 0; d times a forward of each chunk; Z − d times chunk 1's F, B and W; then chunk 0's
    F, B, W and chunk 1's F, B, W in turn while forwards are left; then the backward passes left,
    chunk 0's W passes in between, and the W passes left.

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
    passes : list of tuple of (str, int, int)
        The device's passes in the order it runs them, each (kind, microbatch, chunk): kind "F" a
        forward, "B" the input's gradient, "W" the weights'; chunk the virtual stage of the model
        the pass runs, 0 the first layers.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: ZBV).
    .. [2] P. Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024.
    .. [3] ``pytorch/pytorch, torch/distributed/pipelining/schedules.py``
       (``ScheduleZBVZeroBubble``).
    """
    Z, m, d = stages, microbatches, device
    chunk = (d, 2 * Z - 1 - d)
    count = {"F": [0, 0], "B": [0, 0], "W": [0, 0]}
    order: list[tuple[str, int, int]] = []

    def run(*steps):
        for kind, k in steps:
            order.append((kind, count[kind][k], chunk[k]))
            count[kind][k] += 1

    run(*[("F", 0)] * (2 * (Z - d) - 1))
    run(*[("F", 1), ("F", 0)] * d)
    run(*[("F", 1), ("B", 1), ("W", 1)] * (Z - d))
    while count["F"][1] < m:
        run(*[("F", 0)] * (count["F"][0] < m), ("B", 0), ("W", 0), ("F", 1), ("B", 1), ("W", 1))
    run(*[("B", 0), ("B", 1)] * d)
    run(*[("B", 0), ("W", 0)] * (Z - d))
    run(*[("W", 1)] * (count["B"][1] - count["W"][1]), *[("W", 0)] * (m - count["W"][0]))
    return order
