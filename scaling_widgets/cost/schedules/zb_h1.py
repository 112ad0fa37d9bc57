"""ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, sec. 2.1; DeepSeek-V3's
"ZB1P"): 1F1B with each backward pass split in two, the input's gradient (B) and the weights'
(W). Only B is on the pipeline's critical path; stage r puts off the W passes of its first r
microbatches to the end, where they fill the wait for the last backward passes (MODEL.md §B.6).

In the papers' notation (F a forward chunk, B a full backward, W its weights' part) the bubble is
(Z − 1)(F + B − 2W) against 1F1B's (Z − 1)(F + B); with W = F and B = 2F, as the papers assume,
it is a third of 1F1B's, (Z − 1)/(3m) of the useful work (m ≥ Z). Stage r holds min(Z − r, m)
microbatches as 1F1B does: the first stage puts off no W, so it holds no more than 1F1B's peak.
"""

from __future__ import annotations

import numpy as np

from .one_f_one_b import in_flight, logits_in_flight

NAME, LABEL, ORDER = "zb-h1", "ZB-H1", 3
VIRTUAL_STAGES = (1,)

__all__ = ["bubble", "in_flight", "logits_in_flight", "passes"]


def bubble(
    *,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """(Z − 1)(F + B − 2W) over m(F + B), at F = W = 1, B = 2: (Z − 1)/(3m), for m ≥ Z as the
    papers count it. With fewer microbatches than stages the W passes cannot fill the wait: the
    first stage ends at 2Z + 2m − 1 slots (``passes``), (2Z − m − 1)/(3m) over its 3m of work.

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
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: zero bubble).
    .. [2] P. Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, sec. 2.1.
    .. [3] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024 (ZB1P, its Table 2).
    """
    Z, m = stages, microbatches
    return np.maximum(Z - 1, 2 * Z - m - 1) / (3 * m)


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """1F1B's order with each backward split: Z − d − 1 forwards, then a forward and a B in turn,
    each followed by a W once d of them have been put off; then the last B passes, each with one of
    the W passes put off, and the rest of them.

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
        forward, "B" the input's gradient, "W" the weights'; chunk the virtual stage of the model
        the pass runs, 0 the first layers.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (pipeline schedules: zero bubble).
    .. [2] P. Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, sec. 2.1.
    """
    m, d = microbatches, device
    warmup = min(stages - d - 1, m)
    forwards = [("F", j, d) for j in range(m)]
    inputs = [("B", j, d) for j in range(m)]
    weights = [("W", j, d) for j in range(m)]
    order, done_b, done_w = forwards[:warmup], 0, 0
    for f in forwards[warmup:]:
        order += [f, inputs[done_b]]
        done_b += 1
        if done_b > d:  # the first d of this stage's W passes wait for the end
            order.append(weights[done_w])
            done_w += 1
    for b in inputs[done_b:]:
        order.append(b)
        if done_w < m:
            order.append(weights[done_w])
            done_w += 1
    return order + weights[done_w:]
