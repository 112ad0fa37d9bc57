"""estimate() as a whole: pods, pipeline stages, exposed communication and the model's flags."""

import json

import pytest

from scaling_widgets.cost import critical_tokens_per_chip, estimate, param_count, pick, x_opt
from scaling_widgets.presets import HARDWARE, MODELS
from scaling_widgets.text import report

V5P, L13 = HARDWARE["tpu-v5p"], MODELS["llama-2-13b"]
CUBE = (16, 16, 16)


def test_a_second_pod_halves_the_compute_time_of_a_step():
    one = estimate(model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="fsdp", mfu=0.4)
    two = estimate(
        model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="fsdp", pods=2, mfu=0.4
    )
    assert one.compute_bound and two.chips == 2 * one.chips
    assert two.step_time == pytest.approx(one.step_time / 2)


def test_the_pipeline_bubble_stretches_the_step():
    flat = estimate(model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="fsdp", mfu=0.4)
    piped = estimate(
        model=L13,
        chip=V5P,
        batch=8e6,
        slice_shape=CUBE,
        strategy="fsdp",
        z=4,
        microbatches=16,
        mfu=0.4,
    )
    assert piped.bubble == pytest.approx(3 / 16)
    assert piped.step_time == pytest.approx(flat.step_time * (1 + 3 / 16))


def test_exposed_communication_sets_the_step_when_it_is_longer():
    # FSDP at 24 tokens per chip, far below its 850 (pure TP over 4096 chips, the old example,
    # cannot split the 40 attention heads).
    e = estimate(model=L13, chip=V5P, batch=1e5, slice_shape=CUBE, strategy="fsdp", mfu=0.4)
    # the whole model at full utilisation
    ideal = 6 * 1e5 * float(e.params.total) / (4096 * V5P.flops)
    # The step moves what the layer moves per compute, over the whole model (gated MLP, attention,
    # embeddings).
    exposed = float(e.layer.t_comms / e.layer.t_math) * ideal
    assert exposed > ideal / 0.4 and float(e.comm_time) == pytest.approx(exposed)
    assert e.step_time == pytest.approx(exposed)
    # Not just the chapter's two-matrix MLP layers: a gated model moves 3.0/2 of that and attention
    # more.
    assert exposed > 1.5 * L13.layers * float(e.layer.t_comms)


def test_pipeline_stages_shard_the_weights_and_scale_the_per_chip_threshold():
    flat = estimate(model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="fsdp", mfu=0.4)
    piped = estimate(model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="fsdp", z=4)
    assert piped.memory.params == pytest.approx(flat.memory.params)  # X·Z = 4096 either way
    dp_flat = estimate(model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="dp")
    dp_piped = estimate(model=L13, chip=V5P, batch=8e6, slice_shape=CUBE, strategy="dp", z=4)
    # replicated over X, split over Z
    assert dp_piped.memory.params == pytest.approx(dp_flat.memory.params / 4)
    # The threshold per chip and the time model agree: compute-bound from tokens/chip = critical.
    assert piped.crossover_batch / piped.chips == pytest.approx(piped.critical_tokens_per_chip)
    assert piped.critical_tokens_per_chip == pytest.approx(
        critical_tokens_per_chip(strategy="fsdp", flops=V5P.flops, ici_bw=V5P.ici_bw, d_ff=1, mx=3)
        / 4
    )


def test_x_opt_uses_the_batch_of_one_pod():
    e = estimate(model=L13, chip=V5P, batch=6e6, slice_shape=CUBE, pods=2, mfu=0.4)
    assert e.x_opt == pytest.approx(x_opt(batch=3e6, d_ff=L13.d_ff, chips=4096, mx=e.mx, my=e.my))


def test_gated_and_tied_change_the_parameter_count():
    dims = dict(layers=2, d_model=64, d_ff=256, heads=2, kv_heads=2, head_dim=32, vocab=1000)
    gated_untied = param_count(**dims)
    ungated_tied = param_count(**dims, gated=False, tied_embeddings=True)
    assert gated_untied.mlp == 3 * 2 * 64 * 256 and ungated_tied.mlp == 2 * 2 * 64 * 256
    assert gated_untied.embeddings == 2 * 1000 * 64 and ungated_tied.embeddings == 1000 * 64


def test_ungated_models_checkpoint_one_hidden_activation_per_layer():
    gpt3 = MODELS["gpt-3-175b"]
    e = estimate(model=gpt3, chip=V5P, batch=1e6, strategy="fsdp")
    assert e.memory.activations * e.chips == pytest.approx(
        2 * gpt3.layers * 1e6 * (gpt3.d_model + gpt3.d_ff)
    )


def test_strings_are_not_presets_here():
    with pytest.raises(ValueError, match="model must be a Model"):
        estimate(model="llama-2-13b", chip=V5P, batch=1e6)


def test_a_layout_picked_from_an_array_of_knobs_reads_like_a_single_one():
    knobs = dict(
        x=[512, 128],
        y=8,
        z=[1, 4],
        zero=[3, 1],
        remat=["checkpoints", "full"],
        schedule=["1f1b", "interleaved"],
        virtual_stages=[1, 2],
    )
    # 16M tokens of 4096: 3906 sequences, enough for 128 replicas x 16 microbatches (4M of 8192 were
    # not).
    many = estimate(
        model=MODELS["llama-3-70b"], chip=V5P, batch=16e6, seq_len=4096, slice_shape=CUBE, **knobs
    )
    one = estimate(
        model=MODELS["llama-3-70b"],
        chip=V5P,
        batch=16e6,
        seq_len=4096,
        slice_shape=CUBE,
        **{k: v[1] if isinstance(v, list) else v for k, v in knobs.items()},
    )
    assert json.dumps(report.record(pick(many, 1))) == json.dumps(report.record(one))


def test_the_default_split_fits_where_one_can():
    # LLaMA-2 70B at 4M tokens on v5e 16x16: 256 x 1 holds too much at any accumulation; TP
    # with more microbatches fits. The split chosen is one that fits.
    from scaling_widgets import estimate as with_cli_names

    e = with_cli_names(model="llama-2-70b", hardware="tpu-v5e", mesh="16x16", batch="4M")
    assert bool(e.fits) and int(e.y) > 1
    over = with_cli_names(model="llama-2-70b", hardware="tpu-v5e", mesh="16x16", batch="4M",
                          tp=1)  # fmt: skip
    assert not bool(over.fits)
