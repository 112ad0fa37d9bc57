"""A model written into a launch file comes back whole: its size, its experts and its latent
attention, for every preset written by its dimensions (as a model of a team's own is) into the
files that can carry them, Megatron-LM's flags and MaxText's base.yml keys."""

from __future__ import annotations

import dataclasses

import pytest

from scaling_widgets import catalog
from scaling_widgets.cost import plan
from scaling_widgets.cost.transformer.counts import param_count
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS


@pytest.mark.parametrize("framework", ["megatron", "maxtext"])
@pytest.mark.parametrize("preset", sorted(MODELS))
def test_a_model_of_ones_own_reads_back_whole(preset, framework):
    own = dataclasses.replace(MODELS[preset], name="ours")  # no preset's name to fall back on
    e = plan(model=own, chip=HARDWARE["h100"], batch=2**22, seq_len=4096, chips=512).estimate(0)
    text = write_config(framework, e)
    got, _ = read_config(text, chip=e.chip, chips=e.chips, pods=e.pods, framework=framework)
    back = catalog.model(got["model"])
    size = param_count(**own.dims())
    assert float(param_count(**back.dims()).total) == pytest.approx(float(size.total))
    assert float(param_count(**back.dims()).active) == pytest.approx(float(size.active))
    assert (back.moe is None) == (own.moe is None) and back.mla == own.mla
    assert (back.gated, back.tied_embeddings, back.mtp_layers) == (
        own.gated, own.tied_embeddings, own.mtp_layers
    )  # fmt: skip
    if own.moe is not None:
        said = "node-limited routing" in text  # what MaxText cannot say is said in the file
        expected = dataclasses.replace(own.moe, routed_nodes=None) if said else own.moe
        assert back.moe == expected
