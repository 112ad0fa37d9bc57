"""The whole run (MODEL.md §H): the steps that train on the tokens, stretched by what failures
cost. With N chips failing at λ per chip-hour, the job fails every M = 1/(λ·N) hours; a checkpoint
of every chip's weights and optimizer state takes δ to write, one every τ of wall clock
(Young/Daly's τ = √(2·δ·M) unless given), and a failure loses half an interval and a restart R:

    goodput = 1 − δ/τ − (τ/2 + R)/M,    wall clock = steps · step time / goodput.

Chip-hours are N × the wall clock; energy is chip-hours × the chip's rated power × the PUE; money
is chip-hours × a price the user gives.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..ground.records import record

# Llama 3 (Grattafiori et al. 2024, sec. 3.3.4): 419 unexpected interruptions in a 54-day snapshot
# of pre-training on 16,384 H100s.
FAILURES_PER_CHIP_HOUR = 419 / (54 * 24 * 16_384)
# The same paper's storage (sec. 3.3.1): Tectonic sustains 2 TB/s for 16K GPUs, 122 MB/s a GPU.
# No TPU figure is published; the same share stands for one.
CHECKPOINT_BW = 2e12 / 16_384
RESTART_S = 600.0  # an assumption: reschedule, reload the checkpoint, warm up again
# Google's data centers, trailing twelve months (2024 Environmental Report): 1.10
PUE = 1.1
HOUR = 3600.0


@record(eq=False)
class Run:
    """The whole run, one entry per layout (MODEL.md §H); times [s]."""

    ideal: np.ndarray  # steps x step time, nothing failing
    checkpoint_bytes: np.ndarray  # what one chip writes: its weights and optimizer state
    checkpoint_write: np.ndarray  # δ
    interval: np.ndarray  # τ, between checkpoint starts
    between_failures: np.ndarray  # M, the job's
    goodput: np.ndarray  # useful over wall clock, in [0, 1]; 0: it never finishes (writes fill
    # the interval, or failures come faster than checkpoints save)
    wall: np.ndarray  # inf where it never finishes
    chip_hours: np.ndarray
    energy: np.ndarray | None  # [J]; None where the chip's power is not known
    cost: np.ndarray | None  # in the price's currency; None without a price

    def __repr__(self) -> str:
        return f"Run(goodput {np.round(self.goodput, 3)})"


def whole_run(
    *,
    chips: ArrayLike,
    ideal: ArrayLike,
    checkpoint_bytes: ArrayLike,
    write_bw: float,
    failure_rate: float,
    restart: float,
    interval: float | None = None,
    power: float = 0.0,
    pue: float = PUE,
    price: float | None = None,
) -> Run:
    """The wall clock, goodput, chip-hours, energy and cost of a run of ``ideal`` seconds of steps
    on ``chips`` chips (MODEL.md §H).

    Parameters
    ----------
    chips : float or array_like
        N, the chips of the job [chips].
    ideal : float or array_like
        The run without failures: tokens/B steps of the step time [s].
    checkpoint_bytes : float or array_like
        What one chip writes to a checkpoint: the weights and optimizer state it holds [bytes].
    write_bw : float
        The checkpoint bandwidth of one chip (``CHECKPOINT_BW``: 122 MB/s) [bytes/s].
    failure_rate : float
        λ, the unexpected interruptions a chip-hour (``FAILURES_PER_CHIP_HOUR``: 1.97e-5);
        0: nothing fails.
    restart : float
        R, what a restart after a failure takes (``RESTART_S``: 600 s) [s].
    interval : float, optional
        τ, the wall clock between checkpoint starts [s]; None: Young/Daly's √(2·δ·M).
    power : float, default 0.0
        What a chip draws [W]; 0: not known, and no energy is reported.
    pue : float, default PUE
        The data center's power usage effectiveness (1.1).
    price : float, optional
        The price of a chip-hour, in the currency you count in; None: no cost is reported.

    Returns
    -------
    run : Run
        The ideal time, δ, τ, M, the goodput, the wall clock [s], the chip-hours, the energy
        [J] and the cost, one entry per layout.

    References
    ----------
    .. [1] docs/MODEL.md §H (the whole run: failures, checkpoints, energy and cost).
    .. [2] J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM
       1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
       restart dumps", FGCS 2006.
    .. [3] A. Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, 2024,
       sec. 3.3.1 (storage) and 3.3.4 (interruptions): the default failure rate and checkpoint
       bandwidth.
    .. [4] Google, 2024 Environmental Report: the default PUE.

    Examples
    --------
    >>> r = whole_run(chips=16_384, ideal=54 * 86400.0, checkpoint_bytes=10e9, write_bw=1e9,
    ...               failure_rate=FAILURES_PER_CHIP_HOUR, restart=600.0)
    >>> round(float(r.between_failures) / HOUR, 2), round(float(r.goodput), 3)
    (3.09, 0.904)
    """
    N, ideal = np.asarray(chips, dtype=float), np.asarray(ideal, dtype=float)
    delta = np.asarray(checkpoint_bytes, dtype=float) / write_bw
    M = np.where(failure_rate > 0, HOUR / np.maximum(failure_rate * N, 1e-300), np.inf)
    tau = np.sqrt(2 * delta * M) if interval is None else np.full_like(delta, interval)
    lost = np.where(np.isinf(M), 0.0, (tau / 2 + restart) / np.where(np.isinf(M), 1.0, M))
    writing = np.where(np.isinf(tau), 0.0, delta / np.where(np.isinf(tau), 1.0, tau))
    goodput = np.clip(1 - writing - lost, 0.0, 1.0)
    with np.errstate(over="ignore"):  # a goodput next to 0: a run that never ends, inf
        wall = np.where(goodput > 0, ideal / np.maximum(goodput, 1e-300), np.inf)
    chip_hours = N * wall / HOUR
    return Run(
        ideal=ideal,
        checkpoint_bytes=np.asarray(checkpoint_bytes, dtype=float),
        checkpoint_write=delta,
        interval=tau,
        between_failures=M,
        goodput=goodput,
        wall=wall,
        chip_hours=chip_hours,
        energy=chip_hours * HOUR * power * pue if power > 0 else None,
        cost=chip_hours * price if price is not None else None,
    )
