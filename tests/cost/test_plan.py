"""The layout planner: one vectorized evaluation, ranked; agrees with the closed forms and with
a brute-force scalar evaluation of every layout."""

import json
import math

import pytest

from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, x_opt
from scaling_widgets.cost.plan import plan
from scaling_widgets.presets import HARDWARE, MODELS

V5P, L13 = HARDWARE["tpu-v5p"], MODELS["llama-2-13b"]


def test_example_16_picks_a_compute_bound_fsdp_plus_tp_layout():
    ranked = plan(model=L13, chip=V5P, batch=3e6, seq_len=32768, slice_shape=(16, 16, 16))
    best, e = ranked.layout(0), ranked.estimate(0)
    assert best["x"] > 1 and best["y"] > 1 and e.compute_bound and e.fits
    assert float(e.step_time) == pytest.approx(0.3, abs=0.015)
    assert "compute" in ranked.binds(0)


def test_the_best_single_pod_split_is_within_a_power_of_two_of_x_opt():
    ranked = plan(model=L13, chip=V5P, batch=3e6, seq_len=32768, slice_shape=(16, 16, 16))
    best = ranked.estimate(0)
    optimum = float(x_opt(batch=3e6, d_ff=L13.d_ff, chips=4096, mx=best.mx, my=best.my))
    assert abs(math.log2(ranked.layout(0)["x"] / optimum)) <= 1


def test_on_a_small_cluster_the_planner_agrees_with_brute_force():
    ranked = plan(model=MODELS["llama-2-7b"], chip=V5P, batch=2e5, seq_len=4096, slice_shape=(2, 2, 4))
    brute = []
    for i in range(len(ranked.step_time)):  # every layout, one scalar estimate at a time
        e = estimate(strategy="fsdp+tp", **ranked.knobs(i), **ranked.inputs)
        if e.fits:
            brute.append(float(e.step_time * e.hfu / e.mfu))
    assert len(brute) == len(ranked) and min(brute) == pytest.approx(float(ranked.step_time[ranked.order[0]]))


def test_ties_are_broken_the_same_way_every_time():
    first = plan(model=L13, chip=V5P, batch=3e6, seq_len=32768, slice_shape=(8, 8, 8))
    again = plan(model=L13, chip=V5P, batch=3e6, seq_len=32768, slice_shape=(8, 8, 8))
    assert [first.layout(r) for r in range(10)] == [again.layout(r) for r in range(10)]


def test_an_impossible_request_says_what_would_be_needed():
    with pytest.raises(ValueError, match=r"no layout of LLaMA-3 405B fits on 4 TPU v5e chips.*About \d+x the chips"):
        plan(model=MODELS["llama-3-405b"], chip=HARDWARE["tpu-v5e"], batch=1e5, seq_len=4096, slice_shape=(2, 2))


def test_cli_plan_json_is_ranked_best_first(capsys):
    code = main(
        [
            "plan",
            "--model",
            "llama-2-13b",
            "--mesh",
            "16x16x16",
            "--batch",
            "3M",
            "--seq-len",
            "32768",
            "--top",
            "3",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and len(data["layouts"]) == 3 and data["fit"] <= data["evaluated"]
    steps = [layout["step_time_s"] for layout in data["layouts"]]
    assert steps == sorted(steps) and data["layouts"][0]["compute_bound"]
    assert {"layout", "per_layer", "memory_per_chip_bytes", "binds"} <= set(data["layouts"][0])
