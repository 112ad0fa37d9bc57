"""The memory's validation (docs/VALIDATION.md): the verdict's uncertainty is what the held-out
peaks measure, the page is what ``benchmarks/bench_memory.py`` prints, and every out-of-memory
report reads "does not fit" but those the model still misjudges, listed with the reason."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from scaling_widgets.cost import evaluate
from scaling_widgets.cost.memory.verdict import UNCERTAINTY
from scaling_widgets.measured import PUBLIC_MEMORY, load_memory_cases

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_memory.py"
_spec = importlib.util.spec_from_file_location("bench_memory", BENCH)
bench = sys.modules["bench_memory"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

OOMS = load_memory_cases(bench.OOM_REPORTS)
RAN = load_memory_cases(bench.RAN_REPORTS)
# the runs at the edge of memory the verdict calls "does not fit", and why
RAN_MISSED = {
    "DSTUTMEG-meg-gpt2-8B-64xV100-32GB-mp4-dp16-gbs128": "does not fit: 1.38 of the limit; 8.3B"
    " parameters over MP 4 at the 16 bytes a parameter of any mixed-precision Adam fill 1.01 of"
    " it before any activation: the row's degree, or what it ran, is not as read",
}
# the reports the verdict still misses, and why (docs/VALIDATION.md)
MISSED = {
    # the report's own numbers put the need inside the peak's uncertainty: 1.0 to 1.1 of HBM.
    # Each reason gives the predicted peak (reserved) over the limit the verdict compares it to
    "MAXTEXT-2957-l2-70b-v5p-128-pdbs4": "tight: 0.96 of the limit; the fix halved the batch,"
    " no figure",
    "TT1993-dsv3-16b-b200-noac-lbs8": "tight: 0.89 of the limit; the same PR's runs at local"
    " batch 4 measure about 1.24x the count, which puts it near 1.10",
    "DEEPSPEED-192-gpt2-1.5b-v100-mb32": "tight: 1.05 of the limit; the tutorial's DP 64 ran,"
    " 1.9 GiB less",
    "ALPACA-223-l7b-5xv100": "tight: 0.89 of the limit; its allocator message puts it at about 1.0;"
    " HF's fp32 norms and FSDP1's gathered root are not priced",
    # the second round, read blind (first_look in the file)
    "MAXTEXT505-52b-v4-384-pdbs8": "tight: 1.04 of the limit; the same PR ran 7 sequences a chip",
    "MAXTEXT505-22b-v4-128-pdbs15": "tight: at the limit, after XLA recomputes 3.9 GB of the loss's"
    " fp32 copies (1.15 of it without); the same PR ran 13 sequences a chip, 1.03 of it even"
    " after recompute",
    "MAXTEXT4117-52b-v4-384-pdbs7-2026": "tight: 1.00 of the limit; XLA's own count is 1.08 of HBM",
    "LF1221-llama7b-8xv100-zero2-bs1": "tight: 1.00 of the limit; the maintainer's 80 GB is advice,"
    " not a measure",
    "LF5977-llama3-8b-8x3090-zero3-bs1": "tight: 1.08 of the limit",
    "ALPACA308-llama2-7b-4xa100-40g-bs1": "tight: 0.89 of the limit, foreach AdamW's step"
    " counted; it ran 8,402 steps first: the allocator's fragments after varied batches, which"
    " the model does not count",
    "COLOSSAL4899-llama7b-zero2-4xa100-bs1": "fits: 0.56 of the limit; ColossalAI's chat trainer,"
    " read as DeepSpeed's, never fills its reduce bucket (a size in bytes passed as millions of"
    " elements) and holds three copies of the fp16 gradients, about 40 GB: 0.97 with them",
}


def test_the_verdicts_uncertainty_is_what_the_held_out_peaks_measure():
    held, first = bench.peak_errors(PUBLIC_MEMORY), bench.first_looks(PUBLIC_MEMORY)
    assert len(held) >= 8 and sum(map(len, held.values())) >= 16
    assert UNCERTAINTY == round(bench.uncertainty(held, first), 3)


def test_a_source_seen_since_its_first_look_cannot_lower_the_uncertainty():
    held, first = bench.peak_errors(PUBLIC_MEMORY), bench.first_looks(PUBLIC_MEMORY)
    assert set(first) == set(held)
    perfect = {source: [(case, 0.0) for case, _ in rows] for source, rows in held.items()}
    floor = sum(f["mean_abs_error"] for f in first.values()) / len(first)
    assert bench.uncertainty(perfect, first) == pytest.approx(floor)


def test_the_validation_page_is_what_the_benchmark_prints():
    page = (ROOT / "docs" / "VALIDATION.md").read_text(encoding="utf-8")
    assert f"{bench.BEGIN}\n{bench.section()}\n{bench.END}" in page


def test_every_held_out_peak_is_one_the_tool_reads():
    cases = load_memory_cases(PUBLIC_MEMORY)
    assert all(c.peak_bytes > 0 and c.measures in ("allocated", "reserved") for c in cases)


def each(cases, missed: dict) -> list:
    """Each case a test, those the verdict misses expected to fail with their reason."""

    def marks(case):
        return [pytest.mark.xfail(reason=missed[case.id], strict=True)] if case.id in missed else []

    return [pytest.param(c, id=c.id, marks=marks(c)) for c in cases]


@pytest.mark.parametrize("case", each(OOMS, MISSED))
def test_a_reported_out_of_memory_does_not_fit(case):
    assert str(evaluate(*case.values).verdict) == "does not fit"


def test_ten_reports_or_more_each_with_its_source():
    assert len(OOMS) >= 10 and set(MISSED) <= {c.id for c in OOMS}
    assert all(c.outcome == "oom" and c.case["source"] for c in OOMS)


@pytest.mark.parametrize("case", each(RAN, RAN_MISSED))
def test_the_largest_batch_a_source_ran_fits_or_is_tight(case):
    assert str(evaluate(*case.values).verdict) in ("fits", "tight")
    assert case.outcome == "ran" and case.case["statement"]
