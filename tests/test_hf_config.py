"""A Hugging Face config.json as published (tests/data/hf holds the hub's files, unchanged but for
fields none of ours reads): each family reads into the model it describes (MODEL.md §D.4)."""

import json
from pathlib import Path

import pytest

from scaling_widgets.catalog import model_from_json
from scaling_widgets.cli import main
from scaling_widgets.cost.transformer.counts import param_count
from scaling_widgets.fields import VERSION
from scaling_widgets.presets import MODELS

HF = Path(__file__).with_name("data") / "hf"
SAME_AS_PRESET = {
    "llama-3-8b": "llama-3-8b",
    "mixtral-8x7b": "mixtral-8x7b",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "deepseek-v3": "deepseek-v3",
    "gemma-7b": "gemma-7b",
}


@pytest.mark.parametrize("name", SAME_AS_PRESET)
def test_a_config_reads_into_the_model_of_its_preset(name):
    model = model_from_json(HF / f"{name}.json")
    preset = MODELS[SAME_AS_PRESET[name]]
    fields = (
        "layers",
        "d_model",
        "d_ff",
        "heads",
        "kv_heads",
        "head_dim",
        "vocab",
        "gated",
        "tied_embeddings",
        "moe",
        "mla",
    )
    assert {f: getattr(model, f) for f in fields} == {f: getattr(preset, f) for f in fields}
    assert model.name.endswith("from config.json")


@pytest.mark.parametrize(("name", "billions"), [("mistral-7b", 7.24), ("qwen2-7b", 7.62)])
def test_dense_families_count_their_published_parameters(name, billions):
    # Qwen2's q/k/v biases (0.5M) are not counted: within a per mille.
    total = float(param_count(**model_from_json(HF / f"{name}.json").dims()).total)
    assert total / 1e9 == pytest.approx(billions, rel=0.002)


def test_qwen2_moe_counts_its_wide_shared_expert_in_expert_widths():
    config = json.loads((HF / "qwen3-30b-a3b.json").read_text())
    # Qwen1.5-MoE-A2.7B's experts
    config.update(
        model_type="qwen2_moe",
        num_experts=60,
        num_experts_per_tok=4,
        moe_intermediate_size=1408,
        shared_expert_intermediate_size=5632,
    )
    assert model_from_json(config).moe.shared == 4
    config["shared_expert_intermediate_size"] = 5000
    with pytest.raises(
        ValueError, match="shared_expert_intermediate_size 5000 is not a whole number of expert"
    ):
        model_from_json(config)


# Published parameter counts (model cards and papers); ours leaves out biases, norms and learned
# position embeddings, well under 1 % of each.
UNGATED = {
    "gpt2": 124.4e6,  # GPT-2 small, 124M
    "gpt-neox-20b": 20.6e9,  # Black et al. 2022: 20.6B
    "gpt-j-6b": 6.053e9,  # EleutherAI/gpt-j-6b: 6,053,381,344
    "opt-6.7b": 6.658e9,  # Zhang et al. 2022: 6.7B
    "falcon-7b": 6.92e9,  # tiiuae/falcon-7b: 7B (6.92B)
}


@pytest.mark.parametrize("name", UNGATED)
def test_families_without_a_gate_read_with_their_own_field_names(name):
    # GPT-2, GPT-J, GPT-NeoX, OPT and Falcon: one up-projection and one down; a gated read would
    # count GPT-NeoX 20B as 27.2B.
    model = model_from_json(HF / f"{name}.json")
    assert not model.gated
    assert param_count(**model.dims()).total == pytest.approx(UNGATED[name], rel=0.01)


def test_falcons_one_kv_head_and_gpt_js_default_width():
    falcon, gptj = model_from_json(HF / "falcon-7b.json"), model_from_json(HF / "gpt-j-6b.json")
    assert (falcon.kv_heads, falcon.head_dim) == (1, 64)  # multi_query: one KV head
    assert gptj.d_ff == 4 * 4096  # n_inner null: 4·D


def test_opt_350m_projected_embeddings_are_refused_by_name(tmp_path):
    # OPT-350m's config (facebook/opt-350m): embeddings of 512 projected to D = 1024, which a
    # count of D-wide embeddings would put at 353.5M against the published 331M.
    opt = json.loads((HF / "opt-6.7b.json").read_text())
    opt.update(hidden_size=1024, ffn_dim=4096, num_attention_heads=16, num_hidden_layers=24,
               word_embed_proj_dim=512)  # fmt: skip
    path = tmp_path / "opt-350m.json"
    path.write_text(json.dumps(opt))
    with pytest.raises(ValueError, match="word_embed_proj_dim 512 beside hidden_size 1024"):
        model_from_json(path)


def test_another_architecture_gets_one_line_naming_what_is_missing(capsys, tmp_path):
    t5 = tmp_path / "t5.json"
    t5.write_text(json.dumps({"model_type": "t5", "d_model": 512, "num_layers": 6}))
    with pytest.raises(
        ValueError,
        match="model_type 't5'\\) lacks num_hidden_layers, hidden_size, intermediate_size"
        ", num_attention_heads, vocab_size: the field names of LLaMA",
    ):
        model_from_json(t5)
    with pytest.raises(SystemExit) as exit:
        main(["estimate", "--model-file", str(t5), "--hardware", "tpu-v5p", "--batch", "4M"])
    err = capsys.readouterr().err
    assert (
        exit.value.code == 2
        and err.count("\n") == 1
        and "lacks num_hidden_layers" in err
        and "Traceback" not in err
    )


def test_the_cli_reads_a_config_and_reports_total_and_active_parameters(capsys):
    args = [
        "estimate",
        "--model-file",
        str(HF / "deepseek-v3.json"),
        "--hardware",
        "h100",
        "--batch",
        "16M",
    ]
    code = main([*args, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["params"] / 1e9 == pytest.approx(671, rel=0.001)
    assert data["params_active"] / 1e9 == pytest.approx(37.55, rel=0.001)
    main(args)
    assert "(671B params, 37.6B active; + 11.6B in 1 MTP module)" in capsys.readouterr().out


def test_the_panel_and_the_scenario_take_a_config_and_old_scenarios_still_load():
    import scaling_widgets as sw
    from scaling_widgets.widgets.scenario import Scenario

    panel = sw.explore(  # the defaults' own layout, no EP (given no strategy, the plan's first row)
        model=str(HF / "mixtral-8x7b.json"),
        hardware="h100",
        batch=16e6,
        seq_len=4096,
        strategy="fsdp+tp",
    )
    assert (
        panel.scenario.model.moe.experts == 8 and "12.9B active" in panel.model_picker._about.value
    )
    saved = json.loads(panel.scenario.to_json())
    assert saved["version"] == VERSION and saved["ep"] == 1 and saved["model"]["moe"]["top_k"] == 2
    # MODEL.md §D
    old = {k: v for k, v in saved.items() if k not in ("ep", "etp", "cp", "cp_kind", "stack")} | {
        "version": 1
    }
    again = Scenario.from_json(json.dumps(old))
    # CP as the sequences need; the experts over TP as the rest
    assert (again.ep, again.etp, again.cp, again.cp_kind) == (1, None, None, "ring")
    assert again.model == panel.scenario.model
