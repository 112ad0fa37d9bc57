"""Recompute as frameworks name it (docs/MODEL.md §E.4): what each named policy keeps, per token,
counted by hand from the framework's source, and how a name that no framework uses is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import estimate, fields
from scaling_widgets.cost import InputError, evaluate
from scaling_widgets.cost.stacks import REGISTRY
from scaling_widgets.cost.transformer.kept import kept_bytes, tensor_bytes
from scaling_widgets.cost.transformer.recompute import is_policy, offered, policy, rerun_of
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS

CONFIGS = Path(__file__).parents[1] / "data" / "configs"
L70 = MODELS["llama-2-70b"]  # D 8,192, 64 query heads and 8 KV heads of 128, F 28,672, gated
SIZES = tensor_bytes(L70, 4096, 1, False, flash=True)  # bf16, one chip, no TP
D, Q, KV, F = 8192, 64 * 128, 8 * 128, 28_672


def kept(name: str, chunk_layers=1.0) -> float:
    return float(kept_bytes(policy(name), SIZES, chunk_layers=chunk_layers))


def test_maxtexts_save_dot_except_mlpwi_keeps_the_input_qkv_and_the_output_projection():
    # decoders.py saves query_proj, key_proj, value_proj, out_proj and mlpwo; the backward never
    # reads mlpwo, and the scanned layer's input is kept anyway
    assert kept("save_dot_except_mlpwi") == 2 * (D + Q + 2 * KV + D)
    assert kept("save_dot_except_mlp") == kept("save_dot_except_mlpwi")
    # minimal adds the MLP's gate and up-projection; with_context the attention's output
    assert kept("minimal") == 2 * (D + Q + 2 * KV + D + 2 * F)
    assert kept("minimal_with_context") == kept("minimal") + 2 * Q
    # offloaded: Q, K and V live in host memory, HBM keeps the input
    assert kept("qkv_proj_offloaded") == kept("full") == 2 * D


def test_what_a_maxtext_policy_runs_again_is_what_its_backward_needs():
    assert policy("minimal").reruns.core == 1 and policy("minimal").reruns.mlp == 0
    assert policy("save_dot_except_mlpwi").reruns.mlp == pytest.approx(2 / 3)  # gate and up
    assert policy("save_dot_with_context_except_mlp").reruns.core == 0  # the output is kept
    assert policy("save_qkv_proj").reruns.dense == 0.5  # the output projection again


def test_megatrons_modules_uniform_and_block():
    none = kept("none")
    assert kept("selective:core_attn") == none  # flash attention keeps no scores anyway
    assert kept("selective:core_attn,mlp") == none - 2 * 3 * F  # gate, up, activation
    assert kept("selective:layernorm") == none  # TransformerEngine fuses the norms into linears
    assert kept("full:uniform:2") == 2 * D / 2  # one input for each two layers
    assert policy("full:uniform:2").recomputed == 2
    # block: the first 4 of a chunk's 10 layers keep their input, the other 6 everything
    assert kept("full:block:4", chunk_layers=10) == pytest.approx((4 * 2 * D + 6 * none) / 10)


def test_torchtitans_every_nth_layer():
    assert kept("selective:2") == pytest.approx((2 * D + kept("none")) / 2)
    assert kept("selective:op") == 2 * (2 * D + 2 * Q + KV + F)


@pytest.mark.parametrize(
    "name, nearest",
    [("save_dot_excep", "save_dot_except_mlp"), ("ful", "full"), ("selective:core_atn", None)],
)
def test_a_name_no_framework_uses_is_refused_by_name(name, nearest):
    with pytest.raises(InputError, match="^remat must be one of") as err:
        estimate(model="llama-2-7b", hardware="h100", chips=8, batch="1M", remat=name)
    assert f"got {name!r}" in str(err.value)
    if nearest:
        assert f"(the nearest: {nearest!r})" in str(err.value)
    assert not is_policy(name)


def test_each_stack_offers_its_own_names_first_the_generic_ones_too():
    assert offered("maxtext")[:4] == ("checkpoints", "none", "selective", "full")
    assert "save_dot_except_mlpwi" in offered("maxtext")
    assert "selective:core_attn,mlp" in offered("megatron-lm")
    assert all(is_policy(n) for stack in REGISTRY for n in offered(stack))


def test_maxtexts_custom_policy_reads_and_writes_back_by_its_own_names():
    text = (
        "base_config: base.yml\nmodel_name: llama2-7b\nremat_policy: custom\n"
        "query_proj: device\nkey_proj: offload\nmlpwi_0: device\n"
    )
    got, _ = read_config(text, chip=HARDWARE["tpu-v5p"], chips=64, framework="maxtext")
    assert got["remat"] == "custom:decoder_layer_input,query_proj,mlpwi_0"
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    written = write_config("maxtext", evaluate(*fields.values(state)))
    again, _ = read_config(written, chip=HARDWARE["tpu-v5p"], chips=64, framework="maxtext")
    assert again["remat"] == got["remat"]


NAMES = sorted({n for stack in REGISTRY for n in offered(stack)})


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(NAMES),
    tp=st.sampled_from([1, 2, 8]),
    sp=st.booleans(),
    chunk=st.integers(1, 40),
)
def test_every_offered_policy_keeps_no_more_than_nothing_recomputed(name, tp, sp, chunk):
    sizes = tensor_bytes(L70, 4096, tp, sp, flash=True)
    value = float(kept_bytes(policy(name), sizes, chunk_layers=chunk))
    assert np.isfinite(value) and 0 < value <= float(kept_bytes(policy("none"), sizes)) + 1e-9


def test_megatrons_llama3_8b_fp8_example_by_hand():
    # examples/llama/train_llama3_8b_h100_fp8.sh: DP 8 with the distributed optimizer, one
    # sequence of 8,192 at a time, no recompute, --fp8-param-gather, --grad-reduce-in-bf16
    path = CONFIGS / "megatron_llama3_8b_h100_fp8.sh"
    got, _ = read_config(str(path), chip=HARDWARE["h100"])
    assert (got["grad_dtype"], got["fp8_params"], got["matmul_dtype"]) == ("bf16", True, "fp8")
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    peak = evaluate(*fields.values(state)).peak
    psi = 8.029995008e9
    # a byte a weight, bf16 gradients, fp32 master and moments over the 8 ranks
    assert (float(peak.weights), float(peak.grads)) == pytest.approx((psi, 2 * psi))
    assert float(peak.optimizer) == pytest.approx(12 * psi / 8)
    # a layer keeps, per token: the input and residual, Q, K, V and the MLP's gate, up in bf16;
    # the linear layers' inputs (the norms, the attention's output, the activation) in fp8
    bf16 = 2 * (2 * 4096 + 4096 + 2 * 1024 + 2 * 14_336)
    fp8 = 4096 + 4096 + 4096 + 14_336
    assert float(peak.activations) == pytest.approx(32 * 8192 * (bf16 + fp8))


def test_megatrons_precision_aware_optimizer_keeps_bf16_moments(tmp_path):
    # --use-precision-aware-optimizer with bf16 moments: two bytes each, with the fp32 master
    text = (CONFIGS / "megatron_llama3_8b_h100_fp8.sh").read_text()
    script = tmp_path / "train.sh"
    flags = "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16"
    script.write_text(text.replace("--grad-reduce-in-bf16", f"--grad-reduce-in-bf16 {flags}"))
    got, _ = read_config(str(script), chip=HARDWARE["h100"])
    assert got["moment_dtype"] == "bf16"
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    peak = evaluate(*fields.values(state)).peak
    assert float(peak.optimizer) == pytest.approx((4 + 2 + 2) * 8.029995008e9 / 8)
    script.write_text(
        text.replace(
            "--grad-reduce-in-bf16",
            "--grad-reduce-in-bf16 --use-precision-aware-optimizer --exp-avg-dtype bf16",
        )
    )
    with pytest.raises(ValueError, match="--exp-avg-sq-dtype must be as --exp-avg-dtype"):
        read_config(str(script), chip=HARDWARE["h100"])


def test_megatrons_mlp_module_recomputes_dense_layers_and_its_moe_modules_moe_layers():
    # transformer_layer.py: "mlp" only `if not self.is_moe_layer`; the MoE's modules on MoE layers
    moe = MODELS["mixtral-8x7b"]
    sizes = tensor_bytes(moe, 4096, 1, False, flash=True)
    nothing = float(kept_bytes(policy("none", moe=True), sizes))
    assert float(kept_bytes(policy("selective:mlp", moe=True), sizes)) == nothing
    assert float(kept_bytes(policy("selective:moe_act", moe=True), sizes)) < nothing
    dense = tensor_bytes(L70, 4096, 1, False, flash=True)
    assert float(kept_bytes(policy("selective:moe_act"), dense)) == float(
        kept_bytes(policy("none"), dense)
    )
    assert rerun_of("selective:mlp", moe=True).mlp == 0 and rerun_of("selective:mlp").mlp == 1
