"""The planner: every layout of a full v5p pod, of a 16,384-GPU H100 cluster and of eight v5p
pods over DCN, against a
scalar loop (one ``estimate`` call per layout) over the very same layouts, in one run.

Goal: under 1 s a plan and at least 100x the scalar loop. Last, ``plan --rank-of`` as the CLI
runs it (a plan, the layout asked about, its rank and the terms of the three above it), against
the plan alone in the same run; its goal is under 2 s. Run: ``python benchmarks/bench_plan.py``.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets import plan  # noqa: E402
from scaling_widgets.cli import main as cli  # noqa: E402
from scaling_widgets.cost import evaluate  # noqa: E402
from scaling_widgets.presets import HARDWARE, MODELS  # noqa: E402

# Llama 3 405B's published layout on 16,384 H100s, asked where it ranks
RANK_OF = ["plan", "--model", "llama-3-405b", "--hardware", "h100", "--chips", "16k", "--batch",
           "16777216", "--seq-len", "8k", "--stack", "megatron-lm", "--rank-of",
           "--tp 8 --pp 16 --dp 128 --zero 1"]  # fmt: skip

CASES = {
    "TPU v5p full pod (8960 chips)": dict(chip=HARDWARE["tpu-v5p"]),
    # pods over DCN: FSDP across every count of them, or pipelines across them (§B.9, §B.10)
    "TPU v5p-2048 x 8 pods": dict(chip=HARDWARE["tpu-v5p"], slice_shape=(8, 8, 16), pods=8),
    "H100 x 16,384 (2048 nodes)": dict(chip=HARDWARE["h100"], chips=16384),  # last: --rank-of's
}
REPEATS = 5


def main() -> None:
    print(
        f"{'cluster':<32} {'layouts':>8} {'orders':>7} {'plan ms':>8} {'scalar s':>9} "
        f"{'x scalar':>9}"
    )
    for name, where in CASES.items():
        args = dict(model=MODELS["llama-3-70b"], batch=16e6, seq_len=8192, **where)
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            ranked = plan(**args)
            times.append(time.perf_counter() - start)
        planned = statistics.median(times)
        n = len(ranked.step_time)
        start = time.perf_counter()
        for i in range(n):  # the same layouts, one estimate each
            evaluate(*ranked.values_at(i))
        scalar = time.perf_counter() - start
        orders = len(set(ranked.layouts["axis_order"].tolist()))
        print(
            f"{name:<32} {n:>8,} {orders:>7} {planned * 1e3:>8.0f} {scalar:>9.1f} "
            f"{scalar / planned:>9.0f}"
        )
    rank_of(planned)


def rank_of(planned: float) -> None:
    """``plan --rank-of`` end to end, in seconds and as a multiple of the last plan's time."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # its answer is not the benchmark's
            cli(RANK_OF)
        times.append(time.perf_counter() - start)
    took = statistics.median(times)
    print(
        f"\nplan --rank-of (Llama 3 405B, 16,384 H100): {took:.2f} s, {took / planned:.1f}x a plan"
    )


if __name__ == "__main__":
    main()
