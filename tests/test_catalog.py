"""Presets by name, and a user's own model or chip from JSON."""

import json

import pytest

from scaling_widgets import catalog
from scaling_widgets.cost import estimate
from scaling_widgets.presets import HARDWARE, MODELS

TINY = {
    "name": "tiny",
    "layers": 2,
    "d_model": 64,
    "d_ff": 256,
    "heads": 2,
    "kv_heads": 1,
    "head_dim": 32,
    "vocab": 1000,
    "gated": True,
    "tied_embeddings": False,
}


def test_every_preset_is_reachable_by_name():
    for name in HARDWARE:
        assert catalog.hardware(name) is HARDWARE[name]
    for name in MODELS:
        assert catalog.model(name) is MODELS[name]


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown hardware 'tpu-v9'; known: tpu-v4p, tpu-v5e"):
        catalog.hardware("tpu-v9")


def test_model_from_a_json_file_is_usable(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    model = catalog.model_from_json(path)
    assert model.kv_heads == 1
    assert estimate(model=model, chip=HARDWARE["tpu-v5e"], batch=1e5).fits


@pytest.mark.parametrize(
    "change, message",
    [
        ({"depth": 3}, "unknown model key 'depth'"),
        ({"d_ff": None}, "model key 'd_ff' is missing"),
        ({"layers": 2.5}, "Model layers must be a whole number from 1 to 2\\*\\*31; got 2.5"),
        ({"gated": "yes"}, "Model gated must be true or false; got 'yes'"),
    ],
)
def test_bad_model_json_names_the_key(change, message):
    data = {**TINY, **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        catalog.model_from_json(data)


def test_chip_from_json_text():
    text = json.dumps(
        {"flops": 1e15, "hbm_bytes": 8e10, "hbm_bw": 3e12, "ici_bw": 4.5e11, "pod_shape": [8, 8], "dcn_bw": 5e10}
    )
    chip = catalog.chip_from_json(text)
    assert chip.pod_shape == (8, 8) and chip.name == "custom chip"


def test_bad_json_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{layers: 2")
    with pytest.raises(ValueError, match="is not valid JSON"):
        catalog.model_from_json(path)
    with pytest.raises(ValueError, match="cannot read"):
        catalog.model_from_json(tmp_path / "missing.json")
