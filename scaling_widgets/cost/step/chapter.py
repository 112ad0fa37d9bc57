"""The chapter's step with a utilisation given, the time to train, and the utilisation a step
achieves (MODEL.md §A.5, §A.10, §B.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    pass


def step_time(
    *,
    batch: ArrayLike,
    params: ArrayLike,
    chips: ArrayLike,
    flops: ArrayLike,
    mfu: ArrayLike,
    comm_time: ArrayLike = 0.0,
    bubble: ArrayLike = 0.0,
    flops_per_token: ArrayLike | None = None,
) -> float | np.ndarray:
    """Seconds per step (MODEL.md §A.5, §A.10).

    The compute time 6·B·Ψ / (N·C·η) at model-FLOPs utilisation η (B·f/(N·C·η) with the model
    FLOPs per token f of ``flops_per_token``, MODEL.md §B.1), or the exposed
    communication ``comm_time`` if that is longer, stretched by the pipeline ``bubble``
    (idle time relative to useful work, (Z − 1)/m).

    Parameters
    ----------
    batch : B, the global batch [tokens]
    params : Ψ, the parameters [parameters]
    chips, flops, mfu : N, the chips; C, each chip's peak [FLOP/s]; η, the share of it sustained
    comm_time : the exposed communication of a step [s]
    bubble : the pipeline's idle time relative to useful work
    flops_per_token : f [FLOP/token]; None: 6·Ψ

    Returns
    -------
    step_time : float or np.ndarray
        The time of one step [s].

    Examples
    --------
    >>> step_time(batch=3e6, params=13e9, chips=4096, flops=4.59e14, mfu=[0.4, 0.5]).round(3)
    array([0.311, 0.249])
    """
    B, Psi, N, C, eta = (np.asarray(v, dtype=float) for v in (batch, params, chips, flops, mfu))
    f = 6 * Psi if flops_per_token is None else np.asarray(flops_per_token, dtype=float)
    compute = B * f / (N * C * eta)
    return np.maximum(compute, comm_time) * (1 + np.asarray(bubble, dtype=float))


def time_to_train(
    *, tokens: ArrayLike, batch: ArrayLike, step_time: ArrayLike
) -> float | np.ndarray:
    """Seconds to train on ``tokens``: tokens / B steps of ``step_time`` each (MODEL.md §A.10).

    Returns
    -------
    time : float or np.ndarray
        The time to train [s].

    Examples
    --------
    >>> time_to_train(tokens=15e12, batch=16e6, step_time=[1.0, 2.0])
    array([ 937500., 1875000.])
    """
    steps = np.asarray(tokens, dtype=float) / np.asarray(batch, dtype=float)
    return steps * np.asarray(step_time, dtype=float)


def utilisation(
    *,
    batch: ArrayLike,
    flops_per_token: ArrayLike,
    chips: ArrayLike,
    flops: ArrayLike,
    step_time: ArrayLike,
) -> float | np.ndarray:
    """The share of peak FLOP/s a step of ``step_time`` seconds uses: B·f / (N·C·t) (MODEL.md §B.1).

    With model FLOPs per token this is the MFU; with hardware FLOPs (recompute counted) the HFU.
    Calibration: give a measured step time and read off the MFU it implies.

    Returns
    -------
    utilisation : float or np.ndarray
        The share of the chips' peak FLOP/s the step uses (the MFU or the HFU).

    Examples
    --------
    >>> round(float(utilisation(batch=3e6, flops_per_token=6 * 13e9, chips=4096, flops=4.59e14,
    ...                         step_time=0.311)), 2)
    0.4
    """
    B, f, N, C, t = (
        np.asarray(v, dtype=float) for v in (batch, flops_per_token, chips, flops, step_time)
    )
    return B * f / (N * C * t)
