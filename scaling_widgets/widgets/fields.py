"""How each field of a scenario is checked on its own: ``check(name, value) -> value``.

Each maker below returns such a check. A wrong type or range raises ``ValueError`` naming the
field, the value and what is allowed; JSON's numbers (an int where a float is meant) and lists
(where a tuple is meant) are taken.
"""

from __future__ import annotations

import json
import math
import numbers


def _refuse(name: str, allowed: str, value):
    return ValueError(f"{name} must be {allowed}; got {value!r}")


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(low: float, high: float, unit: str, closed: bool = False, low_closed: bool = False):
    """A real number in (low, high), or (low, high] when ``closed``, [low, high) with ``low_closed``."""
    lo, hi = (f"{x:g}".replace("e+", "e") for x in (low, high))
    allowed = f"a number of {unit} {'>=' if low_closed else '>'} {lo} and {'<=' if closed else '<'} {hi}"

    def check(name, value):
        ok = _real(value) and math.isfinite(value)
        ok = ok and (value >= low if low_closed else value > low) and (value <= high if closed else value < high)
        if not ok:
            raise _refuse(name, allowed, value)
        return float(value)

    return check


def whole(low: int, high: int):
    """A whole number from low to high (a float such as 4.0 is taken as 4)."""

    def check(name, value):
        if not (_real(value) and math.isfinite(value) and value == int(value) and low <= value <= high):
            raise _refuse(name, f"a whole number from {low} to {high:,}", value)
        return int(value)

    return check


def one_of(options):
    """One of ``options`` (a name, or a number; True is not 1 here)."""

    def check(name, value):
        for option in options:
            same_kind = isinstance(value, (bool, str)) == isinstance(option, (bool, str))
            if same_kind and value == option:
                return option
        raise _refuse(name, f"one of {', '.join(map(repr, options))}", value)

    return check


def optional(inner):
    """None, or what ``inner`` takes."""

    def check(name, value):
        return None if value is None else inner(name, value)

    return check


def boolean(name, value):
    if not isinstance(value, bool):
        raise _refuse(name, "true or false", value)
    return value


def shape(name, value):
    """Axis lengths such as (16, 16, 16), or None for the chip's full pod."""
    if value is None:
        return None
    ok = isinstance(value, (tuple, list)) and 0 < len(value) <= 4
    ok = ok and all(_real(n) and math.isfinite(n) and n == int(n) and 1 <= n <= 2**20 for n in value)
    if not ok:
        raise _refuse(name, "1 to 4 axis lengths from 1 to 2**20, such as (16, 16, 16)", value)
    return tuple(int(n) for n in value)


def roles(allowed):
    def check(name, value):
        ok = isinstance(value, (tuple, list)) and len(value) <= 4 and all(r in allowed for r in value)
        if not ok:
            raise _refuse(name, "one of 'x', 'y', 'z' per slice axis, or empty for the automatic rule", value)
        return tuple(value)

    return check


def preset(find):
    """A preset's name or the preset itself (a ``Model``, ``Chip`` or ``Precision``)."""

    def check(name, value):
        if not isinstance(value, (str, dict)) and not hasattr(value, "__dataclass_fields__"):
            raise _refuse(name, "a preset's name or a preset", value)
        return find(value)

    return check


def profile(name, value):
    """An efficiency profile (SPEC C.3), or its fields as a JSON object."""
    from ..cost.calibrate import profile_from_json  # the one reader of a profile's fields
    from ..cost.steptime import Profile

    if isinstance(value, Profile):
        return value
    if not isinstance(value, dict):
        raise _refuse(name, "an efficiency profile or its fields", value)
    return profile_from_json(json.dumps(value))
