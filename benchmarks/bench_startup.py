"""Start-up: the command line's help, ``import scaling_widgets`` and one ``estimate``, each a new
process, against ``python -c "import numpy"`` in the same run.

Goals: ``scaling-widgets estimate`` within 2x of importing numpy (the config readers load only
for ``--config``, the widgets never); ``import scaling_widgets`` under 0.5 s. The processes run
with bytecode, as an installed package has it (kept in a temporary folder, not the tree: this
machine's ``PYTHONDONTWRITEBYTECODE`` would compile every module at every start), warmed once,
then in interleaved rounds; each case's best, as ``timeit`` reports (a busy moment only adds). Run:
``python benchmarks/bench_startup.py [--runs N]``. It prints a report and asserts nothing
(STYLE: speed is measured, not tested).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the installed command, as a user runs it (``-m`` would add runpy's own start); else ``-m``
SCRIPT = Path(sys.executable).with_name("scaling-widgets")
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "scaling_widgets"]
CASES = {
    'python -c "import numpy" (the baseline)': [sys.executable, "-c", "import numpy"],
    "scaling-widgets --help": [*CLI, "--help"],
    "import scaling_widgets": [sys.executable, "-c", "import scaling_widgets"],
    "scaling-widgets estimate (LLaMA-3 70B, 512 H100)": [
        *CLI, "estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "512",
        "--tp", "8", "--batch", "4M", "--seq-len", "8k",
    ],
}  # fmt: skip


def seconds(command: list[str], env: dict) -> float:
    """The wall time of one fresh process [s]."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def fastest(runs: int) -> dict[str, float]:
    """Each case's shortest wall time over ``runs`` interleaved rounds, after a warm-up [s]."""
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for command in CASES.values():  # writes the bytecode, warms the file cache
            seconds(command, env)
        times = {name: [] for name in CASES}
        for _ in range(runs):
            for name, command in CASES.items():
                times[name].append(seconds(command, env))
    return {name: min(taken) for name, taken in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=11)
    measured = fastest(parser.parse_args().runs)
    base = next(iter(measured.values()))
    print(f"{'what':<52} {'best s':>9} {'x numpy':>8}")
    for name, took in measured.items():
        print(f"{name:<52} {took:>9.3f} {took / base:>8.2f}")


if __name__ == "__main__":
    main()
