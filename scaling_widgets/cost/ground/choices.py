"""Element-wise choice among named formulas: a knob such as the recompute policy may name a
different formula for each layout of an array."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def per_choice(choices: str | ArrayLike, evaluate: Callable[[str], Any]) -> Any:
    """``evaluate(name)`` for each layout's name in ``choices`` (a str, or an array of names).

    Each distinct name is evaluated once, over every layout, and each layout keeps its own;
    tuples (of tuples) of arrays are chosen leaf by leaf.

    Parameters
    ----------
    choices : str or array_like of str
        The name of the formula for every layout, or one name per layout.
    evaluate : callable
        ``evaluate(name)``: the named formula over every layout; a float, an array that
        broadcasts to the shape of ``choices``, or tuples (of tuples) of them.

    Returns
    -------
    value : float, np.ndarray, or tuple of them
        What ``evaluate`` returns for the one name; for several names, its values chosen layout
        by layout (an array of the shape of ``choices``, or tuples of them).

    Examples
    --------
    >>> formulas = {"a": 1.0, "b": np.arange(3.0) * 10}
    >>> per_choice(np.array(["a", "b", "a"]), lambda name: formulas[name])
    array([ 1., 10.,  1.])
    """
    if isinstance(choices, str):
        return evaluate(choices)
    choices = np.asarray(choices)
    if choices.ndim == 0:  # one layout's name, as an array
        return evaluate(str(choices))
    names, conditions = _distinct(choices)
    if len(names) == 1:
        return evaluate(names[0])
    return _select(conditions, [evaluate(n) for n in names])


def _distinct(choices: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    """The distinct names, in order of first appearance, and where each stands. A knob has a
    handful of names over thousands of layouts: one comparison a name, not a sort of them all."""
    names, conditions = [], []
    left = np.ones(choices.shape, dtype=bool)
    while left.flat[first := int(left.argmax())]:  # the first layout whose name is not seen yet
        name = choices.flat[first]
        where = choices == name
        names.append(str(name))
        conditions.append(where)
        left &= ~where
    return names, conditions


def _select(conditions, values):
    if isinstance(values[0], tuple):
        return tuple(_select(conditions, [v[i] for v in values]) for i in range(len(values[0])))
    return np.select(conditions, values)
