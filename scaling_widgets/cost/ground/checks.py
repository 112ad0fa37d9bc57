"""What a field of a value may hold, checked once, where a user's input becomes a value.

Each check takes a field's name and value and returns the value in the form the formulas take (a
number or an array of them, a whole number, a name) or raises ``InputError`` naming the field,
what it allows and what it got. The four values (``values.py``), the chips, models and
precisions check themselves with these when they are built; the formulas trust what they get.

A check of a field that may be an array (one value per layout) costs two reductions on a large
array, not a pass that builds a mask.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .records import record
from .refusals import LARGEST, LARGEST_WHOLE, SMALLEST, refuse, shown


@record
class Number:
    """A real number from ``low`` to ``high`` (``low`` itself allowed; ``high`` with ``closed``),
    or an array of them when ``per_layout``. ``unit`` names what it counts, for the message."""

    low: float = SMALLEST
    high: float = LARGEST
    unit: str = ""
    closed: bool = False
    per_layout: bool = False
    what: str = "a number"  # what the field is, for the message: "a share of peak"

    @property
    def allowed(self) -> str:
        unit = f" of {self.unit}" if self.unit else ""
        top = "<=" if self.closed else "<"
        bottom = "> 0" if self.low == SMALLEST else f">= {_short(self.low)}"  # 1e-30 says "> 0"
        return f"{self.what}{unit} {bottom} and {top} {_short(self.high)}"

    def __call__(self, name: str, value: object) -> float | np.ndarray:
        if _is_real(value):  # the common case, a plain number: no array at all
            if self.low <= value and (value <= self.high if self.closed else value < self.high):
                return float(value)
            raise refuse(name, self.allowed + self._arrays, _number_shown(value))
        return _array(name, value, self, self.allowed + self._arrays, whole=False)

    def ok(self, a: np.ndarray) -> np.ndarray:
        """Which entries of ``a`` are in the range (a NaN is not).

        Parameters
        ----------
        a : np.ndarray
            The numbers to test.

        Returns
        -------
        ok : np.ndarray
            True where an entry is from ``low`` to ``high`` (``high`` itself with ``closed``),
            of the shape of ``a``.
        """
        return (a >= self.low) & ((a <= self.high) if self.closed else (a < self.high))

    @property
    def _arrays(self) -> str:
        return ""


@record
class Whole:
    """A whole number from ``low`` to ``high`` (a float such as 4.0 is taken as 4), or an array
    of them when ``per_layout``. ``allowed`` words the range when a bare one would not say why."""

    low: int = 1
    high: int = LARGEST_WHOLE
    allowed_words: str = ""
    per_layout: bool = False

    @property
    def allowed(self) -> str:
        if self.allowed_words:
            return self.allowed_words
        return f"a whole number from {self.low} to {_whole_shown(self.high)}"

    def __call__(self, name: str, value: object) -> int | np.ndarray:
        if _is_real(value):
            if self.low <= value <= self.high and value == int(value):
                return int(value)
            raise refuse(name, self.allowed, _number_shown(value))
        return _array(name, value, self, self.allowed, whole=True)

    def ok(self, a: np.ndarray) -> np.ndarray:
        """Which entries of ``a`` are whole numbers in the range (a NaN is not).

        Parameters
        ----------
        a : np.ndarray
            The numbers to test.

        Returns
        -------
        ok : np.ndarray
            True where an entry is whole and from ``low`` to ``high``, both allowed, of the
            shape of ``a``.
        """
        return (a >= self.low) & (a <= self.high) & (a == np.round(a))


@record
class Choice:
    """One of ``options`` (names), or an array of them when ``per_layout``."""

    options: tuple
    per_layout: bool = False
    also: Callable[[str], bool] | None = None  # names beyond the options it takes: a grammar
    also_said: str = ""  # those names, worded to follow the options
    known: tuple = ()  # names of the grammar to suggest as the nearest

    @property
    def allowed(self) -> str:
        listed = ", ".join(map(repr, self.options)) + (f", {self.also_said}" if self.also else "")
        return f"one of {listed}" + (", or an array of them" if self.per_layout else "")

    def takes(self, value: str) -> bool:
        """Whether one name is among the options, or what ``also`` takes.

        Parameters
        ----------
        value : str
            The name given.

        Returns
        -------
        ok : bool
            True for a name the choice takes.
        """
        return value in self.options or (self.also is not None and self.also(value))

    def _nearest(self, value: object) -> str:
        """What was given, and the nearest name it may mean where one is close."""
        import difflib  # here: only a refusal suggests, and a start imports none (2 ms)

        close = (
            difflib.get_close_matches(value, (*self.options, *self.known), n=1)
            if isinstance(value, str)
            else []
        )
        return shown(value) + (f" (the nearest: {close[0]!r})" if close else "")

    def __call__(self, name: str, value: object) -> str | np.ndarray:
        if isinstance(value, str) and self.takes(value):
            return value
        if isinstance(value, str) or not self.per_layout:
            raise refuse(name, self.allowed, self._nearest(value))
        try:
            a = np.asarray(value)
        except (TypeError, ValueError):  # a ragged list: no array at all
            a = np.asarray(None)
        if a.dtype.kind not in "UO":
            bad = np.ones(a.shape, dtype=bool)
        else:
            bad = ~np.isin(a, list(self.options))
            # each name once, not each layout; what is no name (None, a list) stays refused
            names = {v for v in a[bad].ravel().tolist() if isinstance(v, str)}
            for other in names if self.also is not None else ():
                bad &= ~((a == other) & self.also(other))
        if bad.any() or a.ndim == 0 or a.size == 0:
            got = shown(value)
            if a.ndim and bad.any():
                index = tuple(np.argwhere(bad)[0].tolist())
                got = f"{np.asarray(a[index]).tolist()!r} at index {index}"
            raise refuse(name, self.allowed, got)
        return a.astype(str)


@record
class Switch:
    """True or false."""

    allowed: str = "true or false"

    def __call__(self, name: str, value: object) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise refuse(name, self.allowed, shown(value))
        return bool(value)


@record
class Instance:
    """An instance of ``kind`` (a chip, a model, a profile)."""

    kind: type
    where: str = " (see scaling_widgets.presets)"

    def __call__(self, name: str, value: object) -> Any:
        if not isinstance(value, self.kind):
            article = "an" if self.kind.__name__[0] in "AEIOU" else "a"
            raise refuse(name, f"{article} {self.kind.__name__}{self.where}", shown(value))
        return value


@record
class Maybe:
    """None (the default it stands for is written in ``absent``), or what ``inner`` takes."""

    inner: Callable[[str, object], Any]

    def __call__(self, name: str, value: object) -> Any:
        return None if value is None else self.inner(name, value)


def checked(default: Any, check: Callable[[str, object], Any]) -> Any:
    """A dataclass field with its default and the check a value runs on it when it is built.

    Parameters
    ----------
    default : Any
        The field's default, kept as it is (the check runs on it when a value is built).
    check : callable
        ``check(name, value)``, which returns the value in the form the formulas take or raises
        ``InputError``: a ``Number``, ``Whole``, ``Choice``, ``Switch``, ``Instance`` or
        ``Maybe``.

    Returns
    -------
    field : dataclasses.Field
        The field, its check in its metadata (typed ``Any``: a type checker reads it as the
        field's value, as it reads ``dataclasses.field``).
    """
    return dataclasses.field(default=default, metadata={"check": check})


def required(check: Callable[[str, object], Any]) -> Any:
    """A dataclass field with no default, and the check a value runs on it when it is built.

    Parameters
    ----------
    check : callable
        ``check(name, value)``, which returns the value in the form the formulas take or raises
        ``InputError`` (as for ``checked``).

    Returns
    -------
    field : dataclasses.Field
        The field, its check in its metadata (typed ``Any``, as ``checked``).
    """
    return dataclasses.field(metadata={"check": check})


def check_fields(value: Any, skip: tuple[str, ...] = ()) -> None:
    """Run every field's check on a frozen dataclass being built; keep what each returns (a list
    becomes an array, a one-element array its Python value). ``skip``: fields checked otherwise.

    Parameters
    ----------
    value : Any
        The frozen dataclass being built (from its ``__post_init__``); its fields made with
        ``checked`` or ``required`` carry their check.
    skip : tuple of str, default ()
        The names of fields not to check here.

    Returns
    -------
    None
        ``value``'s fields are set in place; a field that fails its check raises ``InputError``.

    Raises
    ------
    InputError
        From the first field whose check refuses its value.
    """
    for field in dataclasses.fields(value):
        check = field.metadata.get("check")
        if check is not None and field.name not in skip:
            object.__setattr__(value, field.name, check(field.name, getattr(value, field.name)))


def per_layout(check: Callable[[str, object], Any] | None) -> bool:
    """Whether a field's check takes an array, one value per layout.

    Parameters
    ----------
    check : callable, optional
        The field's check (its metadata's "check"); None: a field without one.

    Returns
    -------
    per_layout : bool
        True when the check (or the check inside a ``Maybe``) is ``per_layout``; False for a
        field without one (None).
    """
    return getattr(getattr(check, "inner", check), "per_layout", False)


def scalar(a: Any) -> Any:
    """A 0-d array as its Python value (an int, a float or a name), so that one layout's fields
    print and serialize as themselves.

    Parameters
    ----------
    a : Any
        A value, a 0-d array among others.

    Returns
    -------
    value : int, float, str or what ``a`` is
        ``a.item()`` for a 0-d array; anything else as it is.
    """
    return a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a


def first(mask: ArrayLike) -> tuple[int, ...]:
    """The index of the first True in ``mask`` (``()`` for one value).

    Parameters
    ----------
    mask : array_like of bool
        One boolean per layout, with at least one True when it has an axis.

    Returns
    -------
    index : tuple of int
        The position of the first True, one entry per axis; ``()`` for a 0-d mask, whatever it
        holds.
    """
    mask = np.asarray(mask)
    return () if mask.ndim == 0 else tuple(np.argwhere(mask)[0].tolist())


def _array(name: str, value, check, allowed: str, whole: bool):
    """``value`` as a checked array: integers stay integers, whole numbers become int64."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list: no array at all
        raise refuse(name, allowed, shown(value)) from None
    if a.dtype.kind not in "iuf" or (a.ndim and not check.per_layout) or a.size == 0:
        # bools are no count, complex no quantity, strings no number; an array only per layout
        raise refuse(name, allowed, shown(value))
    if a.size > 1024:  # large: the extremes decide (a NaN fails both), then rounding if needed
        good = check.ok(np.array([a.min(), a.max()])).all()
        if good and (not whole or a.dtype.kind in "iu" or check.ok(a).all()):
            return _typed(a, whole)
    elif check.ok(a).all():
        return _typed(a, whole)
    bad = ~check.ok(a)
    if a.ndim == 0:
        raise refuse(name, allowed, _number_shown(a.item()))
    index = first(bad)
    raise refuse(name, allowed, f"{_number_shown(a[index].item())} at index {index}")


def _typed(a: np.ndarray, whole: bool):
    if whole:
        a = a.astype(np.int64, copy=False)
    return scalar(a) if a.ndim == 0 else a


def _is_real(value) -> bool:
    """A plain Python or numpy number that is no bool and is finite-checked by the range."""
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and (not isinstance(value, int) or abs(value) < 2**1023)
    )


def _number_shown(value) -> str:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return f"{value:g}"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    return f"{value:g}" if isinstance(value, (float, np.floating)) else repr(value)


def _short(x: float) -> str:
    return f"{x:g}".replace("e+", "e")


def _whole_shown(n: int) -> str:
    return "2**53" if n == LARGEST_WHOLE else f"{n:,}"
