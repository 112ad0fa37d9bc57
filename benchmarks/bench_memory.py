"""How well the predicted peak memory transfers (MODEL.md §E.5), and the verdict's uncertainty.

The memory model fits nothing: its bytes are the frameworks' own, read from their source. So its
leave-one-source-out is its error on the sources of measured peaks held out from its
development (``scaling_widgets/data/public_memory.json``): each source's mean |error|, and the
mean over sources, which is the peak's uncertainty the verdict reads (``cost/memory/verdict.py``,
``UNCERTAINTY``). The development set (``dev_memory.json``) is shown after it, labelled
in-sample. Then the verdicts on the configs frameworks ship (``tests/data/shipped/``) and on the
out-of-memory reports (``tests/data/oom_reports.json``).

Run: ``python benchmarks/bench_memory.py`` prints it; ``--write`` rewrites the memory section of
``docs/VALIDATION.md``. It asserts nothing; ``tests/cost/test_memory_validation.py`` holds the
verdict's uncertainty and the document to what this computes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scaling_widgets.cost import evaluate  # noqa: E402
from scaling_widgets.measured import DEV_MEMORY, PUBLIC_MEMORY, load_memory_cases  # noqa: E402
from tests.launch.test_shipped_configs import MANIFEST, NOT_YET, key, verdict  # noqa: E402

DOC = ROOT / "docs" / "VALIDATION.md"
OOM_REPORTS = ROOT / "tests" / "data" / "oom_reports.json"
RAN_REPORTS = ROOT / "tests" / "data" / "ran_reports.json"
BEGIN, END = "<!-- memory: begin (benchmarks/bench_memory.py --write) -->", "<!-- memory: end -->"


def peak_errors(path) -> dict[str, list[tuple[str, float]]]:
    """By source: each measured peak's id and signed error, predicted over measured minus one,
    the peak counted as its source counts it (allocated or reserved)."""
    by_source: dict[str, list[tuple[str, float]]] = {}
    for case in load_memory_cases(path):
        if case.peak_bytes is None:
            continue
        by_source.setdefault(case.case["group"], []).append(
            (case.id, case.predicted / case.peak_bytes - 1)
        )
    return by_source


def first_looks(path) -> dict[str, dict]:
    """Each held-out source's first look: the commit at which the model first met it, and its
    mean |error| then (recorded in the file, as it cannot be recomputed later)."""
    return {k: v["first_look"] for k, v in json.loads(Path(path).read_text())["sources"].items()}


def mean_error(rows) -> float:
    return float(np.mean([abs(e) for _, e in rows]))


def uncertainty(by_source, first: dict | None = None) -> float:
    """The mean over sources of each source's mean |error|, each source counted once; with
    ``first``, the larger of its error at its first look and today's, so a source seen since
    cannot lower it."""
    first = first or {}
    return float(
        np.mean(
            [
                max(mean_error(rows), first.get(source, {}).get("mean_abs_error", 0.0))
                for source, rows in by_source.items()
            ]
        )
    )


def table(by_source, title: str, first: dict | None = None) -> list[str]:
    """Each source's peaks, mean and worst |error| today, and with ``first`` its mean |error| at
    its first look and the commit of it."""
    look = "" if first is None else "  first look"
    lines = [f"{title:36s} peaks  mean|err|  worst{look}", "-" * (60 + len(look) + 10 * bool(look))]
    every = [e for rows in by_source.values() for _, e in rows]
    for source, rows in by_source.items():
        errors = [abs(e) for _, e in rows]
        seen = (
            ""
            if first is None
            else f"  {first[source]['mean_abs_error']:6.1%} at {first[source]['commit']}"
        )
        lines.append(
            f"{source:36s} {len(rows):5d}  {np.mean(errors):8.1%}  {max(errors):6.1%}{seen}"
        )
    lines.append(
        f"{'all peaks':36s} {len(every):5d}  {np.mean(np.abs(every)):8.1%}"
        f"  {np.max(np.abs(every)):6.1%}"
    )
    lines.append(f"{'mean over sources':36s}        {uncertainty(by_source):8.1%}")
    return lines


def cases(by_source) -> list[str]:
    return [f"  {case:58s} {e:+7.1%}" for rows in by_source.values() for case, e in rows]


def report_verdicts(path=OOM_REPORTS) -> list[tuple[str, str]]:
    """Each report's id and the verdict on its configuration: out-of-memory reports, or runs
    at the edge of memory (``RAN_REPORTS``)."""
    return [(case.id, str(evaluate(*case.values).verdict)) for case in load_memory_cases(path)]


def shipped_verdicts() -> dict[str, str]:
    """Each shipped config a reader takes (none in the test's list of those it cannot), and its
    verdict on the hardware its source names."""
    return {
        key(e): verdict(e) for e in MANIFEST if key(e) not in NOT_YET or "fit" in NOT_YET[key(e)]
    }


def verdict_lines() -> list[str]:
    shipped, ooms, ran = shipped_verdicts(), report_verdicts(), report_verdicts(RAN_REPORTS)
    said = list(shipped.values())
    lines = [
        f"Configs frameworks ship ({len(MANIFEST)} in tests/data/shipped/), {len(shipped)} read:"
        f" {said.count('fits')} fit, {said.count('tight')} tight,"
        f" {said.count('does not fit')} do not fit.",
        "",
        "```text",
        *(f"  {k:52s} {v}" for k, v in shipped.items() if v != "fits"),
        "```",
        "",
        f"Out-of-memory reports ({len(ooms)}, tests/data/oom_reports.json):"
        f' {sum(v == "does not fit" for _, v in ooms)} read "does not fit".',
        "",
        "```text",
        *(f"  {case:44s} {v}" for case, v in ooms),
        "```",
        "",
        f"Runs at the edge of memory ({len(ran)}, tests/data/ran_reports.json: the largest batch"
        f' that ran): {sum(v != "does not fit" for _, v in ran)} read "fits" or "tight".',
        "",
        "```text",
        *(f"  {case:52s} {v}" for case, v in ran),
        "```",
    ]
    return lines


def section() -> str:
    """The memory section of docs/VALIDATION.md, as this benchmark computes it."""
    held, dev, first = (
        peak_errors(PUBLIC_MEMORY),
        peak_errors(DEV_MEMORY),
        first_looks(PUBLIC_MEMORY),
    )
    out = ["```text", *table(held, "held-out source", first), "", *cases(held), "```", ""]
    out += [
        "The verdict's uncertainty is the mean over held-out sources of the larger of each one's"
        f" error at its first look and today's: {uncertainty(held, first):.1%}.",
        "",
        "In-sample (these peaks were used to develop the model):",
        "",
        "```text",
        *table(dev, "development source"),
        "```",
        "",
        *verdict_lines(),
    ]
    return "\n".join(out)


def main(argv: list[str]) -> None:
    text = section()
    print(text)
    if "--write" in argv:
        doc = DOC.read_text(encoding="utf-8")
        head, _, rest = doc.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
