"""Expert parallelism (MODEL.md §D.2): experts split over EP chips of the data axis, two all-to-alls
a pass, and the GPU chapter's rooflines for them."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaling_widgets import estimate
from scaling_widgets.cost import InputError
from scaling_widgets.cost.transformer.experts import all_to_all_seconds, routed_params
from scaling_widgets.presets import HARDWARE, MODELS

H100, V5P = HARDWARE["h100"], HARDWARE["tpu-v5p"]
V3 = MODELS["deepseek-v3"]
ON_H100 = dict(
    model=V3,
    chip=H100,
    slice_shape=(256, 8),
    batch=16e6,
    seq_len=4096,
    x=2048,
    y=1,
    zero=1,
    mfu=0.4,
)


def test_ep_splits_the_routed_experts_and_nothing_else():
    one, many = estimate(**ON_H100), estimate(**ON_H100, ep=64)
    routed = routed_params(V3) * 2  # bf16 weights [bytes]
    assert float(one.memory.params - many.memory.params) == pytest.approx(routed * (1 - 1 / 64))
    # ZeRO-1 shards each expert's optimizer over the X/EP chips that hold it: its N-th share either
    # way.
    assert float(many.memory.optimizer) == pytest.approx(float(one.memory.optimizer))
    assert float(one.flops_per_token) == float(many.flops_per_token)


def test_the_all_to_all_across_nodes_is_the_gpu_chapters():
    # T = 2·B·D·(Z − 8)/Z·min(8k/Z, 1)/W_node for B tokens over Z GPUs (one all-to-all), with Y = 1.
    # the chapter's routing
    free = dataclasses.replace(V3, moe=dataclasses.replace(V3.moe, routed_nodes=None))
    D, k, W_node = V3.d_model, V3.moe.top_k, 8 * H100.scaleout_bw
    for Z in (16, 64, 256):
        B = 1e6 * Z  # a million tokens a GPU
        chapter = 2 * B * D * (Z - 8) / Z * min(8 * k / Z, 1) / W_node
        ours = all_to_all_seconds(chip=H100, model=free, ep=Z, y=1) * B / Z
        assert float(ours) == pytest.approx(chapter)


def test_ep_stays_compute_bound_only_where_the_gpu_chapter_says():
    # Across nodes EP needs F_e > 8·α_node (EP ≫ k): DeepSeek-V3's 2048 is far below 8 x 2,475.
    far = estimate(**ON_H100, ep=64)
    assert float(far.layer.comm_ratio("ep")) > 1 and str(far.layer.worst_axis) == "ep"
    # F_e well above 8·α
    wide = dataclasses.replace(V3, moe=dataclasses.replace(V3.moe, d_ff=8 * 2475 * 2))
    assert float(estimate(**{**ON_H100, "model": wide}, ep=64).layer.comm_ratio("ep")) < 1
    inside = estimate(**ON_H100, ep=8)  # one node: NVLink only
    assert float(inside.layer.comm_ratio("ep")) < float(far.layer.comm_ratio("ep")) / 5


def test_on_a_torus_the_all_to_all_is_a_quarter_of_an_all_gather():
    per_token = all_to_all_seconds(chip=V5P, model=V3, ep=16, mx=1)
    # the same array, over the same ring
    all_gather = V3.moe.top_k * V3.d_model * 2 * (16 - 1) / V5P.ici_bw
    assert float(per_token) == pytest.approx(all_gather / 4)


def test_an_ep_that_does_not_divide_the_experts_or_the_data_axis_is_refused():
    with pytest.raises(
        InputError,
        match="ep must be an EP degree dividing the model's 256 experts and the data"
        " axis X = 2048 it is taken from; got 3",
    ):
        estimate(**ON_H100, ep=3)
    with pytest.raises(
        InputError, match="ep must be 1 for a dense model: it has no experts to split; got 8"
    ):
        estimate(**{**ON_H100, "model": MODELS["llama-3-70b"]}, ep=8)


@given(ep=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]), y=st.sampled_from([1, 2, 4, 8]))
def test_ep_never_changes_the_flops_and_never_adds_weights(ep, y):
    base = estimate(**{**ON_H100, "x": 2048 // y, "y": y})
    e = estimate(**{**ON_H100, "x": 2048 // y, "y": y}, ep=ep)
    assert float(e.flops_per_token) == float(base.flops_per_token)
    assert float(e.memory.params) <= float(base.memory.params)
    assert np.isfinite(float(e.step_time)) and float(e.step_time) > 0


def test_node_limited_routing_caps_the_copies_across_nodes():
    unlimited = dataclasses.replace(V3, moe=dataclasses.replace(V3.moe, routed_nodes=None))
    # DeepSeek-V3: at most 4 nodes a token
    capped = all_to_all_seconds(chip=H100, model=V3, ep=256, y=1)
    # its 8 experts on up to 8 nodes
    free = all_to_all_seconds(chip=H100, model=unlimited, ep=256, y=1)
    per_copy = V3.d_model * 2 / H100.scaleout_bw
    assert float(free) == pytest.approx(per_copy * min(8 * 248 / 256, 248 / 8))
    assert float(capped) == pytest.approx(per_copy * 4)
