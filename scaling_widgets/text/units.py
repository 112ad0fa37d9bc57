"""Human units at the edges: "3M" tokens in, "311 ms" and "96 GB" out. Inside, everything is SI."""

from __future__ import annotations

import math
import re

# Counts of tokens a run trains on, and money, in SI: 15T is 15e12. Sizes (a sequence, a batch of
# tokens, a chip count) in powers of two, as people say them: 8k is 8,192, and "a 4M-token batch"
# is 512 sequences of 8,192, 4,194,304 tokens (MaxText's and Megatron-LM's scripts count so).
SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
BINARY = {"": 1, "k": 2**10, "K": 2**10, "M": 2**20}
BATCH = {**BINARY, "G": 2**30}
_NUMBER = re.compile(r"^\s*([+-]?[0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def _read(text, field: str, suffixes: dict, example: str, high: float) -> float:
    """A number with one of ``suffixes``; one line naming the limit for anything else."""
    match = _NUMBER.match(str(text))
    if match and match[2] not in suffixes:  # "4m" could be milli; "4X" is nothing
        known = ", ".join(k for k in suffixes if k)
        raise ValueError(f"{field} takes the suffixes {known} (such as {example}); got {text!r}")
    value = float(match[1].replace("_", "")) * suffixes[match[2]] if match else math.nan
    if not (0 < value <= high):  # NaN fails too
        raise ValueError(
            f"{field} must be a number > 0 and at most {sci(high)}, such as {example}; got {text!r}"
        )
    return value


def parse_count(text: str, field: str = "value", high: float = 1e30) -> float:
    """A positive count written as 3M, 3e6, 3000000, 1.5B or 15T (SI: k or K, M, B or G, T), at
    most ``high``.

    Parameters
    ----------
    text : str
        The count as written; underscores in the number are dropped (3_000_000).
    field : str, default "value"
        The field or flag the error message names.
    high : float, default 1e30
        The largest count taken.

    Returns
    -------
    value : float
        The count, the suffix multiplied out (3M is 3e6).

    Raises
    ------
    ValueError
        If the suffix is not one of ``SUFFIXES``, or the count is not a number > 0 and at most
        ``high``.

    Examples
    --------
    >>> parse_count("3M"), parse_count("3e6"), parse_count("3_000_000"), parse_count("15T")
    (3000000.0, 3000000.0, 3000000.0, 15000000000000.0)
    """
    return _read(text, field, SUFFIXES, "3M, 3e6 or 3000000", high)


def parse_batch(text: str, field: str = "batch", high: float = 1e30) -> float:
    """A batch of tokens written as 4M, 4e6, 4194304 or 512K, its suffixes powers of two (K is
    2**10, M 2**20, G 2**30: 4M is 4,194,304 tokens, 512 sequences of 8,192), at most ``high``.

    Parameters
    ----------
    text : str
        The batch as written; underscores in the number are dropped.
    field : str, default "batch"
        The field or flag the error message names.
    high : float, default 1e30
        The largest batch taken [tokens].

    Returns
    -------
    value : float
        The batch, the suffix multiplied out [tokens].

    Raises
    ------
    ValueError
        If the suffix is not one of ``BATCH``, or the batch is not a number > 0 and at most
        ``high``.

    Examples
    --------
    >>> parse_batch("4M"), parse_batch("16M"), parse_batch("4e6"), parse_batch("512K")
    (4194304.0, 16777216.0, 4000000.0, 524288.0)
    """
    return _read(text, field, BATCH, "4M (4,194,304), 4e6 or 4194304", high)


def batch(n: float) -> str:
    """A batch of tokens as ``parse_batch`` reads it: 4M for 4,194,304, 1.5M, 640K; exact where
    three decimals of K, M or G say it, else three significant digits.

    Parameters
    ----------
    n : float
        The batch [tokens].

    Returns
    -------
    text : str
        The batch with K (2**10), M (2**20) or G (2**30); "∞" when ``n`` is not finite.

    Examples
    --------
    >>> batch(4194304), batch(6 * 2**20 + 2**19), batch(3e6), batch(655_360), batch(1000)
    ('4M', '6.5M', '2.86M', '640K', '1000')
    """
    if not math.isfinite(n):
        return "∞" if n > 0 else "?"
    for scale, suffix in ((2**30, "G"), (2**20, "M"), (2**10, "K")):
        if abs(n) >= scale:
            q = n / scale
            exact = float(round(q, 3)) == q
            said = f"{q:.3f}".rstrip("0").rstrip(".") if exact or q >= 1000 else f"{q:.3g}"
            return said + suffix
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.3g}"


def batch_echo(n: float) -> str:
    """A batch said both ways, so that no one reads M as a million: "4M = 4,194,304 tokens".

    Parameters
    ----------
    n : float
        The batch [tokens].

    Returns
    -------
    text : str
        ``batch(n)`` and the whole count, or the count alone where the two would be the same.

    Examples
    --------
    >>> batch_echo(4194304), batch_echo(3e6), batch_echo(512)
    ('4M = 4,194,304 tokens', '2.86M = 3,000,000 tokens', '512 tokens')
    """
    whole = f"{n:,.0f} tokens" if float(n).is_integer() else f"{n:,.2f} tokens"
    return whole if n < 2**10 else f"{batch(n)} = {whole}"


def parse_whole(text: str, field: str = "value") -> int:
    """A whole number from 1 to 2**53, also written as 1e3 or 2k (2,048: sizes count in powers
    of two).

    Parameters
    ----------
    text : str
        The number as written: k or K is 2**10, M is 2**20 (``BINARY``).
    field : str, default "value"
        The field or flag the error message names.

    Returns
    -------
    value : int
        The number, the suffix multiplied out (8k is 8192).

    Raises
    ------
    ValueError
        If the suffix is not one of ``BINARY``, or the number is not whole, from 1 to 2**53.

    Examples
    --------
    >>> parse_whole("8k"), parse_whole("16K"), parse_whole("1e3")
    (8192, 16384, 1000)
    """
    try:
        value = _read(text, field, BINARY, "4, 8k or 1e3", 2.0**53)
    except ValueError as err:
        if "suffixes" in str(err):
            raise
        value = 0.5
    if value != int(value):
        raise ValueError(
            f"{field} must be a whole number from 1 to 2**53, such as 4 or 8k; got {text!r}"
        )
    return int(value)


def parse_mesh(text: str, field: str = "mesh") -> tuple[int, ...]:
    """A slice shape written as 16x16x16 (or 16*16*16, 16,16,16).

    Parameters
    ----------
    text : str
        The axis lengths joined by "x", "×", "*" or ",".
    field : str, default "mesh"
        The field or flag the error message names.

    Returns
    -------
    shape : tuple of int
        The length of each axis [chips].

    Raises
    ------
    ValueError
        If a part is not a whole number from 1 to 9,999,999.

    Examples
    --------
    >>> parse_mesh("16x20x28")
    (16, 20, 28)
    """
    parts = re.split(r"\s*[x×*,]\s*", str(text).strip().lower())
    if not all(re.fullmatch(r"[0-9]{1,7}", p) and int(p) >= 1 for p in parts):
        raise ValueError(
            f"{field} must be axis lengths >= 1 joined by 'x', such as 16x16x16; got {text!r}"
        )
    return tuple(int(p) for p in parts)


def mesh(shape) -> str:
    """A slice shape the way ``parse_mesh`` reads it.

    Parameters
    ----------
    shape : tuple of int
        The length of each axis of the slice [chips].

    Returns
    -------
    text : str
        The lengths joined by "x".

    Examples
    --------
    >>> mesh((16, 20, 28))
    '16x20x28'
    """
    return "x".join(map(str, shape))


def tokens(n: float) -> str:
    """A token count the way people say it: 3.0M, 732, 870K.

    Parameters
    ----------
    n : float
        The count [tokens].

    Returns
    -------
    text : str
        Three significant digits with K, M, B or T; "∞" when ``n`` is not finite.
    """
    return _scaled(n, ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")))


def count(n: float) -> str:
    """A large count of parameters, FLOPs or chips: 13.0B, 6.3e24, 4,096.

    Parameters
    ----------
    n : float
        The count [parameters], [FLOP] or [chips].

    Returns
    -------
    text : str
        From 1e15 up in scientific notation, from 1e5 up with K, M, B or T, below that with
        thousands separators.
    """
    if n >= 1e15:
        return sci(n)
    if n >= 1e5:
        return _scaled(n, ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")), digits="#.3g")
    return f"{n:,.0f}" if n == round(n) else f"{n:,.3g}"


def nbytes(n: float) -> str:
    """Bytes in SI units: 96 GB, 1.95 GB, 7.9 TB.

    Parameters
    ----------
    n : float
        The size [bytes].

    Returns
    -------
    text : str
        Three significant digits with B, kB, MB, GB or TB; "∞" when ``n`` is not finite.
    """
    return _scaled(n, ((1e12, " TB"), (1e9, " GB"), (1e6, " MB"), (1e3, " kB")), unit=" B")


def energy(joules: float) -> str:
    """Energy in watt-hours, SI-scaled: 49.8 GWh, 310 MWh.

    Parameters
    ----------
    joules : float
        The energy [J].

    Returns
    -------
    text : str
        Three significant digits with Wh, kWh, MWh, GWh or TWh; "∞" when ``joules`` is not
        finite.
    """
    return _scaled(joules / 3600, ((1e12, " TWh"), (1e9, " GWh"), (1e6, " MWh"), (1e3, " kWh")),
                   unit=" Wh")  # fmt: skip


def seconds(t: float) -> str:
    """A duration in the unit that reads best: 4.2 µs, 311 ms, 2.5 h, 17.0 days.

    Parameters
    ----------
    t : float
        The duration [s].

    Returns
    -------
    text : str
        The duration in µs, ms, s, min, h or days; "never" when ``t`` is not finite.
    """
    if not math.isfinite(t):
        return "never"
    for limit, scale, unit in (
        (1e-3, 1e6, " µs"),
        (1, 1e3, " ms"),
        (120, 1, " s"),
        (7200, 1 / 60, " min"),
    ):
        if t < limit:
            return f"{t * scale:.3g}{unit}"
    days = t / 86400
    return (
        f"{t / 3600:.3g} h"
        if days < 2
        else f"{days:.1f} days"
        if days < 1e5
        else f"{sci(days)} days"
    )


def sci(x: float) -> str:
    """A hardware number in short scientific notation: 4.59e14.

    Parameters
    ----------
    x : float
        The number.

    Returns
    -------
    text : str
        Three significant digits, the exponent without "+" or leading zeros.
    """
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{x:.3g}")


def _scaled(n: float, steps, unit: str = "", digits: str = ".3g") -> str:
    if not math.isfinite(n):
        return "∞"
    if abs(n) >= 1000 * steps[0][0]:  # beyond the largest suffix: 1e+17T reads worse than 1e29
        return sci(n) + unit
    for scale, suffix in steps:
        if abs(n) >= scale:
            # "#.3g" keeps 13.0 and writes 671.
            return f"{n / scale:{digits}}".removesuffix(".") + suffix
    return f"{n:.3g}{unit}"
