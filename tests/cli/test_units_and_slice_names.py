"""Units that mean what the field means, and TPU slices by the names people type: a batch's K, M
and G are powers of two (4M is 4,194,304 tokens, 512 sequences of 8,192), and v5p-512 is 256
chips (4x8x8), v6e-256 256. The command line, the API and the panel read them alike."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scaling_widgets as sw
from scaling_widgets.presets import HARDWARE
from scaling_widgets.text import units
from scaling_widgets.widgets import MeshPicker
from scaling_widgets.widgets.inputs import BatchInput

from .running import estimate, run

H100_512 = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "512", "--tp", "8",
            "--seq-len", "8k"]  # fmt: skip


def test_a_4m_batch_is_512_sequences_of_8k_the_same_as_typed_out(capsys):
    four_m = estimate(capsys, *H100_512, "--batch", "4M")
    typed_out = estimate(capsys, *H100_512, "--batch", "4194304")
    assert four_m["batch_tokens"] == 4 * 2**20 and four_m["sequences"] == 512
    assert four_m["step_time_s"] == typed_out["step_time_s"]
    assert four_m["batch_tokens_asked"] is None  # whole sequences: nothing rounded
    code, out, _ = run(capsys, "estimate", *H100_512, "--batch", "4M")
    assert "batch 4M = 4,194,304 tokens (512 sequences of 8192)" in out.splitlines()[0]


def test_training_tokens_stay_decimal_and_a_batch_in_e_notation_is_exact(capsys):
    e = estimate(capsys, *H100_512, "--batch", "4M", "--tokens", "15T")
    assert e["training_tokens"] == 15e12
    assert estimate(capsys, *H100_512, "--batch", "4e6")["batch_tokens_asked"] == 4e6


def test_a_batch_suffix_that_is_not_a_power_of_two_is_refused_in_one_line(capsys):
    code, out, err = run(capsys, "estimate", *H100_512, "--batch", "4B")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--batch takes the suffixes k, K, M, G (such as 4M (4,194,304)" in err


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1, max_value=2e12, allow_nan=False))
def test_a_batch_as_shown_reads_back_within_its_three_digits(n):
    assert units.parse_batch(units.batch(n)) == pytest.approx(n, rel=5e-3)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.eE+-_kKMGBTmx ", max_size=8))
def test_any_batch_text_is_a_positive_count_or_a_one_line_refusal(text):
    try:
        value = units.parse_batch(text)
    except ValueError as err:
        assert "\n" not in str(err) and "batch" in str(err)
    else:
        assert 0 < value < float("inf")


@pytest.mark.parametrize(
    "name, hardware, chips, shape, said",
    [
        ("v5p-512", "tpu-v5p", 256, [4, 8, 8], "v5p-512"),
        ("v4-2048", "tpu-v4p", 1024, [8, 8, 16], "v4-2048"),
        ("v5e-256", "tpu-v5e", 256, [16, 16], "v5e-256"),
        ("v5litepod-16", "tpu-v5e", 16, [4, 4], "v5e-16"),  # Google's API name for v5e
        ("v6e-256", "tpu-v6e", 256, [16, 16], "v6e-256"),
    ],
)
def test_a_tpu_slice_by_its_name_sets_the_chip_and_the_shape(
    capsys, name, hardware, chips, shape, said
):
    e = estimate(capsys, "--model", "llama-2-13b", "--batch", "1M", "--mesh", name)
    assert e["hardware"] == HARDWARE[hardware].name and e["slice_name"] == said
    assert e["chips"] == chips and e["layout"]["slice_shape"] == shape
    code, out, _ = run(capsys, "estimate", "--model", "llama-2-13b", "--batch", "1M", "--mesh",
                       name)  # fmt: skip
    assert f"on TPU {said} ({chips:,} chips, {'x'.join(map(str, shape))})" in out


def test_a_slice_name_of_another_chip_or_count_is_refused_naming_what_runs(capsys):
    args = ["estimate", "--model", "llama-2-13b", "--batch", "1M"]
    code, out, err = run(capsys, *args, "--hardware", "tpu-v5p", "--mesh", "v6e-256")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--mesh must be a slice of the hardware given, tpu-v5p: v6e-256 is TPU v6e's" in err
    code, out, err = run(capsys, *args, "--mesh", "v5p-500")
    assert code == 2 and err.count("\n") == 1
    assert "counting its TensorCores, two a chip, such as v5p-512, v5p-256, v5p-1024" in err
    code, out, err = run(capsys, *args, "--mesh", "v5p-2")  # Google's smallest v5p is v5p-8
    assert code == 2 and "such as v5p-8, v5p-16, v5p-32; got v5p-2" in err


def test_the_api_reads_the_same_names_and_units():
    e = sw.estimate(model="llama-2-13b", mesh="v6e-256", batch="1M", seq_len="4k")
    assert e.chip.id == "tpu-v6e" and tuple(e.slice_shape) == (16, 16)
    assert float(e.batch) == 2**20


def test_the_mesh_picker_shows_and_takes_the_names():
    picker = MeshPicker()
    picker._name.value = "v6e-256"
    assert picker.scenario.hardware.id == "tpu-v6e" and picker.scenario.slice_shape == (16, 16)
    picker._name.value = "v6e-300"  # no such slice: said inline, the scenario kept
    assert "such as v6e-256" in picker._message.text and picker.scenario.slice_shape == (16, 16)
    picker._name.value = "v5p-512"
    assert picker.scenario.slice_shape == (4, 8, 8) and picker._message.text == ""
    picker._hardware.value = "h100"  # a GPU's slices have no such name: the field hides
    assert picker._name.layout.display == "none"


def test_the_batch_field_reads_and_shows_powers_of_two():
    field = BatchInput()
    field._text.value = "16M"
    assert field.value == 16 * 2**20 and field._text.value == "16M"
    field._text.value = "4m"  # milli or mega: refused, the batch kept
    assert "suffixes" in field.error and field.value == 16 * 2**20


def test_a_chip_given_any_way_must_agree_with_a_slice_name():
    # the chip itself, its display name and its file are all the hardware given
    says = "a slice of the hardware given, H100: v5p-512 is TPU v5p's"
    with pytest.raises(ValueError, match=says):
        sw.estimate(model="llama-3-8b", batch="4M", chip=HARDWARE["h100"], mesh="v5p-512")
    e = sw.estimate(model="llama-3-8b", batch="4M", hardware="TPU v5p", mesh="v5p-512")
    assert e.chip.id == "tpu-v5p" and tuple(e.slice_shape) == (4, 8, 8)


def test_a_slice_google_does_not_offer_is_named_by_its_shape(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-3-8b", "--batch", "1M",
                       "--hardware", "tpu-v5p", "--mesh", "3x5x7")  # fmt: skip
    assert code == 0 and "on TPU v5p 3x5x7 x 1 pod = 105 chips" in out
    e = estimate(capsys, "--model", "llama-3-8b", "--batch", "1M", "--hardware", "tpu-v5p",
                 "--mesh", "3x5x7")  # fmt: skip
    assert e["slice_name"] is None


def test_a_named_slice_survives_a_copy():
    import copy
    import pickle

    from scaling_widgets.cost.hardware.slice_names import named_slice

    named = named_slice("v5p-512", HARDWARE.get)
    for again in (copy.deepcopy(named), pickle.loads(pickle.dumps(named))):
        assert again == (4, 8, 8) and (again.chip, again.name) == ("tpu-v5p", "v5p-512")


@settings(max_examples=300, deadline=None)
@given(
    family=st.sampled_from(["v4", "v5p", "v5e", "v5litepod", "v6e", "TPU-v5p", "v7x"]),
    count=st.integers(0, 20_000),
)
def test_any_slice_name_is_its_slice_or_a_one_line_refusal_that_names_ones_that_run(family, count):
    from scaling_widgets.cost import InputError
    from scaling_widgets.cost.hardware.slice_names import is_slice_name, named_slice

    text = f"{family}-{count}"
    if not is_slice_name(text):  # not a name: read as a shape, and refused as one
        with pytest.raises(ValueError, match="mesh must be axis lengths"):
            units.parse_mesh(text, "mesh")
        return
    try:
        named = named_slice(text, HARDWARE.get, "mesh")
    except InputError as refused:
        said = str(refused)
        assert "\n" not in said and said.startswith("mesh must be") and "such as" in said
        suggested = said.split("such as ")[1].split(";")[0].split(", ")
        for name in suggested:  # every suggestion runs
            assert named_slice(name, HARDWARE.get).name == name
    else:
        per_chip = 2 if named.chip in ("tpu-v4p", "tpu-v5p") else 1
        assert math.prod(named) * per_chip == count


def test_a_tpu_count_of_chips_is_the_slice_google_gives_that_count(capsys):
    args = ["--model", "llama-2-13b", "--batch", "3M", "--hardware", "tpu-v5p"]
    by_count = estimate(capsys, *args, "--chips", "4096")
    by_name = estimate(capsys, *args, "--mesh", "v5p-8192")
    assert by_count["layout"]["slice_shape"] == by_name["layout"]["slice_shape"] == [16, 16, 16]
    assert by_count["step_time_s"] == by_name["step_time_s"]
    assert sw.estimate(model="llama-2-13b", hardware="tpu-v5p", chips=4096, batch="3M",
                       seq_len="4k").step_time == by_count["step_time_s"]  # fmt: skip
    code, out, _ = run(capsys, "plan", *args, "--chips", "4096")
    assert code == 0 and "TPU v5p-8192 (4,096 chips, 16x16x16)" in out


@settings(max_examples=200, deadline=None)
@given(hardware=st.sampled_from(["tpu-v4p", "tpu-v5p", "tpu-v5e", "tpu-v6e"]),
       chips=st.integers(1, 20_000))  # fmt: skip
def test_any_tpu_count_of_chips_is_a_slice_or_a_one_line_refusal_whose_counts_run(hardware, chips):
    from scaling_widgets.cost import InputError
    from scaling_widgets.cost.hardware.slices import slice_for, slice_of

    chip = HARDWARE[hardware]
    try:
        shape = slice_for(chip, chips)
    except InputError as refused:
        said = str(refused)
        assert "\n" not in said and said.startswith("chips must be") and f"got {chips}" in said
        if "such as" in said:  # every count suggested has its slice
            for count in said.split("such as ")[1].split(";")[0].split(" or "):
                assert slice_of(chip, int(count.split(" ")[0].replace(",", ""))) is not None
        else:
            assert chips > chip.pod_chips and "--pods" in said
    else:
        assert math.prod(shape) == chips
