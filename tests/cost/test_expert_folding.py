"""Expert parallelism folded over TP x the data axis (MODEL.md §D.2), as Megatron-Core folds it
with expert tensor parallelism 1: each chip holds whole experts, E/EP of them; the EP group takes
TP's chips first; the routed experts need no TP collective."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import estimate
from scaling_widgets.cost import InputError, plan
from scaling_widgets.cost.step.profiles import profile_for
from scaling_widgets.cost.transformer.experts import routed_params
from scaling_widgets.presets import HARDWARE, MODELS

H100, V5P = HARDWARE["h100"], HARDWARE["tpu-v5p"]
QWEN3 = MODELS["qwen3-235b-a22b"]  # 128 experts, top 8, no shared experts
V3 = MODELS["deepseek-v3"]  # one shared expert
# 256 H100s as Megatron-Core folds them: TP 2 x DP 16 x PP 8, EP 32 over TP x DP.
ON_256 = dict(
    model=QWEN3, chip=H100, chips=256, batch=1024 * 4096, seq_len=4096, x=16, y=2, z=8, zero=1
)


def routed_held(**layout) -> float:
    """The routed experts' bf16 weights a chip holds, one stage over 256 H100s [bytes]: what
    EP takes off the weights of EP 1, every expert over TP."""
    split = {k: layout.pop(k) for k in ("x", "y") if k in layout}
    one = {**ON_256, "x": 128, "y": 2, "z": 1, **split}
    held = estimate(**one).memory.params - estimate(**one, **layout).memory.params
    return routed_params(QWEN3) * 2 / one["y"] - float(held)


def test_a_folded_chip_holds_whole_experts_e_over_ep_of_them():
    routed = routed_params(QWEN3) * 2  # bf16 [bytes]
    assert routed_held(ep=32, etp=1) == pytest.approx(routed / 32)  # not over TP as well
    assert routed_held(ep=32) == pytest.approx(routed / 64)  # of the data axis, over TP 2 too
    # EP 4 within TP 8: each chip holds a quarter of the experts, whole
    assert routed_held(ep=4, etp=1, x=32, y=8) == pytest.approx(routed / 4)


def test_the_optimizer_of_folded_experts_is_sharded_over_their_data_parallel_group():
    # ZeRO-1: each expert's optimizer over the X·Y/EP chips that hold it, its N/Z-th share either
    # way, as for the dense weights.
    folded, one = estimate(**ON_256, ep=32, etp=1), estimate(**ON_256)
    assert float(folded.memory.optimizer) == pytest.approx(float(one.memory.optimizer))


def test_folding_removes_the_routed_experts_tp_traffic_but_not_the_shared_experts():
    qwen = estimate(**ON_256, ep=32, etp=1, mfu=0.4)
    unfolded = estimate(**ON_256, ep=16, mfu=0.4)
    assert float(unfolded.layer.t_comms_y) > 0
    # Qwen3's MoE layers (all of them) have no shared expert: their MLP gathers nothing over TP.
    assert float(qwen.layer.t_comms_y) == 0
    v3 = dict(ON_256, model=V3, ep=32, etp=1, mfu=0.4)
    v3_folded, v3_data = estimate(**v3), estimate(**{**v3, "ep": 16, "etp": None})
    assert float(v3_folded.layer.t_comms_y) == pytest.approx(float(v3_data.layer.t_comms_y))


def test_the_predicted_step_drops_the_mlps_tp_all_reduces_where_experts_fold():
    # none hidden under the matmuls: attention's two all-reduces a pass are left of four
    nothing_hides = dataclasses.replace(profile_for(H100), o_tp=0.0)
    layout = {**ON_256, "y": 8, "x": 4, "profile": nothing_hides, "remat": "none"}
    folded, unfolded = estimate(**layout, ep=32, etp=1), estimate(**layout, ep=4)
    tp = "tp_exposed"
    assert float(folded.step_breakdown[tp]) == pytest.approx(float(unfolded.step_breakdown[tp]) / 2)


def test_a_folded_group_inside_a_node_all_to_alls_over_nvlink_only():
    # EP 8 over TP 2 x 4 of X: one node of 8. From the data axis, EP 8 with TP 2 spans two nodes.
    inside = estimate(**ON_256, ep=8, etp=1, mfu=0.4)
    across = estimate(**ON_256, ep=8, mfu=0.4)
    assert 0 < float(inside.layer.t_comms_ep) < float(across.layer.t_comms_ep)


def test_on_a_torus_a_folded_group_spans_tps_axes_and_its_share_of_xs():
    shape = dict(model=QWEN3, chip=V5P, slice_shape=(16, 16, 16), batch=4096 * 4096, seq_len=4096)
    folded = estimate(**shape, x=512, y=8, ep=32, etp=1, mfu=0.4)
    data = estimate(**shape, x=512, y=8, ep=32, mfu=0.4)
    # the same group size; folded it spans Y's axis too: more bandwidth, a faster all-to-all
    assert 0 < float(folded.layer.t_comms_ep) < float(data.layer.t_comms_ep)


def test_an_ep_that_does_not_fold_names_the_degrees_that_would():
    with pytest.raises(InputError, match=r"ep must be an EP degree .* folded over TP Y = 2") as err:
        estimate(**ON_256, ep=64, etp=1)  # 64 = 2 x 32, and 32 does not divide X = 16
    assert err.value.field == "ep"
    with pytest.raises(InputError, match=r"or etp 1, whole experts on each chip: EP 32 over TP 2"):
        estimate(**ON_256, ep=32)
    with pytest.raises(InputError, match=r"etp must be 1 .* or the TP degree Y = 2 .*; got 4") as e:
        estimate(**ON_256, ep=32, etp=4)
    assert e.value.field == "etp"
    # ETP equal to TP is the default: the experts split over TP as the rest
    assert float(estimate(**ON_256, ep=16, etp=2).step_time) == float(
        estimate(**ON_256, ep=16).step_time
    )


def test_the_planner_tries_folded_layouts_and_its_rows_estimate_the_same():
    p = plan(model=QWEN3, chip=H100, chips=256, batch=1024 * 4096, seq_len=4096, max_pp=8)
    folded = [r for r in range(len(p)) if p.layout(r)["etp"] == 1]
    assert folded, "no folded layout fits"
    r = folded[0]
    k = p.layout(r)
    assert k["ep"] > 1 and k["y"] > 1
    shown = estimate(model=QWEN3, chip=H100, batch=1024 * 4096, seq_len=4096, **k)
    assert float(shown.step_time) == pytest.approx(float(p.step_time[p.order[r]]), rel=1e-12)
    # held to expert TP 1, every row folds
    held = plan(model=QWEN3, chip=H100, chips=256, batch=1024 * 4096, seq_len=4096, etp=1,
                max_pp=8)  # fmt: skip
    rows = [held.layout(r) for r in range(min(len(held), 50))]
    assert all(k["etp"] == 1 or k["y"] == 1 or k["ep"] == 1 for k in rows)


@settings(max_examples=40, deadline=None)
@given(
    ep=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]),
    y=st.sampled_from([1, 2, 4, 8]),
    etp=st.sampled_from([None, 1, 2, 3, 8]),
)
def test_any_expert_layout_runs_or_is_refused_by_name(ep, y, etp):
    try:
        e = estimate(**{**ON_256, "x": 32 // y, "y": y}, ep=ep, etp=etp, mfu=0.4)
    except InputError as err:
        assert err.field in ("ep", "etp", "y")
        return
    values = [e.step_time, e.peak.reserved, e.memory.params, e.layer.t_comms_ep]
    assert all(np.isfinite(float(v)) and float(v) >= 0 for v in values)
    assert float(e.flops_per_token) == float(estimate(**ON_256, mfu=0.4).flops_per_token)
