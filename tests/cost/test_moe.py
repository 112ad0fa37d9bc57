"""Mixtures of experts and latent attention (MODEL.md §D.1): parameters against the published
totals, FLOPs from the active parameters, and the weights' traffic per FLOP in the thresholds
(D.2)."""

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaling_widgets import estimate
from scaling_widgets.cost.transformer.counts import param_count
from scaling_widgets.cost.transformer.shapes import MLA, Model, MoE
from scaling_widgets.cost.transformer.thresholds import critical_tokens_per_chip
from scaling_widgets.presets import HARDWARE, MODELS

V5P = HARDWARE["tpu-v5p"]

# Published totals and active parameters, in billions (each model's card or report).
PUBLISHED = {
    "deepseek-v3": (
        671,
        37,
    ),  # DeepSeek-V3 Technical Report, abstract: "671B total ... 37B activated"
    "mixtral-8x7b": (46.7, 12.9),  # Mistral AI, "Mixtral of experts" (2024): 46.7B, 12.9B per token
    "mixtral-8x22b": (141, 39),  # Mistral AI's Mixtral 8x22B announcement: 141B, 39B active
    "qwen3-30b-a3b": (30.5, 3.3),  # Qwen/Qwen3-30B-A3B model card
    "qwen3-235b-a22b": (235, 22),  # Qwen/Qwen3-235B-A22B model card
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameters_match_the_published_totals(name):
    total, active = PUBLISHED[name]
    p = param_count(**MODELS[name].dims())
    assert float(p.total) / 1e9 == pytest.approx(total, rel=0.01)
    # "about 37B": DeepSeek-V3's is 37.6B
    assert float(p.active) / 1e9 == pytest.approx(active, rel=0.04)


def test_deepseek_v3_latent_attention_counted_projection_by_projection():
    # Per layer: q 7168·1536 + 1536·128·192, kv 7168·576 + 512·128·256, o 128·128·7168.
    per_layer = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    p = param_count(**MODELS["deepseek-v3"].dims())
    assert float(p.attention) == 61 * per_layer


def test_the_flops_per_token_are_six_times_the_active_parameters():
    for name in ("mixtral-8x7b", "deepseek-v3", "llama-3-70b"):
        e = estimate(
            model=MODELS[name],
            chip=V5P,
            slice_shape=(16, 16, 16),
            batch=16e6,
            seq_len=4096,
            mfu=0.4,
        )
        assert float(e.flops_per_token) == pytest.approx(6 * float(e.params.active), rel=1e-12)
        assert float(e.params.active) < float(e.params.total) or MODELS[name].moe is None


def test_a_moe_layer_needs_r_times_the_tokens_for_fsdp():
    # Mixtral 8x7B: F_w/F = 8/2 = 4, so FSDP's threshold is 4·α/M_X (the "(E/k)·C/W" of MODEL.md
    # §D.2).
    e = estimate(
        model=MODELS["mixtral-8x7b"],
        chip=V5P,
        slice_shape=(16, 16, 16),
        batch=64e6,
        seq_len=4096,
        strategy="fsdp",
        mfu=0.4,
    )
    alpha = V5P.flops / V5P.ici_bw
    assert float(e.critical_tokens_per_chip) == pytest.approx(4 * alpha / float(e.mx))
    dense = critical_tokens_per_chip(
        strategy="fsdp", flops=V5P.flops, ici_bw=V5P.ici_bw, d_ff=14336, mx=float(e.mx)
    )
    assert float(e.critical_tokens_per_chip) == pytest.approx(4 * float(dense))
    # TP's limit is set by the width a token goes through: k·F_e = 28,672.
    assert float(e.tp_limit) == pytest.approx(2 * 14336 / alpha)  # M_Y = 1: no TP group here


def test_the_capacity_factor_pads_the_hardware_flops_not_the_model_flops():
    base = MODELS["mixtral-8x7b"]
    padded = dataclasses.replace(base, moe=dataclasses.replace(base.moe, capacity_factor=1.25))
    args = dict(chip=V5P, slice_shape=(16, 16, 16), batch=16e6, seq_len=4096, mfu=0.4)
    e, p = estimate(model=base, **args), estimate(model=padded, **args)
    assert float(p.flops_per_token) == float(e.flops_per_token)
    experts = 2 * 3 * 4096 * 14336 * 32  # the two routed experts' parameters, over the layers
    assert float(p.hardware_flops_per_token - e.hardware_flops_per_token) == pytest.approx(
        6 * 0.25 * experts
    )
    assert float(p.step_time) > float(e.step_time)


def test_bad_moe_and_mla_values_name_the_field():
    with pytest.raises(
        ValueError, match="MoE top_k must be a whole number from 1 to experts \\(8\\); got 9"
    ):
        MoE(experts=8, top_k=9, d_ff=14336)
    with pytest.raises(
        ValueError, match="MoE capacity_factor must be absent, or from 1 to 64; got 0.5"
    ):
        MoE(experts=8, top_k=2, d_ff=14336, capacity_factor=0.5)
    with pytest.raises(ValueError, match="MLA kv_lora_rank must be a whole number from 1"):
        MLA(kv_lora_rank=0, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
    with pytest.raises(
        ValueError, match="Model moe must be a MoE with fewer dense_layers than layers \\(32\\)"
    ):
        dataclasses.replace(
            MODELS["mixtral-8x7b"], moe=MoE(experts=8, top_k=2, d_ff=14336, dense_layers=32)
        )


@given(
    experts=st.integers(1, 512),
    top_k=st.integers(1, 16),
    shared=st.integers(0, 4),
    dense=st.integers(0, 10),
    d_ff=st.integers(1, 1 << 16),
)
def test_active_never_exceeds_total_and_one_expert_of_one_is_dense_plus_its_router(
    experts, top_k, shared, dense, d_ff
):
    top_k = min(top_k, experts)
    base = Model(
        "m", layers=12, d_model=1024, d_ff=4096, heads=16, kv_heads=16, head_dim=64, vocab=32000
    )
    moe = dataclasses.replace(
        base, moe=MoE(experts=experts, top_k=top_k, d_ff=d_ff, shared=shared, dense_layers=dense)
    )
    p = param_count(**moe.dims())
    assert float(p.active) <= float(p.total)
    assert (float(p.active) == float(p.total)) == (top_k == experts)
    one = dataclasses.replace(base, moe=MoE(experts=1, top_k=1, d_ff=4096))
    assert (
        float(param_count(**one.dims()).total)
        == float(param_count(**base.dims()).total) + 12 * 1024
    )
