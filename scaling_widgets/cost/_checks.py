"""Argument checks shared by the cost functions.

Each returns its argument as a numeric array (integers stay integers), or raises
``ValueError`` naming the argument, the offending value and what is allowed (STYLE: malformed
input raises, a layout that does not fit does not). On a million-element array a check costs
two reductions, not a pass that builds a mask.
"""

from __future__ import annotations

import numpy as np


def positive(name: str, value) -> np.ndarray:
    """``value`` as an array whose every element is finite and > 0."""
    return _check(name, value, "a finite number > 0", lambda a: (a > 0) & (a < np.inf))


def non_negative(name: str, value) -> np.ndarray:
    """``value`` as an array whose every element is finite and >= 0."""
    return _check(name, value, "a finite number >= 0", lambda a: (a >= 0) & (a < np.inf))


def fraction(name: str, value) -> np.ndarray:
    """``value`` as an array in (0, 1]."""
    return _check(name, value, "a number in (0, 1]", lambda a: (a > 0) & (a <= 1))


def whole(name: str, value, minimum: int = 1) -> np.ndarray:
    """``value`` as an int64 array of whole numbers >= ``minimum``."""
    ok = lambda a: (a >= minimum) & (a < np.inf) & (a == np.round(a))  # noqa: E731
    a = _check(name, value, f"a whole number >= {minimum}", ok, every=True)
    return a.astype(np.int64, copy=False)


def one_of(name: str, value: str, allowed) -> str:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def _check(name: str, value, allowed: str, ok, every: bool = False) -> np.ndarray:
    """``every``: ``ok`` is not decided by the extremes alone (whole numbers), unless ints."""
    a = np.asarray(value)
    if a.dtype.kind not in "iuf":
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {allowed}; got {value!r}") from None
    # The extremes decide for the whole array (a NaN fails both).
    extremes = np.array([a.min(), a.max()]) if a.size else np.ones(0)
    decided = not every or a.dtype.kind in "iu"
    if np.all(ok(extremes)) and (decided or np.all(ok(a))):
        return a
    good = ok(a)
    if a.ndim == 0:
        raise ValueError(f"{name} must be {allowed}; got {a.item():g}")
    index = tuple(np.argwhere(~good)[0].tolist())
    raise ValueError(f"{name} must be {allowed}; got {a[index]:g} at index {index}")
