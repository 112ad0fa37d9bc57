"""Argument checks shared by the cost functions.

Each returns its argument as a float (or int) array, or raises ``ValueError`` naming the
argument, the offending value and what is allowed (STYLE: malformed input raises, a layout
that does not fit does not).
"""

from __future__ import annotations

import numpy as np


def positive(name: str, value) -> np.ndarray:
    """``value`` as a float array whose every element is finite and > 0."""
    return _check(name, value, lambda a: np.isfinite(a) & (a > 0), "a finite number > 0")


def non_negative(name: str, value) -> np.ndarray:
    """``value`` as a float array whose every element is finite and >= 0."""
    return _check(name, value, lambda a: np.isfinite(a) & (a >= 0), "a finite number >= 0")


def fraction(name: str, value) -> np.ndarray:
    """``value`` as a float array in (0, 1]."""
    return _check(name, value, lambda a: (a > 0) & (a <= 1), "a number in (0, 1]")


def whole(name: str, value, minimum: int = 1) -> np.ndarray:
    """``value`` as an int64 array of whole numbers >= ``minimum``."""
    a = _check(
        name,
        value,
        lambda a: np.isfinite(a) & (a >= minimum) & (a == np.round(a)),
        f"a whole number >= {minimum}",
    )
    return a.astype(np.int64)


def one_of(name: str, value: str, allowed) -> str:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def _check(name: str, value, ok, allowed: str) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {allowed}; got {value!r}") from None
    good = ok(a)
    if not np.all(good):
        if a.ndim == 0:
            raise ValueError(f"{name} must be {allowed}; got {a.item():g}")
        index = tuple(np.argwhere(~good)[0].tolist())
        raise ValueError(f"{name} must be {allowed}; got {a[index]:g} at index {index}")
    return a
