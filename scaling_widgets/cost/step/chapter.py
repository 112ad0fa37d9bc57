"""The chapter's step with a utilisation given, the time to train, and the utilisation a step
achieves (MODEL.md §A.5, §A.10, §B.1)."""

from __future__ import annotations

import numpy as np

from ..checks import refuse


def step_time(*, batch, params, chips, flops, mfu, comm_time=0.0, bubble=0.0, flops_per_token=None):
    """Seconds per step (MODEL.md §A.5, §A.10).

    The compute time 6·B·Ψ / (N·C·η) at model-FLOPs utilisation η (B·f/(N·C·η) with the model
    FLOPs per token f of ``flops_per_token``, MODEL.md §B.1), or the exposed
    communication ``comm_time`` if that is longer, stretched by the pipeline ``bubble``
    (idle time relative to useful work, (Z − 1)/m).

    Examples
    --------
    >>> step_time(batch=3e6, params=13e9, chips=4096, flops=4.59e14, mfu=[0.4, 0.5]).round(3)
    array([0.311, 0.249])
    """
    B, Psi, N, C, eta = (np.asarray(v, dtype=float) for v in (batch, params, chips, flops, mfu))
    f = 6 * Psi if flops_per_token is None else np.asarray(flops_per_token, dtype=float)
    compute = B * f / (N * C * eta)
    return np.maximum(compute, comm_time) * (1 + np.asarray(bubble, dtype=float))


def time_to_train(*, tokens, batch, step_time):
    """Seconds to train on ``tokens``: tokens / B steps of ``step_time`` each (MODEL.md §A.10).

    Examples
    --------
    >>> time_to_train(tokens=15e12, batch=16e6, step_time=[1.0, 2.0])
    array([ 937500., 1875000.])
    """
    steps = np.asarray(tokens, dtype=float) / np.asarray(batch, dtype=float)
    return steps * np.asarray(step_time, dtype=float)


def utilisation(*, batch, flops_per_token, chips, flops, step_time):
    """The share of peak FLOP/s a step of ``step_time`` seconds uses: B·f / (N·C·t) (MODEL.md §B.1).

    With model FLOPs per token this is the MFU; with hardware FLOPs (recompute counted) the HFU.
    Calibration: give a measured step time and read off the MFU it implies.

    >>> round(float(utilisation(batch=3e6, flops_per_token=6 * 13e9, chips=4096, flops=4.59e14,
    ...                         step_time=0.311)), 2)
    0.4
    """
    B, f, N, C, t = (
        np.asarray(v, dtype=float) for v in (batch, flops_per_token, chips, flops, step_time)
    )
    return B * f / (N * C * t)


def chapter_step(workload, options, layer, flops, Psi, chips, C, bubble) -> dict:
    """Compute, exposed communication, the step, and the utilisation it achieves (MODEL.md §A.10,
    §B.1).

    The chips sustain ``mfu`` of peak on every FLOP they do, recompute included: compute takes
    B·f_hw/(N·C·η). The exposed communication is the layer's communication per compute over the
    whole model's compute at peak. A step is the longer of the two, stretched by the bubble; the
    MFU and HFU reported are what that step achieves. A measured step replaces it instead.
    """
    B = workload.batch
    ideal = B * flops["hardware"] / (chips * C)  # the step's FLOPs at peak
    # The layer is the chapter's two-matrix MLP; the rest of the model moves and computes in the
    # same proportion, so its communication per compute scales to the whole model.
    comm = layer.t_comms / layer.t_math * 6 * B * Psi / (chips * C)
    if options.measured_step_time is None:
        # None: predicted afterwards
        compute = ideal / (1.0 if options.mfu is None else options.mfu)
        step = np.maximum(compute, comm) * (1 + bubble)
    else:
        step = np.broadcast_arrays(
            np.asarray(options.measured_step_time, dtype=float), ideal * bubble
        )[0]
        short = ideal > step
        if np.any(short):  # the first layout whose measured step is shorter than its FLOPs at peak
            need, got = (np.broadcast_to(a, short.shape)[short][0] for a in (ideal, step))
            raise refuse(
                "measured_step_time",
                f"at least {need:.4g} s, what this layout's FLOPs take at the chips'"
                " peak (a shorter step would mean a utilisation above 100%)",
                f"{got:g}",
            )
        compute = step
    return {
        "compute_time": compute,
        "comm_time": comm,
        "step_time": step,
        "mfu": B * flops["model"] / (chips * C * step),
        "hfu": ideal / step,
    }
