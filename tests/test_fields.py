"""Every field declared once (fields/): the CLI's flags, the scenario's keys, the command and the
planner's options all come from the one table, and a saved scenario of every version loads."""

import dataclasses
import json
import re

import pytest

from scaling_widgets import fields
from scaling_widgets.cli.options import offered
from scaling_widgets.cli.parser import build_parser
from scaling_widgets.cost import Cluster, Layout, Options, Workload
from scaling_widgets.cost.search.layouts import HELD, SEARCHED
from scaling_widgets.cost.search.plan import BY_HAND, OPTIONS, WHERE
from scaling_widgets.cost.transformer.exactness import Exactness
from scaling_widgets.fields import FIELDS, FIELDS_TABLE, SCENARIO
from scaling_widgets.fields.command import command
from scaling_widgets.widgets.scenario import Scenario, ScenarioError

VALUES = {"cluster": Cluster, "workload": Workload, "layout": Layout, "options": Options}


def test_every_field_of_the_four_values_is_declared_once():
    declared = [f.value for f in FIELDS_TABLE if f.value is not None]
    assert len(declared) == len(set(declared))  # no attribute set by two fields
    for owner, kind in VALUES.items():
        for name in kind.__dataclass_fields__:
            if name == "exact":  # the exactness switches, one field each
                continue
            assert f"{owner}.{name}" in declared, f"{owner}.{name} has no field"
    for name in Exactness.__dataclass_fields__:
        assert f"exact.{name}" in declared


def test_a_field_takes_its_default_and_its_check_from_the_value_that_declares_it():
    pods, stack = FIELDS["pods"], FIELDS["stack"]
    assert pods.fallback() == Cluster.__dataclass_fields__["pods"].default == 1
    assert pods.checker() is Cluster.__dataclass_fields__["pods"].metadata["check"]
    assert stack.checker() is Options.__dataclass_fields__["stack"].metadata["check"]
    assert (
        FIELDS["seq_len"].fallback() == 4096
    )  # the table may set its own: the CLI's and the panel's


@pytest.mark.parametrize("command_name", ["estimate", "plan"])
def test_the_cli_offers_exactly_the_fields_the_table_offers(command_name, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command_name, "--help"])
    flags = set(re.findall(r"(--[a-z][a-z0-9-]*)", capsys.readouterr().out))
    for field in FIELDS_TABLE:
        if field.flag is None:
            continue
        assert (field.flag in flags) == offered(field, command_name), field.flag
    # The planner chooses the layout's knobs itself: it offers no flag for them.
    assert not any(FIELDS[name].flag in flags for name in SEARCHED if command_name == "plan")


def test_the_planner_takes_every_other_field_of_the_values():
    searched_or_held = {*HELD, *SEARCHED}
    every = {f for kind in (*VALUES.values(),) for f in kind.__dataclass_fields__}
    assert set(OPTIONS) == every - searched_or_held - set(BY_HAND) - set(WHERE)


OLD = {  # a scenario as each earlier version saved it: what it had then, and nothing since
    1: {
        "version": 1, "model": "llama-2-13b", "hardware": "tpu-v5p", "slice_shape": [16, 16, 16],
        "pods": 1, "batch": 2**25, "seq_len": 4096, "strategy": "dp", "zero": None,
        "optimal_split": False, "x": 512, "y": 8, "z": 1, "microbatches": None, "axis_roles": [],
        "precision": "book", "mfu": 0.4, "tokens": 2e12, "attention_flops": False,
        "remat": "checkpoints", "measured_step_time": None, "ring_factor": False,
        "halve_without_wrap": False, "latency": 0.0, "overhead_bytes": 0.0, "fits_below": 1.0,
        "schedule": "1f1b", "virtual_stages": 1, "sequence_parallel": False, "profile": None,
    },
}  # fmt: skip
OLD[2] = {**OLD[1], "version": 2, "ep": 1, "cp": 1, "cp_kind": "ring"}
OLD[3] = {**OLD[2], "version": 3, "stack": None, "flash_attention": None}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_scenario_of_every_version_loads_with_its_meaning(version):
    # Before version 4 a split by hand counted for FSDP + TP only: this DP scenario ran as DP.
    s = Scenario.from_json(json.dumps(OLD[version]))
    e = s.estimate()
    assert (s.strategy, int(e.x), int(e.y)) == ("dp", 4096, 1) and s.optimal_split
    # CP 1, the default before version 5, is now "as the sequences need": 1 here, where each
    # replica has whole sequences.
    assert (s.ep, s.cp, s.stack, s.microbatch_seqs, s.wraparound) == (1, None, None, None, None)
    assert e.layout.cp == 1
    assert json.loads(s.to_json())["version"] == fields.VERSION


def test_a_saved_scenario_keeps_every_key_of_the_table():
    saved = json.loads(Scenario().to_json())
    assert list(saved) == ["version", *SCENARIO]
    with pytest.raises(ScenarioError, match="scenario key 'mx' is missing"):
        Scenario.from_json(json.dumps({k: v for k, v in saved.items() if k != "mx"}))


def test_the_command_says_every_field_that_differs_from_its_default():
    s = Scenario(model="llama-3-70b", hardware="h100", slice_shape=(64, 8), batch=2**24,
                 seq_len=8192, z=4, microbatches=16, remat="full", sequence_parallel=True,
                 wraparound=False, mx=1.0, overhead_bytes=2e9, stack="megatron-lm")  # fmt: skip
    words = command(*s.values())
    for flag in ("--pp 4", "--microbatches 16", "--remat full", "--sequence-parallel",
                 "--wraparound off", "--mx 1.0", "--overhead-gb 2.0", "--stack megatron-lm",
                 "--hardware h100", "--mesh 64x8", "--seq-len 8192"):  # fmt: skip
        assert flag in words
    assert "--zero" not in words and "--ep" not in words  # defaults are left out
    roles = dataclasses.replace(s.values()[2], x=None, y=None, z=None, axis_roles=("x", "y"))
    assert command(*s.values()[:2], roles, s.values()[3]) is None  # no flag says axis roles


DEEPSEEK = dict(model="deepseek-v3", hardware="h100", slice_shape=(64, 8), batch=2**22,
                seq_len=4096, z=16, ep=16, matmul_dtype="fp8", stack="megatron-lm")  # fmt: skip
PAIRED = dict(
    DEEPSEEK, schedule="interleaved", virtual_stages=2, ep_overlap=True, matmul_dtype="bf16"
)
LLAMA = dict(model="llama-3-70b", hardware="h100", slice_shape=(64, 8), batch=2**22, seq_len=4096,
             z=16)  # fmt: skip
MENDS = [
    (DEEPSEEK, {"hardware": "tpu-v5p"}, "From H100 to TPU v5p: 8x8x8, the same 512 chips; matmuls"),
    (LLAMA, {"slice_shape": (48, 8)}, ""),  # 16 stages divide 384 chips: nothing to mend
    (LLAMA, {"slice_shape": (25, 8)}, "Pipeline stages back to 1: 16 do not divide 200 chips."),
    (DEEPSEEK, {"model": "mixtral-8x7b"}, "EP 8, the largest up to 16 dividing 8 experts."),
    (DEEPSEEK, {"model": "llama-3-70b"}, "Expert parallelism off: LLaMA-3 70B has no experts."),
    (PAIRED, {"stack": "fsdp2"}, "The expert all-to-alls no longer paired: fsdp2 does not pair"),
]
FLAGS = {"hardware": "--hardware", "slice_shape": "--mesh", "model": "--model", "stack": "--stack"}


@pytest.mark.parametrize("start, change, said", MENDS)
def test_the_panel_and_the_command_line_mend_a_change_alike(start, change, said, tmp_path, capsys):
    """One rule (``fields.mended``): the scenario the panel makes of a change is the one the
    command line makes of the same flag over the saved scenario, and both say what was mended."""
    from scaling_widgets.cli import main

    saved, mended = tmp_path / "start.json", tmp_path / "mended.json"
    saved.write_text(Scenario(**start).to_json())
    panel = Scenario.from_json(saved.read_text())
    panel.update(**change)
    assert panel.mended.startswith(said) and bool(panel.mended) == bool(said)
    mended.write_text(panel.to_json())
    ((name, value),) = change.items()
    value = "x".join(map(str, value)) if name == "slice_shape" else value
    assert main(["estimate", "--scenario", str(saved), FLAGS[name], value, "--json"]) == 0
    flagged = capsys.readouterr()
    assert main(["estimate", "--scenario", str(mended), "--json"]) == 0
    assert json.loads(flagged.out) == json.loads(capsys.readouterr().out)
    assert (f"note: {said}" in flagged.err) if said else flagged.err == ""
