"""Argument checks shared by the cost functions.

Each returns its argument as a numeric array (integers stay integers), or raises
``ValueError`` naming the argument, the offending value and what is allowed (STYLE: malformed
input raises, a layout that does not fit does not). On a million-element array a check costs
two reductions, not a pass that builds a mask.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

_trusted = contextvars.ContextVar("trusted", default=False)


class InputError(ValueError):
    """A value the cost model cannot take: ``field`` names it, ``allowed`` says what would do.

    The message reads "<field> must be <allowed>; got <got>"; the CLI writes its own flag for the
    field (``--tp`` for ``y``), the panel shows the message as it is.
    """

    def __init__(self, field: str, allowed: str, got: str):
        super().__init__(f"{field} must be {allowed}; got {got}")
        self.field, self.allowed, self.got = field, allowed, got

    def named(self, name: str) -> str:
        """The message with the field called ``name``."""
        return f"{name} must be {self.allowed}; got {self.got}"


def refuse(field: str, allowed: str, got) -> InputError:
    """The error for ``field``: raise what this returns. ``got`` is shown as it is if it is a
    string (already formatted), else by its repr."""
    return InputError(field, allowed, got if isinstance(got, str) else repr(got))


LARGEST = 1e30  # far beyond any real quantity; keeps products of several inputs finite
SMALLEST = 1e-30  # far below any real quantity; keeps quotients of several inputs finite
LARGEST_WHOLE = 2**53  # whole numbers stay exact as floats and never wrap as int64


@contextlib.contextmanager
def trusted():
    """Skip the range checks inside: the caller has checked every input it passes down."""
    token = _trusted.set(True)
    try:
        yield
    finally:
        _trusted.reset(token)


def positive(name: str, value) -> np.ndarray:
    """``value`` as an array whose every element is > 0 (at least 1e-30, and below 1e30)."""
    return _check(name, value, "a number >= 1e-30 and < 1e30", lambda a: (a >= SMALLEST) & (a < LARGEST))


def non_negative(name: str, value) -> np.ndarray:
    """``value`` as an array whose every element is >= 0 (and below 1e30)."""
    return _check(name, value, "a number >= 0 and < 1e30", lambda a: (a >= 0) & (a < LARGEST))


def fraction(name: str, value) -> np.ndarray:
    """``value`` as an array in (0, 1] (at least 1e-30)."""
    return _check(name, value, "a number in [1e-30, 1]", lambda a: (a >= SMALLEST) & (a <= 1))


def whole(name: str, value, minimum: int = 1) -> np.ndarray:
    """``value`` as an int64 array of whole numbers >= ``minimum``."""
    ok = lambda a: (a >= minimum) & (a <= LARGEST_WHOLE) & (a == np.round(a))  # noqa: E731
    a = _check(name, value, f"a whole number from {minimum} to 2**53", ok, every=True)
    return a.astype(np.int64, copy=False)


def one_of(name: str, value: str, allowed) -> str:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise refuse(name, f"one of {', '.join(map(repr, allowed))}", repr(value))
    return value


def each_one_of(name: str, value, allowed):
    """``value``, a name or an array of names (one per layout), if every name is one of ``allowed``."""
    if isinstance(value, str):
        return one_of(name, value, allowed)
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list: no array at all
        a = np.asarray(None)
    bad = ~np.isin(a, list(allowed)) if a.dtype.kind in "UO" else np.ones(a.shape, dtype=bool)
    if bad.any() or a.ndim == 0 or a.size == 0:
        got = repr(value)
        if a.ndim and bad.any():
            index = tuple(np.argwhere(bad)[0].tolist())
            got = f"{np.asarray(a[index]).tolist()!r} at index {index}"  # a name, or any object
        raise refuse(name, f"one of {', '.join(map(repr, allowed))}, or an array of them", got)
    return a.astype(str)


def _check(name: str, value, allowed: str, ok, every: bool = False) -> np.ndarray:
    """``every``: on a large array, ``ok`` is not decided by the extremes alone (whole numbers)."""
    if _trusted.get():
        return np.asarray(value)
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list: no array at all
        raise refuse(name, allowed, repr(value)) from None
    if a.dtype.kind in "bc":  # True is not a count of anything; a complex number is no quantity
        raise refuse(name, allowed, repr(value))
    if a.dtype.kind not in "iuf":  # strings, objects: numbers or nothing
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            raise refuse(name, allowed, repr(value)) from None
    if a.size <= 1024:  # small: element by element is cheapest
        good = ok(a)
        if good.all():
            return a
    else:  # large: the extremes decide (a NaN fails both), then rounding only if needed
        extremes = np.array([a.min(), a.max()])
        if ok(extremes).all() and (not every or a.dtype.kind in "iu" or ok(a).all()):
            return a
    good = ok(a)
    if a.ndim == 0:
        raise refuse(name, allowed, f"{a.item():g}")
    index = tuple(np.argwhere(~good)[0].tolist())
    raise refuse(name, allowed, f"{a[index]:g} at index {index}")
