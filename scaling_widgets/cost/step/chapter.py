"""The chapter's step with a utilisation given, the time to train, and the utilisation a step
achieves (MODEL.md §A.5, §A.10, §B.1)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


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
    batch : float or array_like
        B, the global batch [tokens].
    params : float or array_like
        Ψ, the model's parameters [parameters].
    chips : float or array_like
        N, the chips of every pod [chips].
    flops : float or array_like
        C, each chip's peak bf16 matmul rate [FLOP/s].
    mfu : float or array_like
        η, the share of C sustained on every FLOP done (the model-FLOPs utilisation).
    comm_time : float or array_like, default 0.0
        The exposed communication of a step [s].
    bubble : float or array_like, default 0.0
        The pipeline's idle time relative to useful work, (Z − 1)/m; 0 without a pipeline.
    flops_per_token : float or array_like, optional
        f, the FLOPs done per token [FLOP/token]; None: 6·Ψ.

    Returns
    -------
    step_time : float or np.ndarray
        The time of one step [s].

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (step time with an MFU given), §A.10 (what is reported) and §B.1
       (FLOPs, MFU and HFU).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP).
    .. [3] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020
       (6·N FLOPs a token).

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

    Parameters
    ----------
    tokens : float or array_like
        The tokens to train on [tokens].
    batch : float or array_like
        B, the global batch of a step [tokens].
    step_time : float or array_like
        The time of one step [s].

    Returns
    -------
    time : float or np.ndarray
        The time to train [s].

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (time to train is tokens/B steps) and §A.10 (what is reported).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP).

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

    Parameters
    ----------
    batch : float or array_like
        B, the global batch [tokens].
    flops_per_token : float or array_like
        f, the FLOPs a token: the model FLOPs for the MFU, the hardware FLOPs (recompute
        counted) for the HFU [FLOP/token].
    chips : float or array_like
        N, the chips of every pod [chips].
    flops : float or array_like
        C, each chip's peak bf16 matmul rate [FLOP/s].
    step_time : float or array_like
        t, the time of one step, predicted or measured [s].

    Returns
    -------
    utilisation : float or np.ndarray
        The share of the chips' peak FLOP/s the step uses (the MFU or the HFU).

    References
    ----------
    .. [1] docs/MODEL.md §B.1 (full accounting: FLOPs, MFU and HFU).

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
