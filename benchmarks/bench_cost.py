"""Layouts per second: the vectorized cost model against a scalar loop over the same formulas.

Both run in this process, one after the other, so the ratio holds on a noisy machine even when
the absolute rates do not. A million layouts in one call are bound by memory bandwidth (each
numpy operation streams 8 MB arrays); the same calls on blocks of 65,536 stay in cache, which is
what ``estimate()`` does itself with a grid that large
(``scaling_widgets/cost/evaluation/blocks.py``).

Run: ``python benchmarks/bench_cost.py [--layouts N]``. It prints a report and asserts nothing
(STYLE: speed is measured, not tested).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, as the goal says
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets.cost import estimate, layer_times, memory_per_chip, step_time  # noqa: E402
from scaling_widgets.presets import HARDWARE, MODELS  # noqa: E402
from tests.cost import reference  # noqa: E402

CHIP, MODEL = HARDWARE["tpu-v5p"], MODELS["llama-3-70b"]
PARAMS = 70.55e9


def random_layouts(n: int, seed: int = 0) -> dict:
    """FSDP + TP layouts of a 16x16x16 slice at random batches, pods and MFUs."""
    rng = np.random.default_rng(seed)
    y = 2 ** rng.integers(0, 6, n)
    return {
        "B": rng.uniform(1e5, 1e8, n),
        "X": 4096 // y,
        "Y": y,
        "P": rng.integers(1, 5, n),
        "mfu": rng.uniform(0.2, 0.6, n),
    }


def vectorized(c: dict):
    """One call per formula over every layout: layer times, memory, step time."""
    D, F, L = MODEL.d_model, MODEL.d_ff, MODEL.layers
    hw = dict(flops=CHIP.flops, ici_bw=CHIP.ici_bw, dcn_bw=CHIP.dcn_bw)
    t = layer_times(
        strategy="fsdp+tp",
        batch=c["B"],
        d_model=D,
        d_ff=F,
        x=c["X"],
        y=c["Y"],
        pods=c["P"],
        mx=3,
        my=1,
        **hw,
    )
    mem = memory_per_chip(
        params=PARAMS,
        layers=L,
        d_model=D,
        d_ff=F,
        batch=c["B"],
        x=c["X"],
        y=c["Y"],
        pods=c["P"],
        zero=3,
    )
    step = step_time(
        batch=c["B"],
        params=PARAMS,
        chips=4096 * c["P"],
        flops=CHIP.flops,
        mfu=c["mfu"],
        comm_time=L * t.t_comms,
    )
    return t.compute_bound, mem.total <= CHIP.hbm_bytes, step


def full_estimate(c: dict, predicted: bool = False):
    """``estimate`` itself: mesh spans, crossovers, thresholds, X_opt, memory, step time (the
    chapter's at an MFU given, or the predicted one of MODEL.md §C, term by term)."""
    return estimate(
        model=MODEL,
        chip=CHIP,
        batch=c["B"],
        slice_shape=(16, 16, 16),
        x=c["X"],
        y=c["Y"],
        pods=c["P"],
        mfu=None if predicted else c["mfu"],
    )


def in_blocks(fn, c: dict, block: int = 65_536):
    """The same vectorized calls over cache-sized blocks of layouts (16 calls for a million)."""
    n = len(c["B"])
    return [fn({k: v[i : i + block] for k, v in c.items()}) for i in range(0, n, block)]


def scalar_loop(c: dict, n: int):
    out = []
    for i in range(n):
        out.append(
            reference.evaluate(
                "fsdp+tp",
                c["B"][i],
                MODEL.d_model,
                MODEL.d_ff,
                MODEL.layers,
                PARAMS,
                int(c["X"][i]),
                int(c["Y"][i]),
                int(c["P"][i]),
                CHIP.flops,
                CHIP.ici_bw,
                CHIP.dcn_bw,
                3,
                1,
                CHIP.hbm_bytes,
                c["mfu"][i],
            )
        )
    return out


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--layouts", type=int, default=1_000_000, help="layouts per vectorized call"
    )
    parser.add_argument(
        "--scalar-layouts", type=int, default=50_000, help="layouts in the scalar loop"
    )
    args = parser.parse_args()
    c = random_layouts(args.layouts)
    # Same answers first: the comparison is only fair if both compute the same thing.
    k = min(args.scalar_layouts, 2000)
    bound, fits, step = vectorized(c)
    for i, (ref_bound, _, _, ref_fits, ref_step) in enumerate(scalar_loop(c, k)):
        assert bound[i] == ref_bound and fits[i] == ref_fits and np.isclose(step[i], ref_step)

    t_scalar = best_of(lambda: scalar_loop(c, args.scalar_layouts))
    t_vector = best_of(lambda: vectorized(c))
    t_blocks = best_of(lambda: in_blocks(vectorized, c))
    t_full = best_of(lambda: full_estimate(c))
    t_predicted = best_of(lambda: full_estimate(c, predicted=True))
    scalar_rate = args.scalar_layouts / t_scalar
    rows = [
        ("scalar loop (tests/cost/reference.py)", args.scalar_layouts, t_scalar, scalar_rate),
        ("vectorized layer + memory + step time", args.layouts, t_vector, args.layouts / t_vector),
        ("  the same in calls of 65,536 layouts", args.layouts, t_blocks, args.layouts / t_blocks),
        (
            "vectorized estimate() (all of MODEL.md §A.10)",
            args.layouts,
            t_full,
            args.layouts / t_full,
        ),
        (
            "  with the step predicted (MODEL.md §C)",
            args.layouts,
            t_predicted,
            args.layouts / t_predicted,
        ),
    ]
    print(f"{'what':<44} {'layouts':>10} {'seconds':>9} {'layouts/s':>12} {'x scalar':>9}")
    for name, n, seconds, rate in rows:
        print(f"{name:<44} {n:>10,} {seconds:>9.3f} {rate:>12.3g} {rate / scalar_rate:>9.0f}")


if __name__ == "__main__":
    main()
