"""The vectorized cost model of SPEC Parts A and B: pure numpy, no widget imports, no sentences.

What is evaluated is four frozen values (``values.py``): ``Cluster``, ``Workload``, ``Layout``
and ``Options``. ``evaluate`` checks them once (``check.py``), places the layout
(``placement.py``) and composes the formulas into what SPEC A.10 reports (``Estimate``).
Every formula takes keyword arguments that may be arrays and broadcasts them.
"""

from ._checks import InputError
from .activations import SCHEDULES, activation_bytes_per_layer, in_flight_microbatches
from .estimate import compare_strategies, estimate, evaluate, split_keywords, validate
from .inputs import BOOK_PRECISION, Chip, Model, Precision
from .layer import CHAPTER, STRATEGIES, Exactness, LayerTimes, crossover_batch, layer_times
from .memory import MemoryPerChip, largest_replicated_model, memory_per_chip
from .mesh import MeshSpan, axis_rings, span_axes
from .pipeline import bubble_fraction, bubble_overhead, stage_traffic_time
from .plan import Plan, plan
from .result import Estimate, pick
from .split import best_split, split_candidates
from .thresholds import critical_tokens_per_chip, critical_tokens_per_pod, nearest_split, tp_limit, x_opt
from .training import (
    REMAT_POLICIES,
    ParamCount,
    flops_per_token,
    param_count,
    recompute_flops_per_token,
    step_time,
    time_to_train,
    training_flops,
    utilisation,
)  # fmt: skip
from .values import Cluster, Layout, Options, Workload

__all__ = [
    "Cluster",
    "InputError",
    "Layout",
    "Options",
    "Workload",
    "evaluate",
    "validate",
    "split_keywords",
    "BOOK_PRECISION",
    "STRATEGIES",
    "Chip",
    "Estimate",
    "LayerTimes",
    "MemoryPerChip",
    "MeshSpan",
    "Model",
    "ParamCount",
    "Plan",
    "Precision",
    "axis_rings",
    "best_split",
    "bubble_fraction",
    "bubble_overhead",
    "compare_strategies",
    "critical_tokens_per_chip",
    "critical_tokens_per_pod",
    "crossover_batch",
    "estimate",
    "largest_replicated_model",
    "layer_times",
    "memory_per_chip",
    "nearest_split",
    "param_count",
    "SCHEDULES",
    "activation_bytes_per_layer",
    "in_flight_microbatches",
    "CHAPTER",
    "Exactness",
    "REMAT_POLICIES",
    "flops_per_token",
    "recompute_flops_per_token",
    "utilisation",
    "pick",
    "plan",
    "span_axes",
    "split_candidates",
    "stage_traffic_time",
    "step_time",
    "time_to_train",
    "tp_limit",
    "training_flops",
    "x_opt",
]
