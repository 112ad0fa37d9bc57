"""The interval around a predicted step (MODEL.md §F.3): where measured steps fell around the
predictions made for them by a fit that never saw their source.

``benchmarks/bench_predictions.py --write`` keeps each published run's out-of-sample ratio,
measured over predicted, in ``data/step_residuals.json``. A prediction's interval takes the runs
nearest it: those of its stack on its chip, else of its stack, else every run; the first of these
pools with runs from ``FEWEST`` sources or more stands, for a source's runs share its bias (one
source's runs all come out slower, or all faster, than predicted): the spread between sources is
what a new source meets. The interval is that pool's central ``LEVEL`` of the ratios times the
prediction: a pool of other stacks or chips is wider, as it should be where the prediction has no
neighbours.

Two layouts of one plan tie when the model cannot order them: when the ratio of their predicted
steps is within the spread of its error on the ratio of two runs of one source (``pair_spread``),
all ordered pairs of each source's runs, whose central ``LEVEL`` is about 0.86 to 1.16.
"""

from __future__ import annotations

import functools
import json
import os
from itertools import permutations

import numpy as np

from ..ground.records import record

# os.path, not pathlib: pathlib imports urllib and ipaddress, 3 ms of every start
RESIDUALS = os.path.join(os.path.dirname(__file__), "..", "..", "data", "step_residuals.json")
LEVEL = 0.8  # the share of out-of-sample runs the interval is to hold
FEWEST = 4  # the sources a pool needs to stand: fewer show too little of the spread between them


@record
class Spread:
    """Where measured steps fell around their out-of-sample predictions: the ratios at the
    interval's two ends, measured over predicted, the runs they come from, their sources and the
    pool's name ("maxtext on TPU v5e", "maxtext", "every stack")."""

    low: float
    high: float
    runs: int
    sources: int
    pool: str


def _central(ratios: list[float]) -> tuple[float, float]:
    """The ends of the central ``LEVEL`` of ``ratios``, interpolated between the sorted values
    as ``np.quantile`` does by default (which imports numpy.ma, 7 ms of every start)."""
    ordered = np.sort(ratios)
    tail = (1 - LEVEL) / 2
    at = np.array([tail, 1 - tail]) * (len(ordered) - 1)
    low, high = np.interp(at, np.arange(len(ordered)), ordered)
    return float(low), float(high)


def spread_of(rows: list[dict], stack: str, chip: str) -> Spread | None:
    """The spread of the nearest pool of ``rows`` with runs of ``FEWEST`` sources.

    Parameters
    ----------
    rows : list of dict
        One per run: "source", "stack", "chip" (the chip's name) and "ratio", its measured step
        over the step predicted without its source.
    stack : str
        The prediction's stack.
    chip : str
        The prediction's chip, by name ("H100", "TPU v5p").

    Returns
    -------
    spread : Spread or None
        The ratios at the central ``LEVEL``'s ends; None with fewer than ``FEWEST`` sources in
        all.
    """
    pools = (
        (f"{stack} on {chip}", [r for r in rows if r["stack"] == stack and r["chip"] == chip]),
        (stack, [r for r in rows if r["stack"] == stack]),
        ("every stack", rows),
    )
    for name, pool in pools:
        sources = len({r["source"] for r in pool})
        if sources >= FEWEST:
            low, high = _central([r["ratio"] for r in pool])
            return Spread(float(low), float(high), len(pool), sources, name)
    return None


def held_out_coverage(rows: list[dict]) -> float:
    """The share of runs inside the interval the other sources' runs give them, as a new
    source's run would be (``spread_of``).

    Parameters
    ----------
    rows : list of dict
        One per run: "source", "stack", "chip" and "ratio" (``spread_of``'s rows).

    Returns
    -------
    coverage : float
        From 0 to 1; ``LEVEL`` where the intervals say what they mean.
    """
    inside = 0
    for row in rows:
        others = [r for r in rows if r["source"] != row["source"]]
        spread = spread_of(others, row["stack"], row["chip"])
        inside += spread is not None and spread.low <= row["ratio"] <= spread.high
    return inside / len(rows)


@functools.lru_cache(maxsize=64)  # a stack on a chip: few, asked on every evaluation
def step_spread(stack: str, chip: str) -> Spread | None:
    """The spread the shipped out-of-sample residuals give a stack on a chip (``spread_of``).

    Parameters
    ----------
    stack : str
        The prediction's stack.
    chip : str
        The prediction's chip, by name.

    Returns
    -------
    spread : Spread or None
        None where the package ships no residuals.
    """
    if not os.path.exists(RESIDUALS):
        return None
    rows = _runs()
    return spread_of(rows, stack, chip)


def pair_spread_of(rows: list[dict]) -> Spread | None:
    """The spread of the model's error on the ratio of two runs of one source: for every ordered
    pair of a source's runs, the ratio of their measured-over-predicted ratios, central ``LEVEL``.

    Parameters
    ----------
    rows : list of dict
        One per run: "source" and "ratio" (``spread_of``'s rows).

    Returns
    -------
    spread : Spread or None
        Its ``runs`` counts the pairs; None where no source has two runs.
    """
    by_source: dict[str, list] = {}
    for r in rows:
        by_source.setdefault(r["source"], []).append(r["ratio"])
    ratios = [a / b for runs in by_source.values() for a, b in permutations(runs, 2)]
    if not ratios:
        return None
    low, high = _central(ratios)
    sources = sum(len(runs) > 1 for runs in by_source.values())
    return Spread(float(low), float(high), len(ratios), sources, "pairs")


@functools.lru_cache(maxsize=1)
def pair_spread() -> Spread | None:
    """``pair_spread_of`` the shipped residuals; None where the package ships none.

    Returns
    -------
    spread : Spread or None
        The spread of the error on two runs' ratio.
    """
    if not os.path.exists(RESIDUALS):
        return None
    return pair_spread_of(_runs())


def tie_band(predicted: bool) -> float:
    """The largest ratio of two steps the model cannot order: the upper end of its error on the
    ratio of two runs of one source (``pair_spread``); 1 (no ties) where the steps are not
    predicted (an MFU given or calibrated) or the package ships no residuals.

    Parameters
    ----------
    predicted : bool
        Whether the steps are the model's predictions, with an interval.

    Returns
    -------
    band : float
        A step within ``band`` times the fastest ties it.
    """
    pairs = pair_spread()
    return pairs.high if predicted and pairs is not None else 1.0


def _runs() -> list[dict]:
    """The held-out residuals' runs, as ``benchmarks/bench_predictions.py --write`` saved them."""
    with open(RESIDUALS, encoding="utf-8") as file:
        return json.load(file)["runs"]
