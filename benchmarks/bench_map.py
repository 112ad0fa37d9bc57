"""The strategy map: a 24 x 24 map (24 chip counts by 24 global batches), each cell the planner's
best layout, against the planner called once a cell (a sample of cells, scaled to the map), in
one run.

Goal: a 24 x 24 map under 1 s with the recompute policy and schedule held (the panel's map), and
far faster than a plan a cell. Run: ``python benchmarks/bench_map.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets.cost import plan  # noqa: E402
from scaling_widgets.cost.search.map_axes import batch_axis, chip_axis  # noqa: E402
from scaling_widgets.cost.search.strategy_map import strategy_map  # noqa: E402
from scaling_widgets.presets import HARDWARE, MODELS  # noqa: E402

H100, V5P = HARDWARE["h100"], HARDWARE["tpu-v5p"]
CASES = {
    "Llama 3 70B, H100, 2 to 16K GPUs": dict(
        model=MODELS["llama-3-70b"], chip=H100, seq_len=8192,
        batches=batch_axis(8192, 2**15, 2**27), chips=chip_axis(H100, 2, 16384),
    ),
    "LLaMA-2 13B, v5p, 4 to 4 pods": dict(
        model=MODELS["llama-2-13b"], chip=V5P, seq_len=2048,
        batches=batch_axis(2048, 2**15, 2**27, 24), chips=chip_axis(V5P, 4, 4 * 8960),
    ),
}  # fmt: skip
HELD = dict(remat="none", schedule="1f1b")  # as the panel holds the scenario's
REPEATS = 3
SAMPLE = 24  # cells planned one by one: one a row, the batches in turn


def timed(call, repeats: int = REPEATS) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def per_cell_loop(m) -> float:
    """Seconds a plan a cell would take for the whole map, from a sample of its cells."""
    rows, columns = m.step_time.shape
    cells = [(i % rows, (7 * i) % columns) for i in range(SAMPLE)]
    start = time.perf_counter()
    for row, column in cells:
        try:
            plan(**m.plan_keywords(row, column))
        except ValueError:  # nothing fits or runs there: a plan says so just as fast
            pass
    return (time.perf_counter() - start) / SAMPLE * rows * columns


def main() -> None:
    print(
        f"{'map':<34} {'cells':>7} {'layouts':>10} {'map s':>7} {'loop s':>7} {'x loop':>7} "
        f"{'all s':>7}"
    )
    for name, case in CASES.items():
        held, m = timed(lambda case=case: strategy_map(**case, **HELD))
        loop = per_cell_loop(m)
        everything, _ = timed(lambda case=case: strategy_map(**case), repeats=1)
        rows, columns = m.step_time.shape
        print(
            f"{name:<34} {f'{rows}x{columns}':>7} {m.evaluated:>10,} {held:>7.2f} {loop:>7.1f} "
            f"{loop / held:>7.0f} {everything:>7.1f}"
        )
    print(
        "map s: recompute and schedule held (the panel's map); all s: every policy and schedule"
        " searched, as plan does by default; loop s: plan called once a cell (a sample, scaled)."
    )


if __name__ == "__main__":
    main()
