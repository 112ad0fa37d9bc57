"""What an estimate holds (MODEL.md §A.10), and how to pick one layout out of an array of them."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..ground.records import record
from ..memory.chapter import MemoryPerChip
from ..memory.peak import PeakMemory
from ..memory.verdict import UNCERTAINTY, fits, verdict
from ..step.interval import Spread, tie_band
from ..step.run import Run
from ..transformer.counts import ParamCount
from ..transformer.layer import LayerTimes
from ..values import Cluster, Layout, Options, Workload

if TYPE_CHECKING:
    from ..hardware.chip import Chip
    from ..transformer.exactness import Exactness
    from ..transformer.shapes import Model, Precision

T = TypeVar("T")


@record(eq=False)
class Estimate:
    """MODEL.md §A.10 for one layout (or an array of them). Times [s], memory [bytes], batch
    [tokens].

    It keeps the four checked values it was evaluated from (``cluster``, ``workload``,
    ``layout``, ``options``, the defaults filled in), and the placement: X, Y, Z, the
    microbatches and the spans.
    """

    cluster: Cluster
    workload: Workload
    layout: Layout
    options: Options
    x: np.ndarray
    y: np.ndarray
    z: int | np.ndarray
    mx: np.ndarray
    my: np.ndarray
    wrap_x: np.ndarray
    wrap_y: np.ndarray
    microbatches: np.ndarray
    cp_implied: bool  # CP was not asked for: the batch gives some replicas part of a sequence
    params: ParamCount
    layer: LayerTimes
    crossover_batch: np.ndarray  # the smallest batch at which this very layout is compute-bound
    critical_tokens_per_chip: np.ndarray  # NaN for pure TP
    tp_limit: np.ndarray
    critical_tokens_per_pod: np.ndarray
    x_opt: np.ndarray
    memory: MemoryPerChip  # the chapter's count, a lower bound (MODEL.md §A.4)
    # the busiest chip's peak as its stack measures it (MODEL.md §E); "fits" reads this
    peak: PeakMemory
    flops_per_token: np.ndarray  # model FLOPs per trained token
    hardware_flops_per_token: np.ndarray  # recompute counted (MODEL.md §B.1)
    bubble: np.ndarray  # idle time relative to useful work, (Z - 1)/(v·m)
    stage_traffic: np.ndarray  # seconds a step sends activations between pipeline stages
    # B·f_hw/(N·C·η): the FLOPs the chips do, at the utilisation they sustain
    compute_time: np.ndarray
    # exposed communication of a step [s]: the layer's comm/compute x the model's compute
    comm_time: np.ndarray
    step_time: np.ndarray
    mfu: np.ndarray  # what the step achieves: B·f/(N·C·t)
    hfu: np.ndarray  # the same with the recompute counted (MODEL.md §B.1)
    training_time: np.ndarray | None  # None without ``tokens``
    step_breakdown: dict | None = (
        None  # the predicted step's terms [s] (MODEL.md §C.5); None with an MFU given
    )
    # what the schedule's paired passes hide of the expert ("ep") and context-parallel ("cp")
    # traffic, not in the step [s] (MODEL.md §B.6); None with an MFU given
    hidden: dict | None = None
    run: Run | None = None  # the whole run with failures and checkpoints (MODEL.md §H)
    # where measured steps fell around out-of-sample predictions of its stack and chip (MODEL.md
    # §F.3); None with an MFU given, or without residuals shipped
    spread: Spread | None = None

    def __repr__(self) -> str:
        shape = np.shape(self.step_time)
        return f"Estimate({self.model.name} on {self.chip.name}, {self.strategy}, shape={shape})"

    # The inputs, by the names the formulas use.
    @property
    def model(self) -> Model:
        return self.workload.model

    @property
    def chip(self) -> Chip:
        return self.cluster.chip

    @property
    def precision(self) -> Precision:
        return self.workload.precision

    @property
    def batch(self) -> float | np.ndarray:
        return self.workload.batch

    @property
    def seq_len(self) -> int | None:
        return self.workload.seq_len

    @property
    def tokens(self) -> float | np.ndarray | None:
        return self.workload.tokens

    @property
    def slice_shape(self) -> tuple[int, ...]:
        return self.cluster.slice_shape

    @property
    def pods(self) -> int | np.ndarray:
        """The data-parallel replicas over DCN: every pod, or groups of ``pp_pods`` a pipeline
        spans (MODEL.md §B.10)."""
        return self.cluster.replicas(self.layout)

    @property
    def strategy(self) -> str:
        return self.layout.strategy

    @property
    def zero(self) -> int | np.ndarray:
        return self.layout.zero

    @property
    def remat(self) -> str | np.ndarray:
        return self.layout.remat

    @property
    def schedule(self) -> str | np.ndarray:
        return self.layout.schedule

    @property
    def virtual_stages(self) -> int | np.ndarray:
        return self.layout.virtual_stages

    @property
    def sequence_parallel(self) -> bool:
        return self.layout.sequence_parallel

    @property
    def exact(self) -> Exactness:
        return self.options.exact

    @property
    def fits_below(self) -> float | np.ndarray:
        return self.options.fits_below

    @property
    def calibrated(self) -> bool:
        return self.options.measured_step_time is not None

    @property
    def step_interval(self) -> tuple | None:
        """The predicted step's interval, (low, high) [s]: the step times the spread's ratios;
        None without a spread (MODEL.md §F.3)."""
        if self.spread is None:
            return None
        return self.step_time * self.spread.low, self.step_time * self.spread.high

    @property
    def chips(self) -> int | np.ndarray:
        """All chips of all pods."""
        return math.prod(self.slice_shape) * self.cluster.pods

    @property
    def tokens_per_chip(self) -> float | np.ndarray:
        return self.batch / self.chips

    @property
    def compute_bound(self) -> np.bool_ | np.ndarray:
        return self.layer.compute_bound

    @property
    def bottleneck(self) -> np.ndarray:
        return self.layer.bottleneck

    @property
    def memory_limit(self) -> float | np.ndarray:
        """The bytes a chip may use: ``fits_below`` of the HBM a program may allocate."""
        return self.fits_below * self.chip.usable_hbm

    @property
    def fits(self) -> np.bool_ | np.ndarray:
        """The busiest chip's peak, reserved by its allocator and overhead included, fits with
        its uncertainty (MODEL.md §B.8, §E.5)."""
        return fits(self.peak.reserved, self.memory_limit)

    @property
    def margin(self) -> float | np.ndarray:
        """How safely the layout stays inside its limits, 0 to 1: 1 when it stays compute-bound
        even if its communication were a tie band slower than predicted, and fits even if its
        peak were twice its uncertainty larger (2u covers 74 of the 85 held-out sources' errors,
        docs/VALIDATION.md); below, the share of that headroom it has, the nearer limit's. The
        planner breaks a tie in the step by it (MODEL.md §C)."""
        compute = 1 / np.maximum(self.layer.worst_ratio, 1e-300) / self.tie_band
        memory = self.memory_limit / self.peak.reserved / (1 + 2 * UNCERTAINTY)
        return np.minimum(1.0, np.minimum(compute, memory))

    @property
    def tie_band(self) -> float:
        """The largest ratio of another layout's step to this one's that the model cannot tell
        from it (MODEL.md §F.3): 1 where the step is not predicted."""
        return tie_band(self.step_interval is not None)

    @property
    def verdict(self) -> np.ndarray:
        """ "fits", "tight" or "does not fit" (MODEL.md §E.5)."""
        return verdict(self.peak.reserved, self.memory_limit)


def pick(result: T, index: int | slice | tuple | ArrayLike) -> T:
    """One layout (or a subset) of an array-valued result: every array field indexed alike.

    Scalars and fields that are not arrays (the model, the chip, names) are kept as they are.

    Parameters
    ----------
    result : Estimate or LayerTimes
        A frozen dataclass of arrays, such as an ``Estimate`` (or its ``LayerTimes``).
    index : int, slice, tuple or array_like
        What indexes each array field: a layout's position, a slice, a mask.

    Returns
    -------
    result : Estimate or LayerTimes
        A copy of the same kind as ``result``, whose array fields (those of the dataclasses it
        holds too) are indexed.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> from scaling_widgets.cost import estimate
    >>> e = estimate(model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=[1e6, 3e6])
    >>> float(pick(e, 1).batch), pick(e, 1).layer.t_math.shape
    (3000000.0, ())
    """
    changes = {}
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and _holds_arrays(value):
            changes[field.name] = pick(value, index)
        elif isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
            changes[field.name] = tuple(_index(v, index) for v in value)
        elif isinstance(value, np.ndarray):
            changes[field.name] = _index(value, index)
        elif isinstance(value, dict):
            changes[field.name] = {k: _index(v, index) for k, v in value.items()}
    return dataclasses.replace(result, **changes)


def _holds_arrays(value) -> bool:
    return any(
        isinstance(getattr(value, f.name), (np.ndarray, tuple)) for f in dataclasses.fields(value)
    )


def _index(value: Any, index: int | slice | tuple | ArrayLike) -> Any:
    return value[index] if np.ndim(value) else value
