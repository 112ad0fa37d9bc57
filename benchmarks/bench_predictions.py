"""How good the predicted step time is: the development set by source, published against predicted.

Each run's published outcome (converted to seconds per step by its source's convention) beside
the step the shipped profiles predict, and the same after calibrating on the source's first run
("measure one configuration, predict the others"). Run: ``python benchmarks/bench_predictions.py``.
It asserts nothing; ``tests/cost/test_predicted_step.py`` holds the bounds.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets.cost import evaluate  # noqa: E402
from scaling_widgets.cost.step.calibrate import calibrate  # noqa: E402
from scaling_widgets.measured import load_runs  # noqa: E402


def step(values, profile=None) -> float:
    cluster, workload, layout, options = values
    return float(
        evaluate(cluster, workload, layout, dataclasses.replace(options, profile=profile)).step_time
    )


def main() -> None:
    by_source: dict[str, list] = {}
    for run in load_runs():
        # a stack on a chip
        name = f"{run.source.split(',')[0].split(' ')[0][:28]} on {run.values[0].chip.name}"
        by_source.setdefault(name, []).append(run)
    print(
        f"{'source':<44} {'runs':>4} {'mean |err|':>10} {'max |err|':>9} "
        f"{'calibrated on the first':>24}"
    )
    every = []
    for source, runs in by_source.items():
        errors = np.array([step(r.values) / r.step_time - 1 for r in runs])
        every += list(errors)
        anchor = calibrate(*runs[0].values, step_time=runs[0].step_time)
        rest = [abs(step(r.values, anchor) / r.step_time - 1) for r in runs[1:]]
        after = f"{np.mean(rest):.1%} over {len(rest)}" if rest else "-"
        print(
            f"{source[:44]:<44} {len(runs):>4} {np.mean(np.abs(errors)):>10.1%} "
            f"{np.max(np.abs(errors)):>9.1%}"
            f" {after:>24}"
        )
    every = np.abs(every)
    print(f"{'all':<44} {len(every):>4} {every.mean():>10.1%} {every.max():>9.1%}")
    print(f"\n{'run':<26} {'published s':>11} {'predicted s':>12} {'error':>7}")
    for runs in by_source.values():
        for r in runs:
            predicted = step(r.values)
            print(
                f"{r.id:<26} {r.step_time:>11.4g} {predicted:>12.4g} "
                f"{predicted / r.step_time - 1:>+7.1%}"
            )


if __name__ == "__main__":
    main()
