"""The planner: every layout of a full v5p pod and of a 16,384-GPU H100 cluster, against a
scalar loop (one ``estimate`` call per layout) over the very same layouts, in one run.

Goal: under 1 s a plan and at least 100x the scalar loop. Run: ``python benchmarks/bench_plan.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets import plan  # noqa: E402
from scaling_widgets.cost import evaluate  # noqa: E402
from scaling_widgets.presets import HARDWARE, MODELS  # noqa: E402

CASES = {
    "TPU v5p full pod (8960 chips)": dict(chip=HARDWARE["tpu-v5p"]),
    "H100 x 16,384 (2048 nodes)": dict(chip=HARDWARE["h100"], chips=16384),
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


if __name__ == "__main__":
    main()
