"""The scenario: validation that names the field, atomic updates, strict JSON, sharing."""

import json

import pytest
from traitlets import TraitError

from scaling_widgets.cost import Model
from scaling_widgets.fields import READABLE, VERSION
from scaling_widgets.presets import HARDWARE
from scaling_widgets.widgets.scenario import Scenario, ScenarioError


def test_defaults_are_the_chips_full_pod():
    s = Scenario(hardware="tpu-v5e")
    assert s.slice_shape == (16, 16) and s.hardware is HARDWARE["tpu-v5e"]


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("batch", -3.0, r"batch must be a number of tokens > 0 and < 1e11; got -3"),
        ("mfu", 1.5, "mfu must be a share of peak > 0 and <= 1; got 1.5"),
        ("pods", 0, "pods must be a whole number from 1 to 4,194,304; got 0"),
        ("hardware", "tpu-v9", "unknown hardware 'tpu-v9'"),
        (
            "slice_shape",
            (16, 16, 32),
            "slice_shape must be a slice that fits in the chip's pod of 16x20x28 .*; got 16x16x32",
        ),
        ("z", 3, "z must be a number of pipeline stages dividing the slice's 8960 chips; got 3"),
        # 100K tokens of 4096 (24 sequences) cannot give the 35 data replicas of 32 CP chips, the
        # fewest a pod's smallest data axis of 1120 chips (TP 8 over two axes) allows, one each.
        ("batch", 1e5, "batch must be at least 143,360 tokens.*of 32 CP chips.*a whole sequence"),
    ],
)
def test_bad_values_are_rejected_naming_the_field(field, value, message):
    s = Scenario()
    before = s.to_json()
    with pytest.raises(ScenarioError, match=message):
        setattr(s, field, value)
    assert s.to_json() == before


def test_update_applies_everything_or_nothing():
    s = Scenario(slice_shape=(16, 16, 16))
    with pytest.raises(ScenarioError, match="fits in the chip's pod"):
        s.update(batch=1e6, hardware="tpu-v5e", slice_shape=(16, 16, 16))  # not a v5e slice
    assert s.batch == 2**24 and s.hardware.name == "TPU v5p"  # the default batch, 16M
    s.update(hardware="tpu-v5e", slice_shape=(16, 16), batch=1e6)
    assert (s.hardware.name, s.slice_shape, s.batch) == ("TPU v5e", (16, 16), 1e6)


def test_another_chip_without_a_slice_takes_its_nearest_that_runs_and_says_so():
    s = Scenario(slice_shape=(16, 16, 16), batch=4e6)
    s.update(hardware="h100")
    assert (s.hardware.name, s.chips) == ("H100", 4096) and s.mended == (
        "From TPU v5p to H100: 512x8, the same 4,096 chips."
    )
    s.update(hardware="tpu-v5e")  # a v5e pod holds 256 chips: its nearest slice that runs
    assert s.hardware.name == "TPU v5e" and s.chips <= 256 and "the nearest to 4,096" in s.mended


def test_one_update_is_one_revision():
    s = Scenario()
    seen = []
    s.observe(lambda change: seen.append(change["new"]), "revision")
    s.update(batch=32e6, mfu=0.5, pods=2)  # 16M a pod, as the default: enough for a whole pod
    s.batch = 40e6
    assert len(seen) == 2


def test_json_round_trip_loses_nothing():
    # TP 4 must divide the heads: 8 query heads, 2 KV heads.
    own = Model(
        "tiny",
        layers=2,
        d_model=64,
        d_ff=256,
        heads=8,
        kv_heads=2,
        head_dim=8,
        vocab=1000,
        gated=False,
    )
    s = Scenario(
        model=own,
        hardware="tpu-v5e",
        slice_shape=(8, 16),
        pods=3,
        # 964 sequences of 128: one for each of 32 replicas x 3 pods x 7 microbatches
        batch=123456.5,
        seq_len=128,
        strategy="fsdp+tp",
        optimal_split=False,
        x=32,
        y=4,
        microbatches=7,
        mfu=0.37,
        tokens=1.5e12,
        precision="mixed-adam",
    )
    t = Scenario.from_json(s.to_json())
    assert t.to_json() == s.to_json()
    assert t.model == own and t.precision.name == "mixed-adam" and (t.x, t.y) == (32, 4)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, "unknown scenario key 'colour'"),
        (
            {"version": VERSION + 1},
            rf"scenario version must be one of \({', '.join(map(str, READABLE))}\);"
            rf" got {VERSION + 1}",
        ),
        ({"pods": "2"}, "pods must be a whole number from 1 to 4,194,304; got '2'"),
        ({"batch": "3M"}, r"batch must be a number of tokens > 0 and < 1e11; got '3M'"),
        ({"model": {"layers": 2}}, "model: model key 'd_ff' is missing"),
    ],
)
def test_from_json_is_strict(change, message):
    data = {**json.loads(Scenario().to_json()), **change}
    with pytest.raises(TraitError, match=message):
        Scenario.from_json(json.dumps(data))


def test_from_json_rejects_a_missing_key():
    data = json.loads(Scenario().to_json())
    del data["mfu"]
    with pytest.raises(ScenarioError, match="scenario key 'mfu' is missing"):
        Scenario.from_json(json.dumps(data))


def test_unknown_keywords_raise():
    with pytest.raises(TypeError, match="unexpected keyword 'colour'"):
        Scenario(colour="red")
    with pytest.raises(TypeError, match="unexpected keyword 'bacth'"):
        Scenario().update(bacth=1)


def test_another_slice_keeps_a_manual_split_whole():
    s = Scenario(slice_shape=(16, 16, 16), optimal_split=False, x=1024, y=4)
    s.update(slice_shape=(8, 8, 8))
    assert (s.x, s.y, s.slice_shape) == (128, 4, (8, 8, 8)) and s.mended == ""


def test_a_refusal_names_the_keyword_as_written():
    s = Scenario()
    with pytest.raises(ScenarioError, match="^tp must be a divisor of the 8960 chips"):
        s.update(tp=3, optimal_split=False)
    with pytest.raises(ScenarioError, match="^y must be a divisor of the 8960 chips"):
        s.update(y=3, optimal_split=False)
    assert s.revision == 0  # nothing applied


def test_another_chip_drops_fp8_it_lacks_and_a_profile_made_for_the_chip_left_behind():
    from scaling_widgets.cost.calibrate import calibrate

    s = Scenario(hardware="h100", model="llama-3-8b", batch=2**20, seq_len=8192, mfu=None)
    s.update(matmul_dtype="fp8")
    fp8_step = float(s.estimate().step_time)
    s.update(profile=calibrate(*s.values(), step_time=2 * fp8_step))
    s.update(hardware=HARDWARE["a100"])
    assert s.matmul_dtype == "bf16" and s.profile is None and s.hardware is HARDWARE["a100"]
    assert s.mended.startswith("Matmuls back to bf16: the A100 has no fp8;")
    assert "the profile made for the H100 dropped" in s.mended
    s.update(hardware=HARDWARE["b200"])
    s.update(matmul_dtype="fp8")  # and back to a chip that has it
    assert float(s.estimate().step_time) > 0


def test_fp8_on_a_chip_without_it_is_refused_and_the_scenario_kept():
    s = Scenario(hardware="a100", model="llama-3-8b", batch=2**20, seq_len=8192, mfu=None)
    with pytest.raises(ScenarioError, match="matmul_dtype must be 'bf16' on the A100"):
        s.update(matmul_dtype="fp8")
    assert s.matmul_dtype == "bf16"
