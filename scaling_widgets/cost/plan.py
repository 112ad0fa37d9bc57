"""The layout planner: every legal layout of a cluster, evaluated in vectorized calls, ranked.

A layout is a factorization of a pod's chips into data/FSDP X, tensor Y (a power of two) and
pipeline Z stages, with a ZeRO stage, a recompute policy, a pipeline schedule and a number of
microbatches. Each group of layouts that shares the scalar knobs (Z, ZeRO, recompute, schedule)
is one ``estimate`` call over every X, Y and microbatch count at once; there is no Python loop
per layout. Layouts that do not fit are dropped; the rest are ranked by step time, recompute
charged at its hardware FLOPs (the MFU is taken as what the hardware sustains).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .estimate import estimate
from .mesh import check_fits_pod, span_axes
from .nodes import check_gpu_slice, gpu_slice
from .result import Estimate, pick
from .split import split_candidates

# ZeRO-2 moves what 0 and 1 move with less memory, so it stands for all three; 3 is FSDP.
ZERO_STAGES = (2, 3)
REMATS = ("checkpoints", "selective", "full")
SCHEDULES_TRIED = (("1f1b", 1), ("interleaved", 2), ("interleaved", 4))  # 1F1B beats GPipe on memory
MICROBATCHES_PER_STAGE = (1, 2, 4, 8)  # m = these x Z (x 1 without pipelining: gradient accumulation)


@dataclass(frozen=True, eq=False)
class Plan:
    """Every evaluated layout (flat arrays, one entry each) and the ranking of those that fit."""

    layouts: dict  # name -> array: x, y, z, zero, remat, schedule, virtual_stages, microbatches
    step_time: np.ndarray  # seconds, recompute charged
    fits: np.ndarray
    memory: np.ndarray  # bytes per chip
    order: np.ndarray  # indices of the layouts that fit, best first
    inputs: dict  # what ``estimate`` needs besides the layout

    def __repr__(self):
        return f"Plan({len(self.step_time)} layouts, {len(self.order)} fit)"

    def __len__(self):
        return len(self.order)

    def knobs(self, index: int) -> dict:
        """The knobs of evaluated layout ``index`` (in evaluation order), as ``estimate`` takes them."""
        return {k: (v[index].item() if isinstance(v[index], np.generic) else v[index]) for k, v in self.layouts.items()}

    def layout(self, rank: int) -> dict:
        """The knobs of the layout at ``rank`` (0 is the best)."""
        return self.knobs(self.order[rank])

    def estimate(self, rank: int) -> Estimate:
        """The full estimate of the layout at ``rank``."""
        knobs = self.layout(rank)
        return pick(estimate(strategy="fsdp+tp", **knobs, **self.inputs), ())

    def binds(self, rank: int) -> str:
        """What limits the layout at ``rank``, and by what margin, in a few words."""
        e = self.estimate(rank)
        compute = float(e.step_time) / (1 + float(e.bubble))
        exposed = e.model.layers / e.z * float(e.layer.t_comms)
        ratio, axis = float(e.layer.worst_ratio), str(e.layer.worst_axis)
        if exposed >= compute:
            return f"{axis} traffic sets the step ({exposed / compute:.2f}x the compute at this MFU)"
        if not e.compute_bound:
            return f"{axis} traffic, {ratio:.2f}x the ideal compute, hidden under the MFU"
        if float(e.bubble) >= 0.05:
            return f"the pipeline bubble, +{float(e.bubble):.0%}"
        used = float(e.memory.total) / e.chip.hbm_bytes
        if used >= 0.9:
            return f"memory, {used:.0%} of HBM"
        return f"compute (slowest traffic: {axis}, {ratio:.2f}x)"


def plan(*, model, chip, batch, seq_len, slice_shape=None, chips=None, pods=1, mfu=0.4, precision=None, **options):
    """Enumerate, evaluate and rank every legal layout (see the module's docstring).

    ``slice_shape`` (a TPU slice, or (nodes, GPUs per node)) or ``chips`` (GPUs) sets the pod;
    ``options`` pass on to ``estimate`` (exactness, overhead, fits_below, ...). Raises
    ``ValueError`` saying what would be needed when no layout fits.
    """
    if chips is not None:
        if not chip.is_gpu:
            raise ValueError(f"chips needs a GPU cluster; {chip.name} is a TPU torus: give slice_shape")
        slice_shape = gpu_slice(chips=chips, node_size=chip.node_size)
    shape = (check_gpu_slice if chip.is_gpu else check_fits_pod)(slice_shape or chip.pod_shape, chip.pod_shape)
    inputs = dict(model=model, chip=chip, batch=float(batch), seq_len=seq_len, slice_shape=shape, pods=pods, mfu=mfu)
    if precision is not None:
        inputs["precision"] = precision
    inputs.update(options)
    groups = [_evaluate(z, knobs, inputs) for z in _stage_counts(shape, model.layers) for knobs in _knobs(z)]
    groups = [g for g in groups if g is not None]
    merged = {k: np.concatenate([g[k] for g in groups]) for k in groups[0]}
    layouts = {k: merged[k] for k in ("x", "y", "z", "zero", "remat", "schedule", "virtual_stages", "microbatches")}
    fits = merged["fits"]
    if not fits.any():
        raise ValueError(_what_would_fit(merged, inputs))
    # Best first: the shortest step; then the most headroom against communication; then less
    # tensor parallelism, fewer stages, fewer microbatches, ZeRO-2 before 3, less recompute.
    remat_rank = np.array([REMATS.index(r) for r in layouts["remat"]])
    keys = (
        remat_rank, layouts["zero"], layouts["microbatches"], layouts["z"], layouts["y"], merged["worst_ratio"],
        merged["step_time"],
    )  # fmt: skip
    order = np.lexsort(keys)
    order = order[fits[order]]
    return Plan(layouts, merged["step_time"], fits, merged["memory"], order, inputs)


def _stage_counts(shape, layers: int):
    """Pipeline depths: the divisors of the pod's chips that leave every stage a layer."""
    chips = math.prod(shape)
    return [z for z in range(1, min(chips, layers) + 1) if chips % z == 0]


def _knobs(z: int):
    schedules = SCHEDULES_TRIED if z > 1 else (("1f1b", 1),)
    return itertools.product(ZERO_STAGES, REMATS, schedules)


def _evaluate(z: int, knobs, inputs: dict):
    """One vectorized ``estimate`` over every (X, Y) and microbatch count at this Z and these knobs."""
    zero, remat, (schedule, v) = knobs
    shape = inputs["slice_shape"]
    X, Y = split_candidates(math.prod(shape) // z)
    if not inputs["chip"].is_gpu:  # the split rule of best_split: X and Y share at most one axis
        legal = span_axes(slice_shape=shape, x=X, y=Y, z=z).shared_axes <= 1
        X, Y = X[legal], Y[legal]
    m = np.array(MICROBATCHES_PER_STAGE)[:, None] * z
    X, Y, m = (a.ravel() for a in np.broadcast_arrays(X[None, :], Y[None, :], m))
    sequences = inputs["batch"] / inputs["seq_len"] / (X * inputs["pods"])  # per data-parallel replica
    keep = m <= np.maximum(sequences, 1)  # a microbatch holds at least one sequence
    X, Y, m = X[keep], Y[keep], m[keep]
    if not len(X):
        return None
    e = estimate(strategy="fsdp+tp", x=X, y=Y, z=z, zero=zero, remat=remat, schedule=schedule, virtual_stages=v,
                 microbatches=m, **inputs)  # fmt: skip
    recompute = e.hfu / e.mfu  # charge recomputation at its hardware FLOPs
    n = len(X)
    return {
        "x": X, "y": Y, "z": np.full(n, z), "zero": np.full(n, zero), "remat": np.full(n, remat, dtype=object),
        "schedule": np.full(n, schedule, dtype=object), "virtual_stages": np.full(n, v), "microbatches": m,
        "step_time": np.broadcast_to(e.step_time * recompute, n), "fits": np.broadcast_to(e.fits, n),
        "memory": np.broadcast_to(e.memory.total, n), "worst_ratio": np.broadcast_to(e.layer.worst_ratio, n),
    }  # fmt: skip


def _what_would_fit(merged: dict, inputs: dict) -> str:
    chip, model = inputs["chip"], inputs["model"]
    need = float(merged["memory"].min())
    limit = inputs.get("fits_below", 1.0) * chip.hbm_bytes
    more = math.ceil(need / limit)
    chips = math.prod(inputs["slice_shape"])
    return (
        f"no layout of {model.name} fits on {chips:,} {chip.name} chips: the leanest needs {need / 1e9:.1f} GB per chip"
        f" of {limit / 1e9:.0f} GB. About {more}x the chips would do (or a smaller batch, full recompute, or a"
        " leaner precision)"
    )
