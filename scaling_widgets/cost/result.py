"""What an estimate holds (SPEC A.10), and how to pick one layout out of an array of them."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .inputs import Chip, Model, Precision
from .layer import Exactness, LayerTimes
from .memory import MemoryPerChip
from .training import ParamCount


@dataclass(frozen=True, eq=False)
class Estimate:
    """SPEC A.10 for one layout (or an array of them). Times [s], memory [bytes], batch [tokens]."""

    model: Model
    chip: Chip
    precision: Precision
    strategy: str
    zero: int  # ZeRO stage on the data axis (SPEC B.3)
    batch: np.ndarray
    slice_shape: tuple[int, ...]
    x: np.ndarray
    y: np.ndarray
    z: int
    pods: np.ndarray
    mx: np.ndarray
    my: np.ndarray
    wrap_x: np.ndarray
    wrap_y: np.ndarray
    microbatches: np.ndarray
    params: ParamCount
    layer: LayerTimes
    crossover_batch: np.ndarray  # the smallest batch at which this very layout is compute-bound
    critical_tokens_per_chip: np.ndarray  # NaN for pure TP
    tp_limit: np.ndarray
    critical_tokens_per_pod: np.ndarray
    x_opt: np.ndarray
    memory: MemoryPerChip
    mfu: np.ndarray  # given, or implied by a measured step time
    hfu: np.ndarray  # hardware FLOPs utilisation: recompute counted (SPEC B.1)
    flops_per_token: np.ndarray  # model FLOPs per trained token
    remat: str
    calibrated: bool  # the step time was measured, the MFU and HFU derived from it
    schedule: str  # pipeline schedule (SPEC B.6)
    virtual_stages: int
    sequence_parallel: bool
    exact: Exactness
    fits_below: float  # the share of HBM a layout may fill
    bubble: np.ndarray  # idle time relative to useful work, (Z - 1)/m
    stage_traffic: np.ndarray  # seconds a step sends activations between pipeline stages
    comm_time: np.ndarray  # exposed communication of a step [s]: the layer's comm/compute x the model's compute
    step_time: np.ndarray
    training_time: np.ndarray | None  # None without ``tokens``

    def __repr__(self):
        shape = np.shape(self.step_time)
        return f"Estimate({self.model.name} on {self.chip.name}, {self.strategy}, shape={shape})"

    @property
    def chips(self):
        """All chips of all pods."""
        return math.prod(self.slice_shape) * self.pods

    @property
    def compute_time(self):
        """Seconds of compute a step takes at the MFU: B·f / (N·C·η) (SPEC A.5, B.1)."""
        return self.batch * self.flops_per_token / (self.chips * self.chip.flops * self.mfu)

    @property
    def tokens_per_chip(self):
        return self.batch / self.chips

    @property
    def compute_bound(self):
        return self.layer.compute_bound

    @property
    def bottleneck(self):
        return self.layer.bottleneck

    @property
    def fits(self):
        """Memory per chip, overhead included, within ``fits_below`` of HBM (SPEC A.10, B.8)."""
        return self.memory.total <= self.fits_below * self.chip.hbm_bytes


def pick(result, index):
    """One layout (or a subset) of an array-valued result: every array field indexed alike.

    Scalars and fields that are not arrays (the model, the chip, names) are kept as they are.

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
    return dataclasses.replace(result, **changes)


def _holds_arrays(value) -> bool:
    return any(isinstance(getattr(value, f.name), (np.ndarray, tuple)) for f in dataclasses.fields(value))


def _index(value: np.ndarray, index):
    return value[index] if np.ndim(value) else value
