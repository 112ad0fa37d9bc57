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


def test_a_pipeline_puts_the_dense_first_layers_on_the_first_stage():
    """A MoE model of 4 layers whose first is dense, on PP 2 x EP 4 with Megatron-LM's ZeRO-1:
    the last stage holds two MoE layers, every byte of weights, gradients and optimizer state
    what an all-MoE model's last stage holds; the first stage holds the dense MLP in place of a
    MoE layer's shared expert, router and a quarter of its routed experts (MODEL.md §E.1)."""
    D, F_e = 2048, 1024
    moe = MoE(experts=16, top_k=3, d_ff=F_e, shared=1, dense_layers=1)
    dims = dict(layers=4, d_model=D, heads=16, kv_heads=16, head_dim=128, vocab=32000)
    dense_first = Model(name="dense first", d_ff=4 * F_e, moe=moe, **dims)
    all_moe = dataclasses.replace(dense_first, moe=dataclasses.replace(moe, dense_layers=0))
    layout = dict(strategy="fsdp+tp", x=4, y=1, z=2, ep=4, zero=1, remat="none")
    run = dict(hardware="h100", chips=8, batch=8 * 4096, seq_len=4096, stack="megatron-lm")
    a, b = (estimate(model=m, **layout, **run) for m in (dense_first, all_moe))
    assert int(a.peak.stage) == int(b.peak.stage) == 1  # the output layer's stage is the busiest
    for part in ("weights", "grads", "optimizer"):
        assert float(getattr(a.peak, part)) == float(getattr(b.peak, part))
    # bf16 weights, fp32 gradients, 12 bytes of optimizer over DP 4 (the routed experts' over 1)
    routed, mlp = 16 * 3 * D * F_e / 4, 3 * D * 4 * F_e - (3 * D * F_e + 16 * D)
    lighter = routed * (2 + 4 + 12) - mlp * (2 + 4 + 12 / 4)
    first = float(b.peak.on("first")[0]) - float(a.peak.on("first")[0])
    assert lighter <= first <= lighter * 1.25  # and the MoE layer's dispatch buffers, averaged


def _every_device(schedule, v, k, held):
    """Each device's dense layers, the pipeline's chunks walked one by one: device d's j-th
    chunk is chunk j·Z + d (a V's second round runs back: 2Z − 1 − c); DualPipe's second copy
    runs its stages in reverse."""
    from scaling_widgets.cost.schedules import ends_together, weight_copies

    first, middle, at_last, Z = held
    V, copies = bool(ends_together(schedule)), int(weight_copies(schedule))
    sizes = [first] + [middle] * (Z - 2) + [middle if V else at_last]
    dense, taken = [0.0] * Z, 0.0
    if copies == 2:
        for stage in range(Z):
            for d in (stage, Z - 1 - stage):
                dense[d] += min(max(k - taken, 0.0), sizes[stage])
            taken += sizes[stage]
        return sizes, dense
    rounds = 2 if V else v
    for c in range(rounds * Z):
        d = (c if c < Z else 2 * Z - 1 - c) if V else c % Z
        dense[d] += min(max(k - taken, 0.0), sizes[d] / rounds)
        taken += sizes[d] / rounds
    return sizes, dense


@pytest.mark.parametrize("schedule,v", [("1f1b", 1), ("interleaved", 2), ("zbv", 2),
                                        ("dualpipev", 2), ("dualpipe", 1)])  # fmt: skip
@pytest.mark.parametrize("z,ep", [(2, 4), (4, 16), (8, 4), (8, 64), (12, 4)])
def test_the_peak_is_the_busiest_of_every_pipeline_device(monkeypatch, schedule, v, z, ep):
    """A MoE model whose dense first layers reach past the second device: the peak the model
    reports is the largest of every device's, each counted with its own dense layers, whether
    a dense MLP weighs more than a MoE layer's experts on a chip (EP 64) or less (MODEL.md
    §E.1)."""
    from scaling_widgets.cost.memory import peak as P

    toy = Model(name="toy", layers=24, d_model=4096, d_ff=14336, heads=32, kv_heads=8,
                head_dim=128, vocab=2048,
                moe=MoE(experts=64, top_k=8, d_ff=1536, shared=1, dense_layers=5))  # fmt: skip
    m = 4 * z
    run = dict(model=toy, hardware="h100", chips=64 * z, batch=m * 64 * 4096, seq_len=4096,
               strategy="fsdp+tp", x=64, y=1, z=z, ep=ep, zero=1, remat="none",
               schedule=schedule, virtual_stages=v, microbatches=m,
               stack="megatron-lm")  # fmt: skip
    reported = estimate(**run).peak
    code_devices = P._devices

    def every_device(device, Z, last, held, output):
        (first, middle, at_last), _ = held
        sizes, dense = _every_device(schedule, v, 5, (float(first), float(middle),
                                                      float(at_last), int(Z)))  # fmt: skip
        others = [(d, device(d, sizes[d], dense[d]), True) for d in range(int(Z)) if d != last]
        return others + [(last, device(last, at_last, dense[int(last)], *output), True)]

    monkeypatch.setattr(P, "_devices", every_device)
    each = estimate(**run).peak
    monkeypatch.setattr(P, "_devices", code_devices)
    assert float(reported.reserved) == pytest.approx(float(each.reserved), rel=1e-12)
