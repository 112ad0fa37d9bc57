"""The headline validation cannot leak (MODEL.md §F.3): a source held out is predicted by a fit
that never read its measured times, so changing them moves none of its predictions, while
changing a run the fit did see does."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_predictions import refit_predict  # noqa: E402
from fit_stacks import FILES, all_runs  # noqa: E402

from scaling_widgets.measured import HELDOUT_RUNS, SCHEDULE_RUNS, load_runs  # noqa: E402

# Megatron-LM's three sources keep the fits small: NeMo 24.07 held, the others fitted
RUNS = [r for r in all_runs() if r.stack == "megatron-lm"]
HELD = [r for r in RUNS if r.group == "NEMO2407"]
TRAIN = [r for r in RUNS if r.group != "NEMO2407"]


def _slower(runs, factor=1.5):
    return [dataclasses.replace(r, step_time=r.step_time * factor) for r in runs]


def test_a_held_sources_measured_times_move_none_of_its_predictions():
    as_measured = refit_predict(TRAIN, HELD)
    perturbed = refit_predict(TRAIN, _slower(HELD))
    assert np.array_equal(as_measured, perturbed)
    # and the fit does read what it trains on: the same change there moves the predictions
    assert not np.allclose(as_measured, refit_predict(_slower(TRAIN), HELD), rtol=0.05)


def test_no_fit_reads_the_held_out_files():
    # the schedule comparisons and the stack none of ours is fitted on stay first looks
    assert {SCHEDULE_RUNS, HELDOUT_RUNS}.isdisjoint(FILES)
    held = {r.id for path in (SCHEDULE_RUNS, HELDOUT_RUNS) for r in load_runs(path)}
    assert held and not held & {r.id for r in all_runs()}
