"""The Python work behind one slider move in the panel, against the cost evaluation alone.

Goal: under 20 ms per move with 256 points per curve. Both parts run in this process, so the
ratio (panel / evaluation) holds on a noisy machine. Run: ``python benchmarks/bench_panel.py``.
It prints a report and asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import scaling_widgets as sw  # noqa: E402
from scaling_widgets.cost import evaluate  # noqa: E402
from scaling_widgets.cost.views import GRID_POINTS  # noqa: E402
from scaling_widgets.widgets.scenario import Scenario  # noqa: E402

MOVES = 60
# LLaMA-2 13B at its batch of 1,024 sequences of 4,096 on v5p 16x16x16 (the README's panel).
EXAMPLE_16 = dict(
    model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=4_194_304, seq_len=4096
)


def timed(action, n: int = MOVES) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        action(i)
        out.append((time.perf_counter() - start) * 1e3)
    return out


def main() -> None:
    panel = sw.explore(**EXAMPLE_16)
    batches = [4_194_304 * 1.07**i for i in range(MOVES)]  # each a batch every replica can take
    scenario = Scenario(**EXAMPLE_16)

    values = scenario.values()
    evaluation = timed(lambda i: evaluate(*values))  # one estimate, nothing kept
    slider = timed(lambda i: setattr(panel.training._batch, "value", batches[i]))
    strategy = timed(
        lambda i: setattr(panel.strategy_selector._strategy, "value", ("fsdp", "fsdp+tp")[i % 2])
    )
    panel.strategy_map.draw()  # the map on show follows each move: its dot, whether it is stale
    mapped = timed(lambda i: setattr(panel.training._batch, "value", batches[-1 - i]))
    print(f"points per curve: {GRID_POINTS}; {MOVES} moves each")
    print(f"{'what':<44} {'p50 ms':>8} {'p95 ms':>8} {'x evaluation':>13}")
    base = statistics.median(evaluation)
    for name, times in (
        ("one cost evaluation (evaluate)", evaluation),
        ("panel: batch slider move", slider),
        ("panel: strategy toggle", strategy),
        ("panel: batch slider move, the map drawn", mapped),
    ):
        p50, p95 = statistics.median(times), sorted(times)[int(0.95 * len(times)) - 1]
        print(f"{name:<44} {p50:>8.1f} {p95:>8.1f} {p50 / base:>13.2f}")


if __name__ == "__main__":
    main()
