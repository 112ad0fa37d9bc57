"""Fit the default efficiency profiles (MODEL.md §C.3) on the development set, and report the error.

For each chip family of ``scaling_widgets/data/dev_runs.json`` it searches the profile numbers that
minimise the squared log error of the predicted step time over that family's runs, within
physical bounds, with scipy's least squares. Parameters the family's runs cannot see (a tier
they never cross) keep the generic value. It prints, per run, the measured and predicted step
and the error, then the profiles as code to paste into ``scaling_widgets/cost/profiles.py``.

Run: ``pip install -e ".[fit]"`` then ``python benchmarks/fit_profiles.py``. It asserts nothing.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets.cost import evaluate  # noqa: E402
from scaling_widgets.cost.step.profiles import (
    GENERIC,  # noqa: E402
    Profile,  # noqa: E402
)
from scaling_widgets.measured import DEV_RUNS, load_runs  # noqa: E402

# name -> (lower, upper): what each number may physically be.
BOUNDS = {
    "e_max": (0.3, 0.98),
    "g_half": (1e6, 1e12),
    "kappa": (2.0, 400.0),
    "link_ici": (0.2, 1.0),
    "link_nvlink": (0.05, 1.0),
    "link_nic": (0.05, 1.0),
    "link_dcn": (0.05, 1.0),
    "latency": (1e-6, 1e-3),
    "o_tp": (0.0, 0.95),
    "o_dp": (0.0, 1.0),
    "o_dcn": (0.0, 1.0),
    "kappa_scores": (1.0, 64.0),
    "jitter": (0.0, 0.05),
}
# What each chip family's runs can tell apart; the rest stays generic.
FREE = {
    "A100": (
        "e_max",
        "g_half",
        "kappa",
        "kappa_scores",
        "link_nvlink",
        "link_nic",
        "o_tp",
        "o_dp",
        "jitter",
    ),
    "H100": ("e_max", "g_half", "o_tp", "o_dp", "jitter"),
    "TPU v5p": ("e_max", "g_half", "kappa", "link_ici", "link_dcn", "jitter"),
    "TPU v5e": ("e_max", "g_half", "kappa", "link_ici", "link_dcn", "jitter"),
}
LOG_PARAMS = ("g_half", "kappa", "latency", "kappa_scores")
RATIO_WEIGHT = (
    3.0  # the sources' own comparisons (groups in the file) weigh three times a run's error
)
# searched on a log scale
GROUPS = [g["members"] for g in json.loads(DEV_RUNS.read_text())["groups"]]


def predicted(runs, profile: Profile) -> np.ndarray:
    out = []
    for run in runs:
        cluster, workload, layout, options = run.values
        e = evaluate(
            cluster, workload, layout, dataclasses.replace(options, mfu=None, profile=profile)
        )
        out.append(float(e.step_time))
    return np.array(out)


# The stacks behind each family's runs: Megatron-LM of 2021-22 did not fuse attention.
STACKS = {"A100": dict(flash_attention=False)}


def fit(name: str, runs) -> Profile:
    free = FREE[name]
    start = dataclasses.replace(GENERIC, name=name, **STACKS.get(name, {}))

    def to_profile(p):
        values = {k: (10**v if k in LOG_PARAMS else v) for k, v in zip(free, p)}
        return dataclasses.replace(start, **values)

    def scaled(k, v):
        return np.log10(v) if k in LOG_PARAMS else v

    x0 = [scaled(k, getattr(start, k)) for k in free]
    lo = [scaled(k, BOUNDS[k][0]) for k in free]
    hi = [scaled(k, BOUNDS[k][1]) for k in free]
    x0 = np.clip(x0, lo, hi)
    measured = np.array([r.step_time for r in runs])

    ids = [r.id for r in runs]
    pairs = [
        (ids.index(a), ids.index(b))
        for group in GROUPS
        for a, b in zip(group, group[1:])
        if {a, b} <= set(ids)
    ]

    def residuals(p):
        mine = predicted(runs, to_profile(p))
        errors = np.log(mine / measured)
        # What a planner needs most: the runs a source compares, in the ratio it measured.
        ratios = [errors[b] - errors[a] for a, b in pairs]
        return np.concatenate([errors, RATIO_WEIGHT * np.asarray(ratios, dtype=float)])

    # A few starts across the box: the surface has shallow valleys.
    starts = [x0] + [
        np.asarray(lo) + f * (np.asarray(hi) - np.asarray(lo)) for f in (0.1, 0.25, 0.5, 0.75, 0.9)
    ]
    fits = [least_squares(residuals, s, bounds=(lo, hi), x_scale="jac") for s in starts]
    return to_profile(min(fits, key=lambda f: f.cost).x)


def main() -> None:
    runs = load_runs()
    families = {}
    for run in runs:
        families.setdefault(run.values[0].chip.name, []).append(run)
    profiles, rows = {}, []
    for name, group in families.items():
        profiles[name] = profile = fit(name, group)
        for run, t in zip(group, predicted(group, profile)):
            rows.append((run.id, name, run.step_time, t, t / run.step_time - 1))
    print(f"{'run':<26} {'chip':<8} {'measured s':>11} {'predicted s':>12} {'error':>7}")
    for rid, name, m, p, err in rows:
        print(f"{rid:<26} {name:<8} {m:>11.4g} {p:>12.4g} {err:>+7.1%}")
    errors = np.abs([r[-1] for r in rows])
    print(f"\nmean |error| {errors.mean():.1%}, max {errors.max():.1%} over {len(rows)} runs\n")
    for name, p in profiles.items():
        fields = ", ".join(
            f"{f.name}={getattr(p, f.name):.4g}" for f in dataclasses.fields(p) if f.name != "name"
        )
        print(f'    "{name}": Profile("{name}", {fields}),')


if __name__ == "__main__":
    main()
