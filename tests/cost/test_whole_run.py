"""The whole run (MODEL.md §H): failures, checkpoints and restarts stretch the steps into a wall
clock; chip-hours, energy and money follow from it."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, plan
from scaling_widgets.cost.step.run import FAILURES_PER_CHIP_HOUR, HOUR, whole_run
from scaling_widgets.presets import HARDWARE, MODELS

RUN = dict(chips=4096, ideal=30 * 86400.0, checkpoint_bytes=2e9, write_bw=1e9, restart=600.0)


def test_the_default_failure_rate_is_llama_3s():
    # 419 unexpected interruptions in 54 days on 16,384 H100s: one every 3.1 hours
    assert FAILURES_PER_CHIP_HOUR == pytest.approx(1.973e-5, rel=1e-3)
    r = whole_run(**{**RUN, "chips": 16_384}, failure_rate=FAILURES_PER_CHIP_HOUR)
    assert float(r.between_failures) / HOUR == pytest.approx(54 * 24 / 419)


@settings(max_examples=60, deadline=None)
@given(
    rates=st.lists(st.floats(0, 1e-3), min_size=2, max_size=2),
    write=st.floats(0.1, 100),
    restart=st.floats(0, 3600),
)
def test_more_failures_never_shorten_the_run(rates, write, restart):
    low, high = sorted(rates)
    runs = [
        whole_run(**{**RUN, "checkpoint_bytes": write * 1e9, "restart": restart}, failure_rate=r)
        for r in (low, high)
    ]
    assert float(runs[1].wall) >= float(runs[0].wall)
    assert 0 <= float(runs[1].goodput) <= float(runs[0].goodput) <= 1


@settings(max_examples=40, deadline=None)
@given(rate=st.floats(1e-7, 1e-4), write=st.floats(0.5, 60))
def test_young_daly_minimises_the_overhead(rate, write):
    chosen = whole_run(**{**RUN, "checkpoint_bytes": write * 1e9}, failure_rate=rate)
    tau = float(chosen.interval)
    for factor in np.geomspace(0.2, 5, 41):
        if tau * factor <= write:
            continue
        other = whole_run(**{**RUN, "checkpoint_bytes": write * 1e9}, failure_rate=rate,
                          interval=tau * factor)  # fmt: skip
        assert float(other.goodput) <= float(chosen.goodput) + 1e-12


def test_without_failures_the_goodput_is_the_steps_over_steps_and_writes():
    r = whole_run(**RUN, failure_rate=0.0, interval=1000.0)  # a 2 s write every 1,000 s
    useful, writes = 1000.0 - 2.0, 2.0
    assert float(r.goodput) == pytest.approx(useful / (useful + writes))
    never = whole_run(**RUN, failure_rate=0.0)  # no failures, no checkpoint worth writing
    assert float(never.goodput) == 1 and float(never.wall) == RUN["ideal"]


def test_chip_hours_energy_and_money_follow_from_the_wall_clock():
    r = whole_run(**RUN, failure_rate=FAILURES_PER_CHIP_HOUR, power=700.0, pue=1.1, price=2.0)
    assert float(r.chip_hours) == pytest.approx(4096 * float(r.wall) / 3600)
    assert float(r.energy) == pytest.approx(float(r.chip_hours) * 3600 * 700 * 1.1)
    assert float(r.cost) == pytest.approx(2 * float(r.chip_hours))
    unknown = whole_run(**RUN, failure_rate=FAILURES_PER_CHIP_HOUR)
    assert unknown.energy is None and unknown.cost is None


def test_an_estimate_with_tokens_carries_its_run_and_each_chip_writes_what_it_holds():
    keywords = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], slice_shape=(128, 8),
                    batch=2**24, seq_len=8192, tokens=15e12)  # fmt: skip
    e = estimate(**keywords)
    r = e.run
    assert float(r.checkpoint_bytes) == float(e.peak.weights + e.peak.optimizer)
    assert float(r.ideal) == float(e.training_time) and float(r.wall) > float(r.ideal)
    assert r.energy is not None  # the H100's 700 W
    tpu = estimate(model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=3e6, tokens=2e12)
    assert tpu.run.energy is None  # no published power, unless one is given
    assert estimate(model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=3e6, tokens=2e12,
                    chip_power=400.0).run.energy is not None  # fmt: skip
    assert estimate(**{**keywords, "tokens": None}).run is None


def test_the_command_line_says_the_run_and_when_it_never_finishes(capsys):
    flags = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "1024", "--batch", "16M",
             "--seq-len", "8192", "--tokens", "15T", "--price-per-chip-hour", "2.5"]  # fmt: skip
    assert main(["estimate", *flags]) == 0
    out = capsys.readouterr().out
    assert "goodput" in out and "on the wall clock" in out and "at 2.5 a chip-hour" in out
    assert main(["estimate", *flags, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert 0 < run["goodput"] < 1 and run["cost"] == pytest.approx(2.5 * run["chip_hours"])
    # checkpoints more often than one can be written: no progress, and it says why
    assert main(["estimate", *flags, "--checkpoint-interval", "0.001", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert run["goodput"] == 0 and run["wall_s"] is None and run["chip_hours"] is None
    assert main(["estimate", *flags, "--checkpoint-interval", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "the run never finishes, a checkpoint's write fills its interval" in out
    assert main(["estimate", *flags, "--failure-rate", "0.01"]) == 0
    assert "never finishes, failures outpace its checkpoints" in capsys.readouterr().out


def test_the_planner_ranks_by_the_wall_clock_when_asked():
    keywords = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], chips=1024, batch=2**24,
                    seq_len=8192, tokens=15e12)  # fmt: skip
    by_wall, by_step = plan(**keywords, rank_by="wall"), plan(**keywords)
    walls = [float(by_wall.estimate(r).run.wall) for r in range(5)]
    assert walls == sorted(walls)
    assert walls[0] <= float(by_step.estimate(0).run.wall)
    with pytest.raises(ValueError, match="rank_by must be one of 'step', 'wall'"):
        plan(**keywords, rank_by="energy")
