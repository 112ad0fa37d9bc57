"""Element-wise choice among named formulas: a knob such as the recompute policy may name a
different formula for each layout of an array."""

from __future__ import annotations

import numpy as np


def per_choice(choices, evaluate):
    """``evaluate(name)`` for each layout's name in ``choices`` (a str, or an array of names).

    Each distinct name is evaluated once, over every layout, and each layout keeps its own;
    tuples (of tuples) of arrays are chosen leaf by leaf.

    >>> formulas = {"a": 1.0, "b": np.arange(3.0) * 10}
    >>> per_choice(np.array(["a", "b", "a"]), lambda name: formulas[name])
    array([ 1., 10.,  1.])
    """
    if isinstance(choices, str):
        return evaluate(choices)
    choices = np.asarray(choices)
    names = [str(n) for n in np.unique(choices)]
    if len(names) == 1:
        return evaluate(names[0])
    return _select([choices == n for n in names], [evaluate(n) for n in names])


def _select(conditions, values):
    if isinstance(values[0], tuple):
        return tuple(_select(conditions, [v[i] for v in values]) for i in range(len(values[0])))
    return np.select(conditions, values)
