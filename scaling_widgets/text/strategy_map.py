"""The strategy map in words: each family's name, a cell's layout, the map as a grid of letters
(the CLI's) and as a record (``map --json``)."""

from __future__ import annotations

import math

import numpy as np

from ..cost.search.strategy_map import FAMILIES, NONE_FITS, THRESHOLDS, StrategyMap
from .explain import layout_text
from .units import batch, count, mesh, nbytes, seconds

FAMILY_NAMES = {
    "dp": "data parallel (ZeRO 0-2)",
    "fsdp": "FSDP (ZeRO-3)",
    "tp": "+ tensor parallel",
    "pp": "+ pipeline",
    "ep_cp": "+ expert or context parallel",
}
LETTERS = {"dp": "D", "fsdp": "F", "tp": "T", "pp": "P", "ep_cp": "E"}
NONE_FITS_LETTER, NONE_RUNS_LETTER = "x", "."
THRESHOLD_NAMES = {"fsdp": "FSDP alone", "fsdp+tp": "FSDP + TP"}


def where(m: StrategyMap, row: int, column: int) -> str:
    """A cell's place in words: "512 chips (64x8), batch 4M tokens".

    Parameters
    ----------
    m : StrategyMap
        The map.
    row : int
        The row: a count of chips, 0 the fewest.
    column : int
        The column: a global batch, 0 the smallest.

    Returns
    -------
    text : str
        The chips, the row's slice shape (and pods beyond one), the batch [tokens].
    """
    shape, pods = m.clusters[row]
    on = mesh(shape) + (f" x {pods} pods" if pods > 1 else "")
    return f"{count(m.chips[row])} chips ({on}), batch {batch(m.batches[column])} tokens"


def cell_text(m: StrategyMap, row: int, column: int) -> str:
    """A cell in one line: where, its family, its best layout, step, MFU and peak; or why none.

    Parameters
    ----------
    m : StrategyMap
        The map.
    row : int
        The row: a count of chips, 0 the fewest.
    column : int
        The column: a global batch, 0 the smallest.

    Returns
    -------
    text : str
        ``where``, then the family, the best layout (``explain.layout_text``), its step, MFU
        and peak; or that no layout runs, or what the leanest layout needs when nothing fits.
    """
    at = where(m, row, column)
    if not m.runs[row, column]:
        return f"{at}: no layout runs (too few sequences for these chips)"
    if not m.fits[row, column]:
        return (
            f"{at}: nothing fits; the leanest layout needs {nbytes(m.memory[row, column])} a chip"
        )
    knobs = m.layout(row, column)
    family = FAMILY_NAMES[FAMILIES[m.family[row, column]]]
    return (
        f"{at}: {family}: {layout_text(knobs, m.clusters[row][0])}; step "
        f"{seconds(m.step_time[row, column])}, MFU {m.mfu[row, column]:.0%}, peak "
        f"{nbytes(m.memory[row, column])}"
    )


def legend() -> str:
    """What the letters and marks of ``as_text`` stand for.

    Returns
    -------
    text : str
        Each family's letter and name, the letters for "nothing fits" and "no layout runs",
        and the two threshold marks.
    """
    families = ", ".join(f"{LETTERS[f]} {FAMILY_NAMES[f]}" for f in FAMILIES)
    return (
        f"{families}; {NONE_FITS_LETTER} nothing fits, {NONE_RUNS_LETTER} no layout runs. "
        "| marks where FSDP alone turns compute-bound, : where FSDP + TP does."
    )


def as_text(m: StrategyMap, title: str) -> str:
    """The map as a grid of letters, the most chips on top, the batch growing to the right; each
    row marks where the chapter's thresholds fall.

    Parameters
    ----------
    m : StrategyMap
        The map.
    title : str
        The first line.

    Returns
    -------
    text : str
        The title, the legend, a row of letters a chip count, and the batch axis [tokens].
    """
    width = 3
    rows = [title, legend(), ""]
    for i in reversed(range(len(m.chips))):
        cells = []
        for j in range(len(m.batches)):
            family = m.family[i, j]
            cell = (
                LETTERS[FAMILIES[family]]
                if family != NONE_FITS
                else NONE_FITS_LETTER
                if m.runs[i, j]
                else NONE_RUNS_LETTER
            )
            cells.append(_marked(m, i, j) + cell)
        rows.append(f"{count(m.chips[i]):>7} " + "".join(c.rjust(width) for c in cells))
    axis = "".join(batch(b).rjust(width * 2) for b in m.batches[::2])
    rows += [f"{'chips':>7} {axis}", f"{'':>7} global batch [tokens] ->"]
    return "\n".join(rows)


def _marked(m: StrategyMap, row: int, column: int) -> str:
    """'|' or ':' before the first column at or past a threshold of the row."""
    marks = ""
    for name, mark in zip(THRESHOLDS, "|:"):
        at = m.thresholds[name][row]
        if not math.isfinite(at) or at <= 0:
            continue
        first = int(np.searchsorted(m.batches, at))
        marks += mark * (first == column)
    return marks[:1]


def as_record(m: StrategyMap) -> dict:
    """Every cell's family, layout, step, MFU and peak, and each row's thresholds (JSON).

    Parameters
    ----------
    m : StrategyMap
        The map.

    Returns
    -------
    record : dict
        "batches" [tokens], "chips" [chips], "evaluated" (the layouts), "thresholds" (each
        row's batch where FSDP alone and FSDP + TP turn compute-bound [tokens], None where not
        finite) and "cells" (rows of columns: the family, layout, step time [s], MFU and peak
        [bytes]; or why none and the leanest layout's peak [bytes]).
    """

    def cell(i, j):
        knobs = m.layout(i, j)
        if knobs is None:
            why = "nothing fits" if m.runs[i, j] else "no layout runs"
            leanest = float(m.memory[i, j]) if m.runs[i, j] else None
            return {"family": None, "why": why, "leanest_memory": leanest}
        return {
            "family": FAMILIES[m.family[i, j]],
            "layout": {**knobs, "slice_shape": list(knobs["slice_shape"])},
            "step_time": float(m.step_time[i, j]),
            "mfu": float(m.mfu[i, j]),
            "memory": float(m.memory[i, j]),
        }

    finite = {
        name: [float(v) if math.isfinite(v) else None for v in values]
        for name, values in m.thresholds.items()
    }
    return {
        "batches": m.batches.tolist(),
        "chips": m.chips.tolist(),
        "evaluated": m.evaluated,
        "thresholds": finite,
        "cells": [[cell(i, j) for j in range(len(m.batches))] for i in range(len(m.chips))],
    }
