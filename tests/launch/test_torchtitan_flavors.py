"""Every model flavor torchtitan ships (data/torchtitan_flavors.json, read from its source at two
commits) loads as a model, is as large as its name says, and a job names it by flavor alone."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from scaling_widgets import catalog
from scaling_widgets.cost import InputError
from scaling_widgets.cost.transformer.counts import param_count
from scaling_widgets.launch import read_config
from scaling_widgets.presets import HARDWARE, MODELS

DATA = Path(__file__).parent.parent / "data"
FLAVORS = json.loads(
    resources.files("scaling_widgets.data").joinpath("torchtitan_flavors.json").read_text()
)["flavors"]
SIZED = [f for f in FLAVORS if re.match(r"^\d+(\.\d+)?B", f["flavor"], re.IGNORECASE)]


def test_each_flavor_cites_torchtitans_source_at_a_commit():
    assert len(FLAVORS) >= 30
    for flavor in FLAVORS:
        assert flavor["source"] and all(len(c) == 40 for c in flavor["commits"])


@pytest.mark.parametrize("flavor", SIZED, ids=lambda f: f"{f['family']}-{f['flavor']}")
def test_a_flavor_is_as_large_as_its_name_says(flavor):
    """Its name's size, rounded as names round (Llama 3.2 1B holds 1.24B): the total, or the
    active parameters of a name that counts the experts beside them (llama4's 17bx16e)."""
    named = float(re.match(r"^(\d+(?:\.\d+)?)B", flavor["flavor"], re.IGNORECASE).group(1)) * 1e9
    count = param_count(**catalog.model_from_json(flavor["model"]).dims())
    by_active = re.match(r"^\d+bx\d+e", flavor["flavor"]) is not None
    assert float(count.active if by_active else count.total) == pytest.approx(named, rel=0.25)


@pytest.mark.parametrize(
    "family, flavor, preset",
    [("llama3", "8B", "llama-3-8b"), ("llama3", "70B", "llama-3-70b"),
     ("llama3", "405B", "llama-3-405b"), ("qwen3", "30B-A3B", "qwen3-30b-a3b")],
)  # fmt: skip
def test_the_flavors_we_have_presets_of_match_them(family, flavor, preset):
    entry = next(f for f in FLAVORS if (f["family"], f["flavor"]) == (family, flavor))
    ours, theirs = MODELS[preset], catalog.model_from_json(entry["model"])
    assert ours.dims() == theirs.dims()


def test_a_job_with_a_flavor_we_have_no_preset_of_reads_torchtitans_own():
    toml = '[model]\nname = "qwen3"\nflavor = "14B"\n[training]\nlocal_batch_size = 2\n'
    fields, _ = read_config(toml, chip=HARDWARE["h100"], chips=8, framework="torchtitan")
    assert fields["model"].name == "torchtitan qwen3 14B"
    assert float(param_count(**fields["model"].dims()).total) == pytest.approx(14.8e9, rel=0.01)


def test_a_flavor_of_ones_own_is_read_from_the_hf_config_beside_the_job(tmp_path):
    assets = tmp_path / "assets" / "hf" / "mine"
    assets.mkdir(parents=True)
    config = json.loads((DATA / "hf" / "mistral-7b.json").read_text())
    (assets / "config.json").write_text(json.dumps(config))
    job = tmp_path / "train.toml"
    job.write_text(
        '[model]\nname = "llama3"\nflavor = "mine"\nhf_assets_path = "./assets/hf/mine"\n'
    )
    fields, _ = read_config(str(job), chip=HARDWARE["h100"], chips=8)
    assert fields["model"].d_ff == config["intermediate_size"]
    # without it, the refusal names the flavors torchtitan ships
    (assets / "config.json").unlink()
    with pytest.raises(InputError, match="model.flavor must be a flavor torchtitan ships"):
        read_config(str(job), chip=HARDWARE["h100"], chips=8)
