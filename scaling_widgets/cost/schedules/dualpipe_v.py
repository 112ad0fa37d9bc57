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
    """m ≥ 2Z (``DualPipeV.step``'s assert)."""
    return microbatches >= 2 * stages


def in_flight(
    *,
    stage: float | np.ndarray,
    stages: float | np.ndarray,
    microbatches: float | np.ndarray,
    virtual_stages: float | np.ndarray,
) -> float | np.ndarray:
    """Z + 1/2 on every device: 2Z chunk-forwards before its first backward, one more while a
    pair runs, each chunk half the device's layers."""
    return stages + 0.5 + 0 * stage * microbatches


def paired_share(*, stages: np.ndarray, microbatches: np.ndarray) -> np.ndarray:
    """The first device's pairs over its 2m chunk-forwards: 2(m − 2Z + 1) in its main phase and
    Z − 1 after it, (2m − 3Z + 1)/(2m) (``passes``)."""
    return (2 * microbatches - 3 * stages + 1) / (2 * microbatches)


def passes(
    *, device: int, stages: int, microbatches: int, virtual_stages: int
) -> list[tuple[str, int, int]]:
    """DualPipe's phases with the device as its own half-rank, of Z, and every microbatch in both
    phases: phase 0 on chunk d, phase 1 on chunk 2Z − 1 − d."""
    Z, d = stages, device
    return realize(phases(d, Z, microbatches), chunks=(d, 2 * Z - 1 - d), offsets=(0, 0))
