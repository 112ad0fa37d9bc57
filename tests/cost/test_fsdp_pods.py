"""FSDP across pods (MODEL.md §B.9): ZeRO-3 over X·F chips of F pods, gathered over DCN, the
P/F groups of pods replicas; as MaxText's dcn_fsdp_parallelism runs it."""

import pytest

from scaling_widgets import fields
from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate, plan
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS

# LLaMA-2 13B on two v5e-16 slices (16 GB chips): its 208 GB of weights, gradients and Adam
# fill one slice's 16 chips to their HBM; sharded over both slices' 32 they fit.
TWO_SLICES = dict(
    model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5e"], slice_shape=(4, 4), pods=2,
    batch=2**16, seq_len=2048,
)  # fmt: skip


def across(fsdp_pods, **kw):
    return estimate(**{**TWO_SLICES, "strategy": "fsdp", "remat": "full", **kw},
                    fsdp_pods=fsdp_pods)  # fmt: skip


def test_sharding_across_pods_halves_the_states_and_keeps_the_activations():
    one, two = across(1), across(2)
    for part in ("weights", "grads", "optimizer"):
        assert float(getattr(two.peak, part)) == pytest.approx(float(getattr(one.peak, part)) / 2)
    assert float(two.peak.activations) == pytest.approx(float(one.peak.activations))
    assert not one.fits and two.fits


def test_the_layers_weights_cross_the_data_center_network_both_passes():
    one, two = across(1), across(2)
    assert float(one.layer.dcn[0]) == 0.0  # replicas: only the backward's AllReduce
    chip, model = HARDWARE["tpu-v5e"], MODELS["llama-2-13b"]
    X, W = 16, chip.dcn_bw
    # each chip receives its 1/X of the layer's 4·D·F bytes forward, twice that backward
    forward = 4 * model.d_model * model.active_width / X / W
    assert float(two.layer.dcn[0]) == pytest.approx(forward)
    assert float(two.layer.dcn[1]) == pytest.approx(2 * forward)  # no replicas left to reduce
    assert float(two.step_breakdown["dcn_exposed"]) == 0.0  # no reduction across replicas
    assert float(one.step_breakdown["dcn_exposed"]) > 0.0
    assert float(two.step_breakdown["fsdp_exposed"]) > float(one.step_breakdown["fsdp_exposed"])


def test_pods_that_do_not_divide_or_a_stage_below_3_are_refused_by_name():
    with pytest.raises(ValueError, match="fsdp_pods must be a count of pods dividing the 2 pods"):
        across(3)
    with pytest.raises(ValueError, match="fsdp_pods must be 1 unless the ZeRO stage is 3"):
        across(2, zero=1)


def test_the_planner_spans_the_pods_where_one_pod_cannot_hold_the_model():
    ranked = plan(**TWO_SLICES)
    best = ranked.values(0)[2]
    # 32 sequences a step: FSDP's gathers over DCN would take longer than the matmuls, a
    # pipeline across the two slices sends only activations between them (MODEL.md §B.10)
    assert best.pp_pods == 2 and ranked.estimate(0).fits
    sharded = [r for r in range(len(ranked)) if ranked.layout(r)["fsdp_pods"] == 2]
    assert sharded and ranked.layout(sharded[0])["zero"] == 3
    assert ranked.estimate(sharded[0]).fits


def test_maxtext_reads_and_writes_fsdp_across_slices():
    e = across(2)
    text = write_config("maxtext", e)
    assert "dcn_fsdp_parallelism: 2" in text and "dcn_data_parallelism: 1" in text
    got, _ = read_config(text, chip=e.chip, chips=e.chips, pods=2, framework="maxtext")
    assert got["fsdp_pods"] == 2 and got["pods"] == 2 and got["zero"] == 3


def test_the_command_line_takes_and_refuses_the_flag(capsys):
    args = ["estimate", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--mesh", "4x4",
            "--pods", "2", "--batch", "64K", "--seq-len", "2k", "--strategy", "fsdp",
            "--remat", "full"]  # fmt: skip
    assert main([*args, "--fsdp-pods", "2"]) == 0
    assert "FSDP across 2 pods over DCN" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main([*args, "--fsdp-pods", "3"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--fsdp-pods" in err and "got 3" in err


def test_maxtexts_llama_405b_over_two_v6e_slices_reads_and_is_not_called_out_of_memory():
    # benchmarks/maxtext_trillium_model_configs.py at AI-Hypercomputer/maxtext@e591f30,
    # llama3_1_405b_8192_pure_fsdp_ici ("Config only runs on v6e-256"): its tuning parameters as
    # a train command's overrides, on two slices
    text = (
        "python3 -m MaxText.train src/maxtext/configs/base.yml model_name=llama3.1-405b"
        " per_device_batch_size=1 ici_fsdp_parallelism=256 dcn_fsdp_parallelism=2"
        " remat_policy=custom decoder_layer_input=offload max_target_length=8192"
        " attention=flash num_slices=2"
    )
    got, read = read_config(text, chip=HARDWARE["tpu-v6e"], chips=512, pods=2, framework="maxtext")
    assert got["fsdp_pods"] == 2 and got["pods"] == 2 and got["x"] == 256 and got["zero"] == 3
    assert any("offloaded" in note for note in read.notes)
    state = fields.checked({**fields.defaults(), **got, "hardware": "tpu-v6e"}, tuple(got))
    e = evaluate(*fields.values(state))
    assert str(e.verdict) in ("fits", "tight")
