"""Structured lines: words and formulas, written once, rendered as plain text or as HTML/LaTeX.

A ``Line`` is a run of parts: plain words (``str``) and ``Math``, a formula with its numbers
substituted, given in both notations. The CLI prints ``plain(line)``; the panel shows
``html(line)``, where MathJax typesets the ``$...$``.
"""

from __future__ import annotations

import re

from ..cost.ground.records import record


@record
class Math:
    """A formula: ``plain`` for a terminal (α²/(M_X·M_Y·F)), ``tex`` for the page."""

    plain: str
    tex: str


@record
class Line:
    """One sentence of a report. ``kind`` says what it is: "verdict", "threshold", "note",
    "memory", "step", "time"; ``strong`` marks the headline."""

    kind: str
    parts: tuple
    strong: bool = False

    @classmethod
    def of(cls, kind: str, *parts, strong: bool = False) -> Line:
        """A line of ``parts``, in order, the empty strings left out.

        Parameters
        ----------
        kind : str
            What the line is: "verdict", "threshold", "note", "memory", "step", "time", or
            "batch" (the batch rounded to whole sequences, ``explain.rounded_batch``).
        *parts : str or Math
            The words and formulas, in reading order.
        strong : bool, default False
            Whether the line is the headline (bold in HTML).

        Returns
        -------
        line : Line
            The line.
        """
        return cls(kind, tuple(p for p in parts if p != ""), strong)


def plain(line: Line) -> str:
    """The line as text for a terminal.

    Parameters
    ----------
    line : Line
        The line to render.

    Returns
    -------
    text : str
        Its words, and each formula in its plain notation.
    """
    return "".join(p.plain if isinstance(p, Math) else p for p in line.parts)


def html(line: Line) -> str:
    """The line as HTML with ``$...$`` LaTeX; a comma inside a number is written {,} for LaTeX.

    Parameters
    ----------
    line : Line
        The line to render.

    Returns
    -------
    text : str
        Its words HTML-escaped and each formula's TeX between dollars, all in ``<b>`` when the
        line is strong.
    """
    import html  # here: only the widgets write HTML, and the command line starts 1 ms sooner

    out = "".join(
        f"${_thousands(p.tex)}$" if isinstance(p, Math) else html.escape(p) for p in line.parts
    )
    return f"<b>{out}</b>" if line.strong else out


def _thousands(tex: str) -> str:
    """Inside $...$ a comma is punctuation to LaTeX: 2,550 becomes 2{,}550."""
    return re.sub(r"(\d),(\d{3})", r"\1{,}\2", tex)


def tex_text(text: str) -> str:
    """A human number such as 3M inside LaTeX: the letters upright.

    Parameters
    ----------
    text : str
        The number as ``units`` writes it, such as "3.0M".

    Returns
    -------
    tex : str
        The same, each run of letters in ``\\text{...}``.
    """
    return re.sub(r"([A-Za-z]+)", r"\\text{\1}", text)


def tex_sci(x: float) -> str:
    """4.59e14 as LaTeX: 4.59\\times 10^{14}.

    Parameters
    ----------
    x : float
        The number.

    Returns
    -------
    tex : str
        Three significant digits, times a power of ten when there is an exponent.
    """
    mantissa, _, exponent = f"{x:.3g}".partition("e")
    return mantissa if not exponent else rf"{mantissa}\times 10^{{{int(exponent)}}}"
