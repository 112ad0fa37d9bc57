"""The vectorized cost model: pure numpy, no widget imports, no sentences (MODEL.md).

What is evaluated is four frozen values (``values.py``): ``Cluster``, ``Workload``, ``Layout``
and ``Options``, each checked when it is built. ``evaluate`` checks them together, places the
layout and composes the formulas into what MODEL.md §A.10 reports (``Estimate``). Every formula
takes keyword arguments that may be arrays and broadcasts them, and trusts its inputs.

Its folders are tiers, each importing only from itself and the tiers below (lowest first;
``tests/test_tiers.py`` declares the order and holds the code to it):

1. ``ground/``: how a refusal reads, what a field may hold, choice among formulas, registries;
2. ``hardware/`` (chips, slices, nodes) and the registries, one module a member: ``schedules/``,
   ``strategies/``, ``stacks/``;
3. ``transformer/``: the model's shape, counts, one layer, experts, context, activations;
4. ``step/``: the step's physics, collectives, pipeline, profiles and the whole run;
5. ``values.py``: the four values;
6. ``layout/``: whether a layout can run, its split, microbatches and placement;
7. ``memory/``: the chapter's count and the peak of a placed layout;
8. ``evaluation/``: ``evaluate`` and the ``Estimate``;
9. ``search/`` (the planner, the strategy map), ``views/`` (what the panel's plots draw),
   ``calibrate.py`` and ``compare.py``;

and this module, the face, above them all.
"""

from .compare import compare_strategies
from .evaluation.evaluate import estimate, evaluate, split_keywords, validate
from .evaluation.result import Estimate, pick
from .ground.refusals import InputError
from .hardware.chip import Chip
from .hardware.mesh import MeshSpan, axis_rings, span_axes
from .layout.split import best_split, split_candidates
from .memory.chapter import MemoryPerChip, largest_replicated_model, memory_per_chip
from .schedules import SCHEDULES as _SCHEDULES
from .schedules import in_flight_microbatches
from .search.plan import Plan, plan
from .step.chapter import step_time, time_to_train, utilisation
from .step.pipeline import bubble_fraction, bubble_overhead, stage_traffic_time
from .strategies import STRATEGIES as _STRATEGIES
from .transformer.activations import activation_bytes_per_layer
from .transformer.counts import (
    REMAT_POLICIES,
    ParamCount,
    flops_per_token,
    param_count,
    recompute_flops_per_token,
    training_flops,
)
from .transformer.exactness import CHAPTER, Exactness
from .transformer.layer import LayerTimes, crossover_batch, layer_times
from .transformer.shapes import BOOK_PRECISION, Model, Precision
from .transformer.thresholds import (
    critical_tokens_per_chip,
    critical_tokens_per_pod,
    nearest_split,
    tp_limit,
    x_opt,
)
from .values import Cluster, Layout, Options, Workload

SCHEDULES = tuple(_SCHEDULES)  # the names, as ``Layout.schedule`` takes them
STRATEGIES = tuple(_STRATEGIES)  # the names, as ``Layout.strategy`` takes them

__all__ = [
    "BOOK_PRECISION",
    "CHAPTER",
    "REMAT_POLICIES",
    "SCHEDULES",
    "STRATEGIES",
    "Chip",
    "Cluster",
    "Estimate",
    "Exactness",
    "InputError",
    "LayerTimes",
    "Layout",
    "MemoryPerChip",
    "MeshSpan",
    "Model",
    "Options",
    "ParamCount",
    "Plan",
    "Precision",
    "StrategyMap",
    "Workload",
    "activation_bytes_per_layer",
    "axis_rings",
    "best_split",
    "bubble_fraction",
    "bubble_overhead",
    "compare_strategies",
    "critical_tokens_per_chip",
    "critical_tokens_per_pod",
    "crossover_batch",
    "estimate",
    "evaluate",
    "flops_per_token",
    "in_flight_microbatches",
    "largest_replicated_model",
    "layer_times",
    "memory_per_chip",
    "nearest_split",
    "param_count",
    "pick",
    "plan",
    "recompute_flops_per_token",
    "span_axes",
    "split_candidates",
    "split_keywords",
    "stage_traffic_time",
    "step_time",
    "strategy_map",
    "time_to_train",
    "tp_limit",
    "training_flops",
    "utilisation",
    "validate",
    "x_opt",
]


def __getattr__(name):
    """The strategy map, loaded on first use: the command line's estimate starts without it."""
    if name in ("StrategyMap", "strategy_map"):
        from .search import strategy_map as module

        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
