"""A large grid of layouts evaluated in blocks that stay in the processor's cache.

Every formula is one numpy operation over all the layouts. On a million layouts each operation
streams arrays of 8 MB through memory, and the evaluation is bound by memory bandwidth; on blocks
of some tens of thousands the same operations stay in cache and run about 1.5 times as fast
(``benchmarks/bench_cost.py``). So ``evaluate`` splits a grid larger than ``BLOCK`` into a few
equal blocks, each still one vectorized call, and joins their estimates into the one the whole
grid would give.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ground.checks import per_layout

BLOCK = 65_536  # layouts a block holds at most: its arrays of 512 KB stay in a cache


def layouts_shape(*values: Any) -> tuple[int, ...]:
    """The shape the per-layout fields of ``values`` broadcast to: () for one layout, and for
    fields that do not broadcast (which ``evaluate``'s check refuses by name).

    Parameters
    ----------
    *values : Cluster, Workload, Layout or Options
        The checked values whose per-layout fields are read.

    Returns
    -------
    shape : tuple of int
        The broadcast shape of every field that holds one value per layout.
    """
    shapes = [
        held.shape
        for value in values
        for field in dataclasses.fields(value)
        if isinstance(held := getattr(value, field.name), np.ndarray)
        and per_layout(field.metadata.get("check"))
    ]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return ()


def in_blocks(evaluate: Callable[..., Any], shape: tuple[int, ...], *values: Any) -> Any:
    """``evaluate(*values)`` over blocks of at most ``BLOCK`` layouts, joined in ``shape``.

    The grid is read flat, in C order, and cut into equal blocks; each value's per-layout fields
    are cut alike (not checked again: they were checked whole). Each block's arrays are copied
    into the whole grid's while they are still in cache; a value every block shares (a chip, a
    name, a number that does not vary) is kept once.

    Parameters
    ----------
    evaluate : callable
        What each block runs, ``evaluate(*values)``: it returns a frozen dataclass of numbers
        and arrays (an ``Estimate``).
    shape : tuple of int
        The shape of the whole grid of layouts (``layouts_shape``).
    *values : Cluster, Workload, Layout or Options
        The checked values of the whole grid, cut alike into blocks.

    Returns
    -------
    result : Estimate
        What ``evaluate`` returns, for the whole grid: its per-layout arrays in the shape
        ``shape``.
    """
    n = math.prod(shape)
    edges = np.linspace(0, n, -(-n // BLOCK) + 1).astype(int)
    first, arrays, scalars = None, {}, {}
    for start, stop in zip(edges, edges[1:]):
        part = evaluate(*(_cut(value, shape, start, stop) for value in values))
        first = part if first is None else first
        for path, leaf in _leaves(part):
            if np.ndim(leaf) == 0 and path not in arrays:
                scalars.setdefault(path, []).append((start, stop, leaf))
            else:
                if path not in arrays:
                    arrays[path] = _grid(n, leaf, scalars.pop(path, ()))
                elif not np.can_cast(np.asarray(leaf).dtype, arrays[path].dtype, "same_kind"):
                    arrays[path] = arrays[path].astype(np.result_type(arrays[path], leaf))
                arrays[path][start:stop] = leaf
    for path, held in scalars.items():  # a number the blocks do not share becomes an array
        if not all(np.array_equal(leaf, held[0][2]) for _, _, leaf in held):
            arrays[path] = _grid(n, held[0][2], held)
    return _rebuilt(first, (), {path: a.reshape(shape) for path, a in arrays.items()})


def _grid(n: int, like: Any, held) -> np.ndarray:
    """An array for the whole grid in ``like``'s type (any width of name), with the blocks
    already ``held`` as numbers written in."""
    dtype = object if np.asarray(like).dtype.kind in "US" else np.asarray(like).dtype
    whole = np.empty(n, dtype=dtype)
    for start, stop, leaf in held:
        whole[start:stop] = leaf
    return whole


def _leaves(value: Any, path: tuple = ()):
    """Every number and array in a result, with its path: fields, keys and positions."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _leaves(getattr(value, field.name), (*path, field.name))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    elif isinstance(value, (np.ndarray, np.generic, float, int, str)):
        yield path, value


def _rebuilt(value: Any, path: tuple, arrays: dict) -> Any:
    """``value`` with the whole grid's array wherever ``arrays`` has its path."""
    if path in arrays:
        whole = arrays[path]
        return whole.astype(str) if whole.dtype == object else whole
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)
        vars(out).clear()  # no cached property of the first block survives
        for field in dataclasses.fields(value):
            rebuilt = _rebuilt(getattr(value, field.name), (*path, field.name), arrays)
            object.__setattr__(out, field.name, rebuilt)
        return out
    if isinstance(value, dict):
        return {key: _rebuilt(item, (*path, key), arrays) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_rebuilt(item, (*path, i), arrays) for i, item in enumerate(value))
    return value


def _cut(value: Any, shape: tuple[int, ...], start: int, stop: int) -> Any:
    out = copy.copy(value)
    for field in dataclasses.fields(value):
        held = getattr(value, field.name)
        if isinstance(held, np.ndarray) and per_layout(field.metadata.get("check")):
            object.__setattr__(out, field.name, np.broadcast_to(held, shape).ravel()[start:stop])
    return out
