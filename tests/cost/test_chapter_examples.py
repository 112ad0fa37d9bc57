"""MODEL.md §A.8: every worked example of the chapter, as a named golden test; and A.9's errors, not
repeated."""

import numpy as np
import pytest

from scaling_widgets.cost import (
    InputError,
    best_split,
    compare_strategies,
    critical_tokens_per_chip,
    critical_tokens_per_pod,
    crossover_batch,
    estimate,
    largest_replicated_model,
    layer_times,
    memory_per_chip,
    nearest_split,
    param_count,
    split_candidates,
    split_keywords,
    step_time,
    time_to_train,
    tp_limit,
    training_flops,
    x_opt,
)
from scaling_widgets.cost.hardware.mesh import span_axes
from scaling_widgets.presets import HARDWARE, MODELS

V5P = HARDWARE["tpu-v5p"]
HW = dict(flops=V5P.flops, ici_bw=V5P.ici_bw, dcn_bw=V5P.dcn_bw)
ICI = dict(flops=V5P.flops, ici_bw=V5P.ici_bw)
DAY = 86400


def test_example_01_dp_fsdp_threshold_on_one_axis_is_2550_tokens_per_chip():
    for strategy in ("dp", "fsdp"):
        assert critical_tokens_per_chip(
            strategy=strategy, d_ff=32768, mx=1, **ICI
        ) == pytest.approx(2550)
        # ...and the time model agrees: 64 chips on one axis turn compute-bound at 2550 tokens each.
        B = crossover_batch(strategy=strategy, d_model=8192, d_ff=32768, x=64, mx=1, **HW)
        assert B / 64 == pytest.approx(2550)


def test_example_02_dp_over_three_axes_850_per_chip_7_6m_for_a_full_pod():
    assert critical_tokens_per_chip(strategy="dp", d_ff=1, mx=3, **ICI) == pytest.approx(850)
    full_pod = estimate(model=MODELS["llama-2-7b"], chip=V5P, batch=1e6, strategy="dp")
    assert full_pod.chips == 8960 and full_pod.mx == 3
    assert full_pod.crossover_batch == pytest.approx(7.6e6, rel=0.01)


def test_example_03_largest_model_under_pure_dp_is_9_6b_params():
    assert largest_replicated_model(hbm_bytes=V5P.hbm_bytes, bytes_per_param=10) == pytest.approx(
        9.6e9
    )


def test_example_04_deepseek_v2_40m_batch_allows_47000_chips_of_fsdp():
    chips = 40e6 / critical_tokens_per_chip(strategy="fsdp", d_ff=1, mx=3, **ICI)
    assert chips == pytest.approx(47_000, rel=0.01)
    assert round(float(chips / V5P.pod_chips)) == 5


def test_example_05_llama3_70b_flops_chips_and_17_days():
    params = param_count(**MODELS["llama-3-70b"].dims()).total
    assert training_flops(params=params, tokens=15e12) == pytest.approx(6.3e24, rel=0.01)
    chips = 16e6 / critical_tokens_per_chip(strategy="fsdp", d_ff=1, mx=3, **ICI)
    assert chips == pytest.approx(18_823, abs=1)
    step = step_time(batch=16e6, params=params, chips=chips, flops=V5P.flops, mfu=0.5)
    days = time_to_train(tokens=15e12, batch=16e6, step_time=step) / DAY
    assert round(float(days)) == 17


def test_example_06_tp_limit_11_8_for_llama3_70b_and_f_20400_for_8_way():
    assert tp_limit(d_ff=30_000, **ICI) == pytest.approx(11.8, abs=0.05)
    assert tp_limit(d_ff=20_400, **ICI) == pytest.approx(8)
    t = layer_times(strategy="tp", batch=1e6, d_model=8192, d_ff=30_000, y=[8, 16], **HW)
    assert t.compute_bound.tolist() == [True, False]


def test_example_07_gemma_7b_tp_limit_19_3():
    assert tp_limit(d_ff=49_152, **ICI) == pytest.approx(19.3, abs=0.05)
    t = layer_times(strategy="tp", batch=1e6, d_model=3072, d_ff=49_152, y=[19, 20], **HW)
    assert t.compute_bound.tolist() == [True, False]


def test_example_08_x_opt_13_7_on_4x4x4_chooses_16_by_4():
    opt = x_opt(batch=48_000, d_ff=32_768, chips=64, mx=2, my=1)
    # the chapter prints 13.9; A.9: 187.5 without the square root
    assert opt == pytest.approx(13.7, abs=0.05)
    X, Y = nearest_split(x_opt=opt, chips=64)
    assert (X, Y) == (16, 4)


def test_example_09_fsdp_tp_threshold_99_tokens_per_chip_vs_850():
    both = critical_tokens_per_chip(strategy="fsdp+tp", d_ff=32_768, mx=2, my=1, **ICI)
    assert both == pytest.approx(99, abs=0.5)
    fsdp = critical_tokens_per_chip(strategy="fsdp", d_ff=32_768, mx=3, **ICI)
    assert fsdp == pytest.approx(850)


def test_example_10_16x16x16_figure_best_split_512_by_8_crosses_at_4_35e5():
    mesh = (16, 16, 16)
    dims = dict(d_model=8192, d_ff=32_768)
    # The chapter's bound: every strategy is comm-bound below N·α²/(2F) ≈ 4.06e5 tokens.
    bound = 4096 * critical_tokens_per_chip(strategy="fsdp+tp", d_ff=32_768, mx=2, my=1, **ICI)
    assert bound == pytest.approx(4.06e5, rel=0.005)
    # Every legal split on this mesh, with the default axis rule, crosses above that bound...
    X, Y = split_candidates(4096)
    span = span_axes(slice_shape=mesh, x=X, y=Y)
    crossings = crossover_batch(strategy="fsdp+tp", x=X, y=Y, mx=span.mx, my=span.my, **dims, **HW)
    assert crossings.min() > bound
    # ...and the first to cross is FSDP 512 x TP 8, near 4.35e5.
    assert (X[crossings.argmin()], Y[crossings.argmin()]) == (512, 8)
    assert crossings.min() == pytest.approx(4.35e5, rel=0.005)
    assert best_split(batch=5e5, slice_shape=mesh, **dims, **HW) == (512, 8)
    # A.9: the chapter's "FSDP 256, TP 16" is never compute-bound (TP 16 > F/α ≈ 12.85).
    assert crossings[Y == 16] == np.inf


def test_example_11_dcn_needs_73440_tokens_per_pod():
    # A.9: not 71,360
    assert critical_tokens_per_pod(flops=V5P.flops, dcn_bw=V5P.dcn_bw) == pytest.approx(73_440)


def test_example_12_llama3_70b_at_2m_tokens_outgrows_a_pod():
    assert int(tp_limit(d_ff=30_000, **ICI)) == 11
    fsdp_chips = 2e6 / critical_tokens_per_chip(strategy="fsdp", d_ff=1, mx=3, **ICI)
    assert fsdp_chips == pytest.approx(2_350, rel=0.01)
    per_chip = critical_tokens_per_chip(strategy="fsdp+tp", d_ff=30_000, mx=2, my=1, **ICI)
    assert per_chip == pytest.approx(108, abs=0.5)
    assert 2e6 / per_chip == pytest.approx(18_500, rel=0.01)
    assert 2e6 / per_chip > V5P.pod_chips  # more than a pod: DCN


def test_example_13_llama3_70b_1m_on_a_pod_1024_by_8_and_2m_on_two_pods():
    opt = x_opt(batch=1e6, d_ff=30_000, chips=8192, mx=2, my=1)
    assert nearest_split(x_opt=opt, chips=8192) == (1024, 8)
    two = estimate(model=MODELS["llama-3-70b"], chip=V5P, batch=2e6, pods=2)
    assert two.tokens_per_chip == pytest.approx(111, abs=1)
    assert two.batch / two.pods >= two.critical_tokens_per_pod  # 1M per pod: DCN is fine
    assert two.layer.comm_ratio("dcn") < 1


def test_example_14_llama2_13b_parameter_count():
    model = MODELS["llama-2-13b"]
    assert (model.heads, model.kv_heads, model.head_dim) == (40, 40, 128)  # A.9: not "4040128"
    p = param_count(**model.dims())
    assert p.mlp == pytest.approx(8.5e9, rel=0.01)
    assert p.attention == pytest.approx(4.2e9, rel=0.01)
    assert p.embeddings == pytest.approx(0.33e9, rel=0.01)
    assert p.total == pytest.approx(13.0e9, rel=0.005)


def test_example_15_llama2_13b_130gb_of_state_and_42tb_of_checkpoints():
    m = MODELS["llama-2-13b"]
    params = param_count(**m.dims()).total
    mem = memory_per_chip(
        params=params, layers=m.layers, d_model=m.d_model, d_ff=m.d_ff, batch=16e6
    )
    assert mem.params + mem.optimizer == pytest.approx(130e9, rel=0.01)
    assert mem.activations == pytest.approx(42e12, rel=0.01)


def test_example_16_llama2_13b_3m_tokens_on_16x16x16():
    # The chapter's token-level model (no seq_len): 3M tokens, each strategy at its own split.
    values = split_keywords(
        dict(model=MODELS["llama-2-13b"], chip=V5P, batch=3e6, slice_shape=(16, 16, 16), mfu=0.4)
    )
    e = compare_strategies(*values)
    # Pure TP over 4096 chips cannot split 40 attention heads: refused, naming the TP degree.
    assert isinstance(e["tp"], InputError) and e["tp"].field == "y"
    # Pure DP: 130 GB > 96 GB.
    assert not e["dp"].fits and e["dp"].memory.total > 130e9
    # Pure FSDP fits (≈ 8 TB of 393 TB) but is comm-bound: it needs 850·4096 = 3.48M tokens.
    fsdp = e["fsdp"]
    assert fsdp.fits and fsdp.memory.total * 4096 == pytest.approx(8e12, rel=0.02)
    assert not fsdp.compute_bound and fsdp.bottleneck == "fsdp"
    assert fsdp.crossover_batch == pytest.approx(3.48e6, rel=0.01)
    # FSDP + TP: needs > 2550²/(2F) ≈ 235 tokens per chip, has 732; X_opt ≈ 1333 -> 1024 x 4.
    assert critical_tokens_per_chip(
        strategy="fsdp+tp", d_ff=13_824, mx=2, my=1, **ICI
    ) == pytest.approx(235, abs=0.5)
    assert e["fsdp+tp"].tokens_per_chip == pytest.approx(732, abs=0.5)
    opt = x_opt(batch=3e6, d_ff=13_824, chips=4096, mx=2, my=1)
    assert opt == pytest.approx(1333, abs=1)
    assert nearest_split(x_opt=opt, chips=4096) == (1024, 4)
    both = e["fsdp+tp"]
    assert (both.x, both.y) == (1024, 4) and both.compute_bound and both.fits
    assert both.step_time == pytest.approx(0.3, abs=0.015)


def test_a9_tp_compute_is_divided_by_y_in_both_passes():
    B, D, F, Y = 1e6, 8192, 30_000, 4
    t = layer_times(strategy="tp", batch=B, d_model=D, d_ff=F, y=Y, **HW)
    assert t.math[0] == pytest.approx(4 * B * D * F / (Y * V5P.flops))
    assert t.math[1] == pytest.approx(8 * B * D * F / (Y * V5P.flops))
