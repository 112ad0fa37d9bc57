"""Writing a layout as a launch file and reading it back gives the same layout, for every plan row
and for valid scenarios drawn at random; a written file parses, and holds only keys its
framework's schema has."""

import dataclasses
import tomllib

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings

from scaling_widgets import fields
from scaling_widgets.cost import evaluate, plan
from scaling_widgets.launch import FORMATS, degrees_of, read_config, write_config
from scaling_widgets.launch.formats.megatron import PROGRAM, flags
from scaling_widgets.launch.keys import flat, schema
from scaling_widgets.launch.shell import launch_args
from scaling_widgets.presets import HARDWARE, MODELS

from ..widgets.test_one_answer import scenario_fields, valid


def read_back(framework: str, e):
    """The file written for ``e``, read on the same chips, evaluated; and what it could not say."""
    text = write_config(framework, e)
    got, _ = read_config(text, chip=e.chip, chips=e.chips, pods=e.pods, framework=framework)
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    cannot = [line for line in text.splitlines() if line.startswith("# Cannot express")]
    return evaluate(*fields.values(state)), cannot


def same_layout(a, b) -> None:
    """The degrees the frameworks count, whatever the stack (each file names its own)."""
    keep = ("compile", "compile_loss")  # torch.compile is a stack's switch: Megatron-LM has none
    da, db = (dataclasses.replace(degrees_of(e), **{k: None for k in keep}) for e in (a, b))
    assert da == db


@pytest.mark.parametrize(
    "model, hardware, where, batch, seq_len",
    [
        ("llama-3-70b", "h100", {"chips": 256}, 2**22, 8192),
        ("mixtral-8x7b", "h100", {"chips": 64}, 2**21, 4096),
        ("llama-2-70b", "tpu-v5p", {"slice_shape": (8, 8, 8)}, 2**22, 4096),
    ],
)
def test_every_plan_row_reads_back_to_itself(model, hardware, where, batch, seq_len):
    ranked = plan(model=MODELS[model], chip=HARDWARE[hardware], batch=batch, seq_len=seq_len,
                  **where)  # fmt: skip
    checked = 0
    for rank in range(min(40, len(ranked))):  # the best rows, past those no file can say
        row = ranked.estimate(rank)
        for framework in FORMATS:
            back, cannot = read_back(framework, row)
            if not cannot:  # what a file cannot say comes back as what it wrote instead
                same_layout(row, back)
                checked += 1
    assert checked > 0  # some row every framework can say whole


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenario_fields())
def test_a_valid_scenario_reads_back_to_itself(drawn):
    assume(drawn["hardware"] == "h100")
    drawn = valid(drawn)
    state = fields.checked({**fields.scenario_start(), **drawn}, tuple(drawn))
    e = evaluate(*fields.values(state))
    try:
        degrees_of(e)
    except ValueError:  # microbatches of part sequences: no framework runs those
        assume(False)
    for framework in FORMATS:
        back, cannot = read_back(framework, e)
        if not cannot:
            same_layout(e, back)


def test_a_written_file_parses_and_uses_only_its_frameworks_keys():
    ranked = plan(model=MODELS["mixtral-8x7b"], chip=HARDWARE["h100"], chips=64, batch=2**21,
                  seq_len=4096)  # fmt: skip
    e = ranked.estimate(0)
    toml = tomllib.loads(write_config("torchtitan", e))
    assert set(flat(toml)) <= schema("torchtitan")
    before, after = launch_args(write_config("megatron", e), PROGRAM)
    assert before[0] == "torchrun" and set(flags(after)) <= schema("megatron")
    yml = yaml.safe_load(write_config("maxtext", e))
    assert yml.pop("base_config") == "base.yml" and set(yml) <= schema("maxtext")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenario_fields())
def test_every_format_keeps_a_layout_it_read(drawn):
    """read → write → read, for every registered format: a layout read from a file of the format
    comes back whole from the file written of it, and that file is written again unchanged."""
    assume(drawn["hardware"] == "h100")
    drawn = valid(drawn)
    state = fields.checked({**fields.scenario_start(), **drawn}, tuple(drawn))
    e = evaluate(*fields.values(state))
    try:
        degrees_of(e)
    except ValueError:  # microbatches of part sequences: no framework runs those
        assume(False)
    for framework in FORMATS:
        first, _ = read_back(framework, e)  # the format's own reading of the layout
        second, _ = read_back(framework, first)
        same_layout(first, second)
        assert write_config(framework, second) == write_config(framework, first)
