"""The planner: every layout of a full v5p pod and of a 16,384-GPU H100 cluster, against a
scalar loop (one ``estimate`` call per layout) over a sample of the same layouts, in one run.

Goal: under 1 s a plan and at least 100x the scalar loop. Run: ``python benchmarks/bench_plan.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets.cost import estimate  # noqa: E402
from scaling_widgets.cost.plan import plan  # noqa: E402
from scaling_widgets.presets import HARDWARE, MODELS  # noqa: E402

CASES = {
    "TPU v5p full pod (8960 chips)": dict(chip=HARDWARE["tpu-v5p"]),
    "H100 x 16,384 (2048 nodes)": dict(chip=HARDWARE["h100"], chips=16384),
}
SAMPLE = 200


def main() -> None:
    print(f"{'cluster':<32} {'layouts':>8} {'plan s':>8} {'scalar ms/layout':>17} {'x scalar':>9}")
    for name, where in CASES.items():
        args = dict(model=MODELS["llama-3-70b"], batch=16e6, seq_len=8192, **where)
        start = time.perf_counter()
        ranked = plan(**args)
        planned = time.perf_counter() - start
        n = len(ranked.step_time)
        sample = np.random.default_rng(0).choice(n, size=min(SAMPLE, n), replace=False)
        start = time.perf_counter()
        for i in sample:
            estimate(strategy="fsdp+tp", **ranked.knobs(i), **ranked.inputs)
        per_layout = (time.perf_counter() - start) / len(sample)
        print(f"{name:<32} {n:>8,} {planned:>8.2f} {per_layout * 1e3:>17.2f} {per_layout * n / planned:>9.0f}")


if __name__ == "__main__":
    main()
