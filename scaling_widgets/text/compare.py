"""Scenarios side by side: their summaries, step breakdowns, peak memory and whole runs, a row a
number, each read from the scenario's own ``estimate --json`` record (``report.record``), the rows
whose numbers differ marked. As text, JSON or CSV."""

from __future__ import annotations

import csv
import io

from . import units
from .report import record


def _pct(x):
    return f"{x:.1%}"


# label, the record's path, how it reads
SUMMARY = (
    ("model", ("model",), str),
    ("hardware", ("hardware",), str),
    ("chips", ("chips",), units.count),
    ("layout", ("layout_name",), str),
    ("batch", ("batch_tokens",), units.batch),
    ("bound by", ("bottleneck",), str),
    ("step", ("step_time_s",), units.seconds),
    (
        "step: 80% interval",
        ("step_interval_s",),
        lambda ends: " to ".join(map(units.seconds, ends)),
    ),
    ("MFU", ("mfu",), _pct),
    ("fits", ("fits",), lambda fits: "yes" if fits else "no"),
)
STEP = tuple(
    (f"step: {term.replace('_', ' ')}", ("step_breakdown_s", term), units.seconds)
    for term in ("matmul", "memory_bound", "tp_exposed", "stage_to_stage", "bubble", "dp_exposed",
                 "fsdp_exposed", "dcn_exposed", "ep_exposed", "cp_exposed", "optimizer",
                 "overhead", "slowest_chip")
)  # fmt: skip
PEAK = tuple(
    (f"peak: {part.replace('_', ' ')}", ("peak_memory_bytes", part), units.nbytes)
    for part in ("weights", "grads", "optimizer", "activations", "working_set", "logits",
                 "outputs_held", "buffers", "workspaces", "allocator", "reserved")
)  # fmt: skip
RUN = (
    ("run: wall clock", ("run", "wall_s"), units.seconds),
    ("run: goodput", ("run", "goodput"), _pct),
    ("run: chip-hours", ("run", "chip_hours"), units.count),
    ("run: energy", ("run", "energy_j"), units.energy),
    ("run: cost", ("run", "cost"), units.count),
)
ROWS = SUMMARY + STEP + PEAK + RUN


def comparison(estimates: list, names: list[str]) -> dict:
    """The rows of a comparison: each with its label, the numbers as the records hold them, as
    they read, and whether they differ. Rows no scenario has (no run without tokens) are left
    out.

    Parameters
    ----------
    estimates : list of Estimate
        One estimate a scenario.
    names : list of str
        Each scenario's name, in the order of ``estimates`` (the CLI gives each file's name).

    Returns
    -------
    table : dict
        ``{"scenarios": names, "rows": [{"name", "values", "shown", "differs"}]}``.
    """
    records = [record(e) for e in estimates]
    rows = []
    for label, path, shown in ROWS:
        values = [_at(r, path) for r in records]
        if all(v is None for v in values):
            continue
        rows.append({
            "name": label,
            "values": values,
            "shown": ["—" if v is None else shown(v) for v in values],
            "differs": len({repr(v) for v in values}) > 1,
        })  # fmt: skip
    return {"scenarios": list(names), "rows": rows}


def _at(r: dict, path: tuple):
    for key in path:
        r = None if r is None else r.get(key)
    return r


def as_text(table: dict) -> str:
    """The comparison for a terminal: a column a scenario, "*" before a row whose numbers differ.

    Parameters
    ----------
    table : dict
        The comparison, as ``comparison`` makes it.

    Returns
    -------
    text : str
        A header of the scenarios' names, then a line a row, the numbers as they read.
    """
    names = table["scenarios"]
    width = max(len(row["name"]) for row in table["rows"]) + 2
    cols = [
        max(len(n), *(len(row["shown"][i]) for row in table["rows"])) for i, n in enumerate(names)
    ]
    head = " " * (width + 2) + "  ".join(n.ljust(c) for n, c in zip(names, cols))
    lines = [head]
    for row in table["rows"]:
        mark = "* " if row["differs"] else "  "
        cells = "  ".join(s.ljust(c) for s, c in zip(row["shown"], cols))
        lines.append(f"{mark}{row['name'].ljust(width)}{cells}".rstrip())
    return "\n".join(lines)


def as_csv(table: dict) -> str:
    """The comparison as CSV: the numbers as the records hold them, SI units.

    Parameters
    ----------
    table : dict
        The comparison, as ``comparison`` makes it.

    Returns
    -------
    text : str
        A header ("", the scenarios' names, "differs"), then a row a number: its label, each
        scenario's value (empty where it has none) and whether they differ.
    """
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["", *table["scenarios"], "differs"])
    for row in table["rows"]:
        writer.writerow([row["name"], *("" if v is None else v for v in row["values"]),
                         row["differs"]])  # fmt: skip
    return out.getvalue()
