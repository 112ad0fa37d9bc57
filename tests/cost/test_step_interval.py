"""The interval around a predicted step (MODEL.md §F.3): what a user reads beside the step, and
whether it holds what it says on runs it was not built from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaling_widgets import estimate
from scaling_widgets.cost.step.interval import (
    FEWEST,
    LEVEL,
    RESIDUALS,
    held_out_coverage,
    spread_of,
)

ROWS = json.loads(Path(RESIDUALS).read_text(encoding="utf-8"))["runs"]
H100 = dict(model="llama-3-70b", hardware="h100", chips=512, batch=4 * 2**20, seq_len=8192)


def test_the_nearest_pool_with_enough_runs_stands_and_a_stranger_gets_every_run():
    # a run from each of FEWEST sources of stack a on X; as many of stack b on Y, far off
    rows = [{"source": f"a{k}", "stack": "a", "chip": "X", "ratio": 1.0 + k / 100}
            for k in range(FEWEST)]  # fmt: skip
    rows += [{"source": f"b{k}", "stack": "b", "chip": "Y", "ratio": 0.5 + k / 10}
             for k in range(FEWEST)]  # fmt: skip
    own = spread_of(rows, "a", "X")
    assert own.pool == "a on X" and own.sources == FEWEST and 1.0 <= own.low < own.high <= 1.04
    stranger = spread_of(rows, "c", "Z")
    assert stranger.pool == "every stack" and stranger.runs == 2 * FEWEST
    assert stranger.high - stranger.low > own.high - own.low  # no neighbours: wider
    # many runs of one source are still one source's bias: they do not stand alone
    one_source = [{**r, "source": "a0"} for r in rows[:FEWEST]]
    assert spread_of(one_source, "a", "X") is None


def test_eighty_percent_intervals_hold_seventy_to_ninety_percent_of_runs_they_never_saw():
    # each run's interval built from the other sources' runs alone, as a new run's would be
    assert 0.7 <= held_out_coverage(ROWS) <= 0.9 and LEVEL == 0.8
    assert len(ROWS) >= 100 and len({r["source"] for r in ROWS}) >= 14


def test_a_predicted_step_carries_its_interval_and_a_given_mfu_none():
    e = estimate(**H100, x=64, y=8, stack="megatron-lm")
    low, high = (float(t) for t in e.step_interval)
    assert low == float(e.step_time) * e.spread.low and high == float(e.step_time) * e.spread.high
    assert 0 < low < float(e.step_time) < high  # runs fell both faster and slower than predicted
    assert e.spread.sources >= FEWEST and e.spread.runs >= 100  # every stack's runs
    assert estimate(**H100, x=64, y=8, mfu=0.4).step_interval is None


@pytest.mark.parametrize("stack", ["megatron-lm", "fsdp2"])
def test_the_report_says_the_interval_and_what_it_rests_on(stack):
    from scaling_widgets.text.explain import explain

    e = estimate(**H100, x=64, y=8, stack=stack)
    line = next(str(x) for x in explain(e) if "Predicted step" in str(x))
    assert "80% interval" in line and f"runs ({e.spread.pool}, {e.spread.sources} sources)" in line


def test_two_layouts_tie_within_the_models_error_on_a_ratio_and_a_users_profile_has_none():
    from scaling_widgets.cost.step.interval import pair_spread_of

    pairs = pair_spread_of(ROWS)
    assert 0.8 < pairs.low < 1 < pairs.high < 1.25 and pairs.runs > 1000
    calibrated = estimate(**H100, x=64, y=8, measured_step_time=12.0)
    assert calibrated.step_interval is None  # a measured step is no prediction
    from scaling_widgets.cost.step.profiles import profile_for
    from scaling_widgets.presets import HARDWARE

    own = estimate(**H100, x=64, y=8, profile=profile_for(HARDWARE["h100"], "megatron-lm"))
    assert own.step_interval is None and own.step_breakdown is not None
