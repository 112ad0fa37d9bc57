"""Start-up: the command line's help, ``import scaling_widgets`` and one ``estimate``, each a new
process, against ``python -c "import numpy"`` in the same run.

Goals: ``scaling-widgets --help`` within 2x of importing numpy (the config readers and the cost
model load only for a command that uses them); ``import scaling_widgets`` under 0.5 s. Run:
``python benchmarks/bench_startup.py [--runs N]``. It prints a report and asserts nothing
(STYLE: speed is measured, not tested).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "scaling_widgets"]
CASES = {
    'python -c "import numpy" (the baseline)': [sys.executable, "-c", "import numpy"],
    "scaling-widgets --help": [*CLI, "--help"],
    "import scaling_widgets": [sys.executable, "-c", "import scaling_widgets"],
    "scaling-widgets estimate (LLaMA-3 70B, 512 H100)": [
        *CLI, "estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "512",
        "--tp", "8", "--batch", "4M", "--seq-len", "8k",
    ],
}  # fmt: skip


def seconds(command: list[str], runs: int) -> float:
    """The median wall time of ``runs`` fresh processes [s]."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    measured = {name: seconds(command, runs) for name, command in CASES.items()}
    base = next(iter(measured.values()))
    print(f"{'what':<52} {'median s':>9} {'x numpy':>8}")
    for name, took in measured.items():
        print(f"{name:<52} {took:>9.3f} {took / base:>8.2f}")


if __name__ == "__main__":
    main()
