"""Full FLOP accounting, MFU and HFU, and calibration from a measured step (MODEL.md §B.1).

Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", sec. 5.1: a GPT model of L layers, hidden h, sequence s and vocabulary V needs
72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)) FLOPs an iteration of B sequences, and 96·B·s·L·h²·(...) with
activation recomputation: a fourth forward pass, HFU/MFU = 4/3 for the dense part.
"""

import pytest

from scaling_widgets.cost import estimate, flops_per_token, param_count, recompute_flops_per_token
from scaling_widgets.presets import HARDWARE, MODELS

GPT3, V5P = MODELS["gpt-3-175b"], HARDWARE["tpu-v5p"]


def test_model_flops_per_token_match_megatron_for_gpt3():
    L, h, V, s = GPT3.layers, GPT3.d_model, GPT3.vocab, 2048
    psi = param_count(**GPT3.dims()).total
    ours = flops_per_token(
        params=psi, layers=L, seq_len=s, heads=GPT3.heads, head_dim=GPT3.head_dim, attention=True
    )
    megatron = 72 * L * h**2 * (1 + s / (6 * h) + V / (12 * h * L))
    assert ours == pytest.approx(megatron, rel=1e-9)


def test_full_recompute_adds_a_fourth_forward_pass():
    psi = 13e9
    extra = recompute_flops_per_token(
        params=psi, layers=40, seq_len=1, heads=1, head_dim=1, remat="full"
    )
    assert (6 * psi + extra) / (6 * psi) == pytest.approx(4 / 3, rel=1e-6)
    e = estimate(
        model=MODELS["llama-2-13b"],
        chip=V5P,
        batch=3e6,
        slice_shape=(16, 16, 16),
        seq_len=4096,
        remat="full",
        mfu=0.45,
    )
    assert e.hfu / e.mfu == pytest.approx(4 / 3, rel=1e-3)


def test_a_measured_step_time_gives_back_the_mfu_that_predicts_it():
    # 4096-token sequences: 3M tokens of 32K sequences (91.6) cannot give 512 data replicas one
    # each.
    common = dict(
        model=MODELS["llama-2-13b"],
        chip=V5P,
        batch=3e6,
        slice_shape=(16, 16, 16),
        seq_len=4096,
        attention_flops=True,
    )
    predicted = estimate(mfu=0.37, **common)
    calibrated = estimate(measured_step_time=float(predicted.step_time), **common)
    assert calibrated.calibrated and calibrated.mfu == pytest.approx(0.37)
    assert calibrated.step_time == pytest.approx(predicted.step_time)


def test_attention_flops_need_the_sequence_length():
    with pytest.raises(ValueError, match="seq_len must be given to count attention FLOPs") as err:
        estimate(model=GPT3, chip=V5P, batch=1e6, attention_flops=True)
    assert err.value.field == "seq_len"
