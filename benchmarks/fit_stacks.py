"""Fit each software stack's behaviour (MODEL.md §F.2) on the measured runs of every chip it ran on,
with the chips' physics (MODEL.md §F.1) held fixed, and print it.

A stack's runs depend only on its own behaviour, so each stack is fitted on its own: scipy's least
squares on the log error of every run's predicted step, the log ratio of the runs a source compares
(weighed more: the order a planner needs), and a weak pull towards a typical stack: one behaviour
fitted on every run pooled (itself drawn towards ``behaviour.PRIOR``), so that what a stack's runs
cannot see stays at what the other stacks show. Every number
stays inside its bounds (``behaviour.BOUNDS``); one that ends on a bound is printed with the
reason the fit gives.

Run: ``pip install -e ".[fit]"`` then ``python benchmarks/fit_stacks.py``: the runs, their error
in-sample, and each stack's ``BEHAVIOUR`` to paste into its module. It asserts nothing.
``bench_predictions.py`` refits it without each source in turn (leave-one-source-out).
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
from scaling_widgets.cost.stacks import BOUNDS, PRIOR, REGISTRY, TRAFFIC, Behaviour  # noqa: E402
from scaling_widgets.cost.step.profiles import profile_for  # noqa: E402
from scaling_widgets.measured import load_runs  # noqa: E402

LOG_PARAMS = ("kappa", "kappa_scores")  # searched on a log scale
OFFSETS = {"layer_overhead": 1e-6, "step_overhead": 1e-3}  # searched as log(x + offset)
RATIO_WEIGHT = 3.0  # a source's comparison weighs three times one run's error
PRIOR_WEIGHT = 0.1  # the pull towards the prior, per unit of the bounds' width
DATA = Path(__file__).resolve().parents[1] / "scaling_widgets" / "data"
FILES = (DATA / "dev_runs.json", DATA / "dev_runs_gpu.json", DATA / "public_runs.json")


def all_runs() -> list:
    """Every measured run: the development set and the public runs collected beside it."""
    return [run for path in FILES if path.exists() for run in load_runs(path)]


def compared_pairs(runs) -> list[tuple[int, int]]:
    """Neighbouring members of each group a source compares, as indices into ``runs``."""
    ids = [r.id for r in runs]
    groups = [g["members"] for path in FILES if path.exists() for g in source_groups(path)]
    return [
        (ids.index(a), ids.index(b))
        for members in groups
        for a, b in zip(members, members[1:])
        if {a, b} <= set(ids)
    ]


def source_groups(path: Path) -> list[dict]:
    """The groups of runs a file's sources compare."""
    return json.loads(path.read_text(encoding="utf-8")).get("groups", [])


def predicted(runs, behaviours: dict[str, Behaviour] | Behaviour) -> np.ndarray:
    """Each run's predicted step [s] with its chip's physics and its stack's behaviour (or one
    behaviour for every stack)."""
    out = []
    for run in runs:
        cluster, workload, layout, options = run.values
        base = profile_for(cluster.chip, run.stack)
        mine = behaviours if isinstance(behaviours, Behaviour) else behaviours[run.stack]
        profile = dataclasses.replace(base, **dataclasses.asdict(mine))
        # the stack named beside the profile: its features, which the case may set
        options = dataclasses.replace(options, mfu=None, stack=run.stack, profile=profile)
        out.append(float(evaluate(cluster, workload, layout, options).step_time))
    return np.array(out)


def free_fields(runs) -> tuple[str, ...]:
    """The behaviour the runs can see: TP overlap only if some run has TP, and so on."""
    layouts = [r.values[2] for r in runs]
    clusters = [r.values[0] for r in runs]
    sees = {
        "kernel_share": True,
        "kappa": True,
        "kappa_scores": any(not profile_for(c.chip, r.stack).flash_attention
                            for c, r in zip(clusters, runs)),
        "o_tp": any(lay.y > 1 and not _governs(r, "tp") for lay, r in zip(layouts, runs)),
        "o_dp": any(lay.x > 1 and not _governs(r, "grad_reduce") for lay, r in zip(layouts, runs)),
        "o_dcn": any(c.pods > 1 for c in clusters),
        "layer_overhead": True,
        "step_overhead": True,
    }  # fmt: skip
    return tuple(name for name, seen in sees.items() if seen)


def _governs(run, traffic: str) -> bool:
    """Whether the run's stack has a feature that decides ``traffic``'s overlap: then no fitted
    share does (MODEL.md §F.2)."""
    return any(TRAFFIC[f.hides] == traffic for f in REGISTRY[run.stack].features.values())


def _to_x(name, value):
    if name in LOG_PARAMS:
        return np.log(value)
    if name in OFFSETS:
        return np.log(value + OFFSETS[name])
    return value


def _from_x(name, x):
    if name in LOG_PARAMS:
        return float(np.exp(x))
    if name in OFFSETS:
        return float(max(np.exp(x) - OFFSETS[name], 0.0))
    return float(x)


def fit_stack(runs, prior: Behaviour = PRIOR) -> Behaviour:
    """One behaviour fitted on ``runs`` (one stack's, or every stack's pooled), drawn weakly
    towards ``prior``."""
    free = free_fields(runs)
    lo = np.array([_to_x(k, BOUNDS[k][0]) for k in free])
    hi = np.array([_to_x(k, BOUNDS[k][1]) for k in free])
    centre = np.clip([_to_x(k, getattr(prior, k)) for k in free], lo, hi)
    measured = np.array([r.step_time for r in runs])
    pairs = compared_pairs(runs)

    def behaviour(x):
        return dataclasses.replace(prior, **{k: _from_x(k, v) for k, v in zip(free, x)})

    def residuals(x):
        errors = np.log(predicted(runs, behaviour(x)) / measured)
        ratios = [RATIO_WEIGHT * (errors[b] - errors[a]) for a, b in pairs]
        pull = PRIOR_WEIGHT * (x - centre) / (hi - lo)
        return np.concatenate([errors, ratios, pull])

    starts = [centre, lo + 0.5 * (hi - lo)]
    fits = [least_squares(residuals, s, bounds=(lo, hi), x_scale="jac") for s in starts]
    return behaviour(min(fits, key=lambda f: f.cost).x)


def fit(runs) -> tuple[Behaviour, dict[str, Behaviour]]:
    """The behaviour of a typical stack (every run pooled, drawn towards the priors), and each
    stack's own, fitted on its runs and drawn towards the typical one: what a stack's runs cannot
    tell apart stays at what the other stacks show."""
    pooled = fit_stack(runs)
    by_stack: dict[str, list] = {}
    for run in runs:
        by_stack.setdefault(run.stack, []).append(run)
    return pooled, {stack: fit_stack(group, pooled) for stack, group in by_stack.items()}


def on_bounds(behaviour: Behaviour, free) -> list[str]:
    """The fitted numbers that ended on a bound, as "name = value (lower|upper)"."""
    out = []
    for name in free:
        value, (low, high) = getattr(behaviour, name), BOUNDS[name]
        for bound, which in ((low, "lower"), (high, "upper")):
            if abs(value - bound) <= 1e-3 * max(abs(high - low), 1e-12):
                out.append(f"{name} = {value:.4g} ({which} bound)")
    return out


def main() -> None:
    runs = all_runs()
    pooled, behaviours = fit(runs)
    steps = predicted(runs, behaviours)
    print(
        f"{'run':<26} {'stack':<17} {'chip':<8} {'measured s':>10} {'predicted':>10} {'error':>7}"
    )
    for run, t in zip(runs, steps):
        chip = run.values[0].chip.name
        print(f"{run.id:<26} {run.stack:<17} {chip:<8} {run.step_time:>10.4g} {t:>10.4g}"
              f" {t / run.step_time - 1:>+7.1%}")  # fmt: skip
    errors = np.abs(steps / np.array([r.step_time for r in runs]) - 1)
    print(f"\nIN-SAMPLE mean |error| {errors.mean():.1%}, max {errors.max():.1%} over {len(runs)}")
    fields = ", ".join(f"{k}={v:.4g}" for k, v in dataclasses.asdict(pooled).items())
    print(f"\n# the typical stack, every run pooled: TYPICAL = dict({fields})")
    for stack, behaviour in behaviours.items():
        group = [r for r in runs if r.stack == stack]
        print(f"\n# {stack}: fitted on {len(group)} runs, chips "
              f"{sorted({r.values[0].chip.name for r in group})}")  # fmt: skip
        for line in on_bounds(behaviour, free_fields(group)):
            print(f"#   on a bound: {line}")
        fields = ", ".join(f"{k}={v:.4g}" for k, v in dataclasses.asdict(behaviour).items())
        print(f"BEHAVIOUR = dict({fields})")


if __name__ == "__main__":
    main()
