"""The memory bars the panel draws: each strategy's peak by part (MODEL.md §E.1)."""

from __future__ import annotations

import numpy as np

from ..evaluation.result import Estimate
from ..ground.records import record
from ..ground.refusals import InputError

# The memory bar's parts, each the sum of the peak's parts (MODEL.md §E.1) it stands for.
BAR_PARTS = {
    "weights": ("weights",),
    "gradients": ("grads",),
    "optimizer state": ("optimizer", "optimizer_step"),
    "activations": ("activations", "working_set", "outputs_held"),
    "logits": ("logits",),
    "buffers": ("buffers", "workspaces", "overhead"),
    "allocator": ("allocator",),
}


@record(eq=False)
class MemoryData:
    """The busiest chip's peak of each strategy at the current batch [bytes] (MODEL.md §E)."""

    strategies: tuple
    estimates: (
        tuple  # per strategy: its ``Estimate``, or the ``InputError`` saying why it cannot run
    )
    parts: np.ndarray  # rows: BAR_PARTS; a column per strategy
    hbm_bytes: float
    limit_bytes: float  # the share of HBM a layout may fill (MODEL.md §B.8)
    current: str
    labels: tuple = ()  # per strategy: its layout's name (``text/views.py``)
    stages: tuple = ()  # per strategy: its busiest stage, "stage 1 of 4" ("" with one stage)

    @property
    def runtime_bytes(self) -> float:
        """What the chip's runtime holds beside HBM's usable part: CUDA's context, NCCL (§E.5)."""
        return self.estimates[self.strategies.index(self.current)].chip.runtime_bytes

    @property
    def totals(self) -> np.ndarray:
        """Per strategy: its peak, the sum of its bar's parts [bytes]."""
        return self.parts.sum(axis=0)

    @property
    def verdicts(self) -> tuple[str, ...]:
        """Per strategy: "fits", "tight" or "does not fit" ("" where it cannot run)."""
        return tuple(str(e.verdict) if isinstance(e, Estimate) else "" for e in self.estimates)

    @property
    def runs(self) -> tuple[bool, ...]:
        """Per strategy: False where it cannot run here (its bar is empty)."""
        return tuple(isinstance(e, Estimate) for e in self.estimates)


def memory_bars(strategies: dict[str, Estimate | InputError], current: Estimate) -> MemoryData:
    """The peak of each strategy's own layout (``compare_strategies``), the current one's as it is:
    one bar per strategy, an empty one where it cannot run.

    Parameters
    ----------
    strategies : dict of str to Estimate or InputError
        By strategy name: its ``Estimate``, or the ``InputError`` saying why it cannot run.
    current : Estimate
        The current layout's estimate, which replaces its strategy's.

    Returns
    -------
    data : MemoryData
        Each strategy's peak by part (``BAR_PARTS``), HBM and the share a layout may fill
        [bytes].
    """
    estimates = {**strategies, current.strategy: current}
    parts = np.array(
        [[_bar_part(e, kinds) for e in estimates.values()] for kinds in BAR_PARTS.values()]
    )
    hbm = current.chip.usable_hbm
    return MemoryData(
        strategies=tuple(estimates),
        estimates=tuple(estimates.values()),
        parts=parts,
        hbm_bytes=hbm,
        limit_bytes=float(current.fits_below) * hbm,
        current=current.strategy,
    )


def _bar_part(e, kinds) -> float:
    return sum(float(getattr(e.peak, k)) for k in kinds) if isinstance(e, Estimate) else 0.0
