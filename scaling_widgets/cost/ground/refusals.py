"""How a refusal reads: ``InputError`` names the field, what it allows and what it got; ``require``
refuses a field of a chip or a model as "<Kind> <field> must be ..."."""

from __future__ import annotations

import math
import reprlib

LARGEST = 1e30  # far beyond any real quantity; keeps products of several inputs finite
SMALLEST = 1e-30  # far below any real quantity; keeps quotients of several inputs finite
LARGEST_WHOLE = 2**53  # whole numbers stay exact as floats and never wrap as int64


class InputError(ValueError):
    """A value the cost model cannot take: ``field`` names it, ``allowed`` says what would do.

    The message reads "<field> must be <allowed>; got <got>"; the CLI writes its own flag for
    the field (``--tp`` for ``y``), the panel shows the message as it is.
    """

    def __init__(self, field: str, allowed: str, got: str) -> None:
        super().__init__(f"{field} must be {allowed}; got {got}")
        self.field, self.allowed, self.got = field, allowed, got

    def named(self, name: str) -> str:
        """The message with the field called ``name``.

        Parameters
        ----------
        name : str
            What to call the field, such as the CLI's flag (``--tp`` for ``y``).

        Returns
        -------
        message : str
            "<name> must be <allowed>; got <got>".
        """
        return f"{name} must be {self.allowed}; got {self.got}"


def refuse(field: str, allowed: str, got: object) -> InputError:
    """The error for ``field``: raise what this returns. ``got`` is shown as it is if it is a
    string (already formatted), else by its repr.

    Parameters
    ----------
    field : str
        The field to mend, as a user names it (``y``, ``batch``, ``Chip flops``).
    allowed : str
        What the field would take, worded to follow "must be".
    got : object
        What it got: a str as it is, anything else by its repr.

    Returns
    -------
    error : InputError
        "<field> must be <allowed>; got <got>", to raise.
    """
    return InputError(field, allowed, got if isinstance(got, str) else repr(got))


def require(obj: object, field: str, ok: bool, allowed: str) -> None:
    """Refuse a field of a preset-like value (a chip, a model) as "<Kind> <field> must be ...".

    Parameters
    ----------
    obj : object
        The value whose field is checked; its type's name is the <Kind> of the message.
    field : str
        The name of the field of ``obj``; its value is shown in the message (``shown``).
    ok : bool
        Whether the field's value is allowed.
    allowed : str
        What the field would take, worded to follow "must be".

    Returns
    -------
    None
        When ``ok``; otherwise it raises ``InputError``.

    Raises
    ------
    InputError
        When not ``ok``: "<Kind> <field> must be <allowed>; got <value>".
    """
    if not ok:
        raise refuse(f"{type(obj).__name__} {field}", allowed, shown(getattr(obj, field)))


def is_number(value: object) -> bool:
    """A finite int or float (not a bool); an int of any size, never converted to float.

    Parameters
    ----------
    value : object
        What to test.

    Returns
    -------
    is_number : bool
        Whether ``value`` is one.
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return isinstance(value, int) or math.isfinite(value)


def is_positive(value: object) -> bool:
    """Within 1e-30 and 1e30, as the formulas take: their products and quotients stay finite.

    Parameters
    ----------
    value : object
        What to test.

    Returns
    -------
    is_positive : bool
        Whether ``value`` is a number (``is_number``) from 1e-30 up to, not including, 1e30.
    """
    return is_number(value) and SMALLEST <= value < LARGEST


def is_whole(value: object, largest: int, smallest: int = 1) -> bool:
    """An int (not a bool) from ``smallest`` to ``largest``, both allowed.

    Parameters
    ----------
    value : object
        What to test.
    largest : int
        The largest int allowed.
    smallest : int, default 1
        The smallest int allowed.

    Returns
    -------
    is_whole : bool
        Whether ``value`` is one.
    """
    return isinstance(value, int) and not isinstance(value, bool) and smallest <= value <= largest


def shown(value: object) -> str:
    """``value`` for a message: short, and safe for an int of any size or a deep list.

    Parameters
    ----------
    value : object
        What a field got.

    Returns
    -------
    text : str
        Its abbreviated repr, or its size in bits for an int beyond 64 bits.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    return reprlib.repr(value)
