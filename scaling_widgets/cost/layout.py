"""Which X, Y, Z a strategy uses on a slice, and how they sit on its axes (SPEC A.3, A.7)."""

from __future__ import annotations

import math

import numpy as np

from . import _checks
from .inputs import Chip, Model
from .layer import CHAPTER
from .mesh import MeshSpan, axis_rings, role_layout, span_axes
from .nodes import node_spans
from .split import best_split


def resolve_layout(
    *,
    chip: Chip,
    model: Model,
    strategy,
    slice_shape,
    batch,
    pods,
    x,
    y,
    z,
    axis_roles,
    wraparound,
    mx,
    my,
    exact=CHAPTER,
) -> tuple[int | np.ndarray, np.ndarray, np.ndarray, MeshSpan]:
    """(Z, X, Y, spans) of a strategy on a slice; Z is an int, or an array with X and Y given.

    ``axis_roles`` gives whole axes to the groups; otherwise X and Y follow the strategy (DP and
    FSDP put a stage's chips on X, TP on Y) or, for FSDP + TP without ``x``/``y``, ``best_split``,
    and the spans follow ``span_axes``. ``wraparound`` overrides the chip's ring rule.
    """
    rings = axis_rings(slice_shape=slice_shape, pod_shape=chip.pod_shape, rule=chip.wraparound)
    if wraparound is not None:
        rings = (bool(wraparound),) * len(slice_shape)
    span = None
    if axis_roles is not None:
        if not (x is None and y is None and z is None):
            raise ValueError(f"give either axis_roles or x, y, z; got axis_roles={tuple(axis_roles)!r} and x, y or z")
        x, y, z, span = role_layout(slice_shape=slice_shape, roles=axis_roles, rings=rings)
    Z = _checks.whole("z", 1 if z is None else z)
    Z = int(Z) if Z.ndim == 0 else Z
    stage_chips, leftover = divmod(math.prod(slice_shape), Z)
    if np.any(leftover):
        raise ValueError(f"z must divide the slice's {math.prod(slice_shape)} chips; got {z!r}")
    if x is None and y is None and strategy == "fsdp+tp":
        if np.ndim(Z):
            raise ValueError(f"z must be one number when the split is chosen for you (no x or y); got {z!r}")
        hw = dict(flops=chip.flops, ici_bw=chip.ici_bw, dcn_bw=chip.dcn_bw)
        x, y = best_split(
            exact=exact,
            node_size=chip.node_size,
            scaleout_bw=chip.scaleout_bw,
            batch=batch,
            d_model=model.d_model,
            d_ff=model.d_ff,
            slice_shape=slice_shape,
            z=Z,
            pods=pods,
            rings=rings,
            mx=mx,
            my=my,
            **hw,
        )
    X, Y = _strategy_layout(strategy, stage_chips, x, y)
    if span is None and chip.is_gpu:
        span = node_spans(slice_shape=slice_shape, x=X, y=Y, z=Z, nvlink_bw=chip.ici_bw, nic_bw=chip.scaleout_bw)
    elif span is None:
        span = span_axes(slice_shape=slice_shape, x=X, y=Y, z=Z, rings=rings)
    return Z, X, Y, span


def _strategy_layout(strategy: str, stage_chips: int, x, y):
    """X and Y of a strategy: DP/FSDP put a stage's chips on X, TP on Y, FSDP + TP splits them."""
    forced = {"dp": ("y", 1), "fsdp": ("y", 1), "tp": ("x", 1)}.get(strategy)
    given = {"x": x, "y": y}
    if forced is not None:
        name, one = forced
        if given[name] is not None and np.any(np.asarray(given[name]) != one):
            raise ValueError(f"{name} must be 1 for strategy {strategy!r} (use 'fsdp+tp'); got {given[name]!r}")
        given[name] = one
    for name, other in (("x", "y"), ("y", "x")):
        if given[name] is None:
            share = _checks.whole(other, given[other])
            if np.any(stage_chips % share):
                raise ValueError(f"{other} must divide the {stage_chips} chips of a stage; got {given[other]!r}")
            given[name] = stage_chips // share
    return _checks.whole("x", given["x"]), _checks.whole("y", given["y"])
