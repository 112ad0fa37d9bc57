"""Every model file MaxText ships (data/maxtext_models.json, read from its configs/models/ at a
pinned commit) loads as a model, is as large as its name says, and a config names it alone."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from scaling_widgets import catalog
from scaling_widgets.cost.transformer.counts import param_count
from scaling_widgets.launch import read_config
from scaling_widgets.presets import HARDWARE, MODELS

SHIPPED = json.loads(
    resources.files("scaling_widgets.data").joinpath("maxtext_models.json").read_text()
)
MODELS_SHIPPED = SHIPPED["models"]
# names whose size counts something else, as each entry's notes say: Gemma's names leave the
# embeddings out, gpt-oss counts active parameters without the input embedding
NAMED_OTHERWISE = {"gemma-2b", "gemma-7b", "gemma2-2b", "gpt3-52k", "qwen3-vl-2b"}
SIZED = {
    name: float(m.group(1)) * 1e9
    for name in MODELS_SHIPPED
    if (m := re.search(r"-(\d+(?:\.\d+)?)b(?:-|$)", name)) and name not in NAMED_OTHERWISE
}


def test_the_model_files_are_pinned_to_a_commit_and_each_loads():
    assert len(SHIPPED["commit"]) == 40 and len(MODELS_SHIPPED) >= 60
    for entry in MODELS_SHIPPED.values():
        assert entry["file"].startswith("src/maxtext/configs/models/")
        catalog.model_from_json(entry["model"])


@pytest.mark.parametrize("name", sorted(SIZED))
def test_a_model_is_as_large_as_its_name_says(name):
    count = param_count(**catalog.model_from_json(MODELS_SHIPPED[name]["model"]).dims())
    active = re.search(r"-a(\d+(?:\.\d+)?)b", name)
    by_active = re.search(r"-\d+b-\d+e$", name) is not None  # llama4-17b-16e: 17B active
    assert float(count.active if by_active else count.total) == pytest.approx(SIZED[name], rel=0.2)
    if active:
        assert float(count.active) == pytest.approx(float(active.group(1)) * 1e9, rel=0.25)


@pytest.mark.parametrize("preset, theirs", [("llama-2-70b", "llama2-70b"),
                                            ("llama-3-405b", "llama3.1-405b"),
                                            ("mixtral-8x7b", "mixtral-8x7b")])  # fmt: skip
def test_the_models_we_have_presets_of_match_them(preset, theirs):
    assert MODELS[preset].dims() == catalog.model_from_json(MODELS_SHIPPED[theirs]["model"]).dims()


def test_a_config_naming_a_model_maxtext_ships_reads_it():
    text = "base_config: base.yml\nmodel_name: gemma2-9b\nper_device_batch_size: 1\n"
    fields, _ = read_config(text, chip=HARDWARE["tpu-v6e"], chips=256, framework="maxtext")
    assert fields["model"].name == "MaxText gemma2-9b"
    assert float(param_count(**fields["model"].dims()).total) == pytest.approx(9.24e9, rel=0.01)
