"""How well the predicted step transfers (MODEL.md §F.3), in the order that matters:

1. leave-one-source-out: refit the stacks without a source's runs, predict that source; per
   source its mean and worst |error| (a stack left with no runs gets the typical stack's
   behaviour, fitted on every other run);
2. leave-one-chip-out, for every stack measured on two chips or more, and leave-one-stack-version-
   out: each stack's runs of a year predicted from its runs of the years before (``released``);
3. the orderings the sources report (every pair of runs a source compares and measured apart),
   predicted out of sample by (1);
4. in-sample: the shipped behaviours on the runs they were fitted on;
5. last, the held-out schedule comparisons (``schedule_runs.json``), never fitted on: the shipped
   behaviours' error on them, and the orderings they report;
6. and the held-out steps of a stack none of ours is fitted on (``heldout_runs.json``: nanotron's
   benchmark), run by run, with the closest stack we model: a first look.

The chips' physics comes from microbenchmarks (``fit_physics.py``) and is never refitted here.
Run: ``pip install -e ".[fit]"`` then ``python benchmarks/bench_predictions.py`` (a few minutes).
It asserts nothing. ``--write`` also keeps each run's out-of-sample ratio, measured over predicted,
in ``scaling_widgets/data/step_residuals.json``: the intervals every predicted step carries
(``cost/step/interval.py``), and section 1 reports how many runs fall inside theirs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
from fit_stacks import FILES, all_runs, fit_stack, predicted, source_groups

from scaling_widgets.cost.stacks import REGISTRY
from scaling_widgets.cost.step.interval import LEVEL, RESIDUALS, held_out_coverage, step_spread
from scaling_widgets.cost.step.profiles import profile_for
from scaling_widgets.measured import HELDOUT_RUNS, SCHEDULE_RUNS, load_runs


def refit_predict(train, test) -> np.ndarray:
    """``test``'s steps with each of its stacks fitted on ``train`` alone, drawn towards the typical
    stack of ``train``, which is also what a stack with no runs left gets."""
    typical = fit_stack(train)
    behaviours = {}
    for stack in {r.stack for r in test}:
        mine = [r for r in train if r.stack == stack]
        behaviours[stack] = fit_stack(mine, typical) if mine else typical
    return predicted(test, behaviours)


def residual(run, predicted_step: float) -> dict:
    """A run's out-of-sample ratio, measured over predicted, with what pools it."""
    ratio = run.step_time / predicted_step
    return {"id": run.id, "source": run.group, "stack": run.stack,
            "chip": run.values[0].chip.name, "ratio": round(float(ratio), 4)}  # fmt: skip


def _row(name: str, errors, note: str = "") -> str:
    errors = np.abs(errors)
    return f"{name:<34} {len(errors):>4} {errors.mean():>9.1%} {errors.max():>9.1%}  {note}"


def main() -> None:
    runs = all_runs()
    measured = {r.id: r.step_time for r in runs}
    header = f"{'':<34} {'runs':>4} {'mean|err|':>9} {'worst':>9}"

    print("1. LEAVE-ONE-SOURCE-OUT (the headline)\n" + header.replace("    ", "source", 1))
    out_of_sample, per_source = {}, []
    for source in sorted({r.group for r in runs}):
        test = [r for r in runs if r.group == source]
        train = [r for r in runs if r.group != source]
        steps = refit_predict(train, test)
        out_of_sample.update({r.id: t for r, t in zip(test, steps)})
        errors = steps / np.array([r.step_time for r in test]) - 1
        per_source.append(np.abs(errors).mean())
        left = {r.stack for r in test} - {r.stack for r in train}
        note = f"{', '.join(sorted(left))} as the typical stack" if left else ""
        print(_row(f"{source} ({', '.join(sorted({r.stack for r in test}))})", errors, note))
    every = np.array([out_of_sample[r.id] / r.step_time - 1 for r in runs])
    print(_row("all runs", every))
    print(f"{'mean over sources':<34} {'':>4} {np.mean(per_source):>9.1%} "
          f"{np.max(per_source):>9.1%}  (worst source mean)")  # fmt: skip
    rows = [residual(r, out_of_sample[r.id]) for r in runs]
    print(f"{LEVEL:.0%} intervals, each from the other sources' runs: {held_out_coverage(rows):.0%}"
          f" of {len(runs)} runs inside theirs")  # fmt: skip
    if "--write" in sys.argv:
        about = ("Each published run's measured step over the step predicted by a fit without its"
                 " source (benchmarks/bench_predictions.py --write): the intervals of predicted"
                 " steps (scaling_widgets/cost/step/interval.py).")  # fmt: skip
        text = json.dumps({"about": about, "runs": rows}, indent=1)
        Path(RESIDUALS).write_text(text + "\n", encoding="utf-8")

    print("\n2. LEAVE-ONE-CHIP-OUT, stacks on two chips or more\n" + header)
    for stack in REGISTRY:
        mine = [r for r in runs if r.stack == stack]
        chips = sorted({r.values[0].chip.name for r in mine})
        for chip in chips if len(chips) > 1 else ():
            test = [r for r in mine if r.values[0].chip.name == chip]
            steps = refit_predict([r for r in mine if r not in test], test)
            print(_row(f"{stack} on {chip}", steps / np.array([r.step_time for r in test]) - 1))

    stack_versions(runs)

    print("\n3. ORDERINGS each source reports, predicted out of sample (pairs in measured order)")
    right = total = 0
    for path in FILES:
        for group in source_groups(path) if path.exists() else ():
            members = [m for m in group["members"] if m in out_of_sample]
            # a pair the source measured equal reports no order
            pairs = [
                (a, b) for a, b in itertools.combinations(members, 2) if measured[a] != measured[b]
            ]
            ok = sum(
                np.sign(out_of_sample[b] - out_of_sample[a]) == np.sign(measured[b] - measured[a])
                for a, b in pairs
            )
            right, total = right + ok, total + len(pairs)
            print(f"  {group['id']:<28} {ok:>3}/{len(pairs):<3} {group.get('what', '')[:60]}")
    print(f"  {'all':<28} {right:>3}/{total:<3}")

    print("\n4. IN-SAMPLE (the shipped behaviours, fitted on these very runs)")
    shipped = predicted(runs, {name: stack.behaviour for name, stack in REGISTRY.items()})
    print(header)
    for source in sorted({r.group for r in runs}):
        idx = [i for i, r in enumerate(runs) if r.group == source]
        print(_row(source, shipped[idx] / np.array([runs[i].step_time for i in idx]) - 1))
    print(_row("all runs, in-sample", shipped / np.array([r.step_time for r in runs]) - 1))
    held_out()


def released(run) -> int:
    """The year of the stack's release a run measured: the case's own, else the date its source
    gives ("(2023-12-15)"), else its paper's ("et al. 2021")."""
    if run.case.get("year"):
        return int(run.case["year"])
    dated = re.search(r"\((\d{4})-\d\d", run.source) or re.search(r"et al\. (\d{4})", run.source)
    return int(dated.group(1))


def stack_versions(runs) -> None:
    """Section 2's second half: a newer release predicted from older ones (MODEL.md §F.3). Each
    stack's runs of a year, with that stack fitted on its earlier years alone (every other stack
    as in the full fit)."""
    print("\nLEAVE-ONE-STACK-VERSION-OUT: a year's release from the years before")
    for stack in REGISTRY:
        years = sorted({released(r) for r in runs if r.stack == stack})
        for year in years[1:]:
            test = [r for r in runs if r.stack == stack and released(r) == year]
            train = [r for r in runs if r.stack != stack or released(r) < year]
            steps = refit_predict(train, test)
            chips = ", ".join(sorted({r.values[0].chip.name for r in test}))
            since, until = years[0], max(y for y in years if y < year)
            name = f"{stack} {year} from {since}" + (f"-{until}" if until > since else "")
            print(_row(name, steps / np.array([r.step_time for r in test]) - 1, f"on {chips}"))


def held_out() -> None:
    """Sections 5 and 6: runs no stack was fitted on, with the shipped behaviours: the schedule
    comparisons, then the steps of a stack none of ours is (nanotron's benchmark), run by run."""
    print("\n5. HELD OUT: published schedule comparisons, never fitted on")
    _held_out(SCHEDULE_RUNS)
    print("\n6. HELD OUT: a stack none of ours is fitted on (a first look), never fitted on")
    _held_out(HELDOUT_RUNS, each=True)
    first = json.loads(HELDOUT_RUNS.read_text(encoding="utf-8"))["first_look"]
    print(f"  at its first look ({first['commit']}): {first['mean_abs_error']:.1%} mean |error|,")
    print(f"  {first['inside_interval']} inside the interval, {first['orderings']} orderings")


def _on_its_network(run):
    """A run whose case measured its cluster's all-reduce across nodes (``network``) on a cluster
    whose NICs reach that bus bandwidth: a node's GPUs each at busbw / (GPUs a node x the NIC's
    share), as a user enters their own cluster; the run as it is on one node or without one."""
    cluster, workload, layout, options = run.values
    busbw = run.case.get("network", {}).get("all_reduce_busbw_GBps")
    chip = cluster.chip
    if busbw is None or run.case["chips"] <= chip.node_size:
        return run
    share = profile_for(chip, run.stack).link_nic
    nic = min(busbw * 1e9 / (chip.node_size * share), chip.scaleout_bw)
    mine = dataclasses.replace(cluster, chip=dataclasses.replace(chip, scaleout_bw=nic))
    return dataclasses.replace(run, values=(mine, workload, layout, options))


def _held_out(path: Path, each: bool = False) -> None:
    """A held-out file's error with the shipped behaviours and the orderings its sources report;
    with ``each``, run by run, how many fall inside their interval, and all of it again on the
    network each run's cluster measured (``_on_its_network``)."""
    runs = load_runs(path)
    behaviours = {name: stack.behaviour for name, stack in REGISTRY.items()}
    steps = predicted(runs, behaviours)
    measured = np.array([r.step_time for r in runs])
    if not each:
        print(_row("all runs", steps / measured - 1))
        _orderings(path, runs, steps)
        return
    own = predicted([_on_its_network(r) for r in runs], behaviours)
    print(f"  {'run':<44} {'measured':>11} {'predicted':>11} {'error':>7}  on its network")
    for run, step, mine in zip(runs, steps, own):
        error, on_own = step / run.step_time - 1, mine / run.step_time - 1
        print(f"  {run.id:<44} {run.step_time:>9.3f} s {step:>9.3f} s {error:+7.1%}", end="")
        print(f"  {on_own:+7.1%}")
    for name, predictions in (("all runs", steps), ("all runs, each on its network", own)):
        print(_row(name, predictions / measured - 1))
        _inside(runs, predictions)
        _orderings(path, runs, predictions)


def _inside(runs, steps) -> None:
    """How many runs fall inside the interval a user sees with each prediction
    (``cost/step/interval.py``)."""
    spreads = [step_spread(r.stack, r.values[0].chip.name) for r in runs]
    ratios = [r.step_time / step for r, step in zip(runs, steps)]
    inside = sum(sp is not None and sp.low <= q <= sp.high for sp, q in zip(spreads, ratios))
    print(f"  inside their {LEVEL:.0%} interval: {inside} of {len(runs)}")


def _orderings(path: Path, runs, steps) -> None:
    """Each group's pairs of runs, measured apart, that the predictions put in the measured
    order."""
    measured = {r.id: r.step_time for r in runs}
    ours = dict(zip(measured, steps))
    for group in source_groups(path):
        pairs = list(itertools.combinations(group["members"], 2))
        ok = sum(np.sign(ours[b] - ours[a]) == np.sign(measured[b] - measured[a]) for a, b in pairs)
        print(f"  {group['id']:<28} {ok:>3}/{len(pairs):<3} {group.get('what', '')[:60]}")


if __name__ == "__main__":
    main()
