"""Presets by name, and a user's own model or chip from JSON."""

import dataclasses
import json
import math
import os
import re
import reprlib
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import catalog
from scaling_widgets.cost import (
    Workload,
    estimate,
    flops_per_token,
    param_count,
    recompute_flops_per_token,
    step_time,
    training_flops,
    utilisation,
)
from scaling_widgets.cost.transformer.shapes import LARGEST_DIMS, Model, Precision
from scaling_widgets.presets import HARDWARE, MODELS, PRECISIONS

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


@pytest.mark.parametrize(
    "find, from_json, table",
    [
        (catalog.hardware, catalog.chip_from_json, HARDWARE),
        (catalog.model, catalog.model_from_json, MODELS),
        (catalog.precision, lambda text: Precision(**json.loads(text)), PRECISIONS),
    ],
    ids=["hardware", "model", "precision"],
)
def test_every_preset_is_reachable_by_name(find, from_json, table):
    for name, preset in table.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name  # lowercase-hyphen keys
        assert find(name) is preset and find(preset) is preset
        # Written out as JSON, as a user would start their own, it reads back as the same preset.
        assert from_json(json.dumps(dataclasses.asdict(preset))) == preset, name


@pytest.mark.parametrize("name", [name for name in MODELS if re.search(r"-(\d+)b$", name)])
def test_each_model_preset_has_the_parameters_its_name_says(name):
    billions = int(re.search(r"-(\d+)b$", name).group(1))
    total = float(param_count(**MODELS[name].dims()).total)
    # Gemma 7B counts 8.5B with its 256k-token embeddings; the others are within 4%.
    assert total == pytest.approx(billions * 1e9, rel=0.25 if name == "gemma-7b" else 0.04)


def test_unknown_preset_suggests_the_nearest_and_lists_the_known_ones():
    with pytest.raises(
        ValueError,
        match=r"unknown hardware 'tpu-v9' \(did you mean 'tpu-v\w+'.*\?\); known: tpu-v4p, tpu-v5e",
    ):
        catalog.hardware("tpu-v9")


def test_a_preset_written_in_other_case_or_without_dashes_is_that_preset():
    assert catalog.hardware("H100") is catalog.hardware("h100")
    assert catalog.model("Llama3-70B") is catalog.model("llama-3-70b")


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
        ({"layers": 2.5}, "Model layers must be a whole number from 1 to 2\\*\\*20; got 2.5"),
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
        {
            "flops": 1e15,
            "hbm_bytes": 8e10,
            "hbm_bw": 3e12,
            "ici_bw": 4.5e11,
            "pod_shape": [8, 8],
            "dcn_bw": 5e10,
        }
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


# A value of the wrong JSON type, in any field, is a ValueError naming the field (never a
# TypeError).
WRONG_TYPES = [[], [8], {}, "8", None, True, float("nan"), float("inf"), 10**400]
CHIP = dict(
    name="c", flops=1e15, hbm_bytes=8e10, hbm_bw=3e12, ici_bw=4.5e11, pod_shape=[8, 8], dcn_bw=5e10
)
GPU = {**CHIP, "node_size": 8, "scaleout_bw": 5e10, "wraparound": "switched"}


def wrong_values(fields, also=()):
    return [(field, value) for field in fields for value in [*WRONG_TYPES, *also]]


def short(value) -> str:
    """A test id: ``repr`` cut short (10**400 has 401 digits)."""
    return reprlib.repr(value)


@pytest.mark.parametrize(
    "field, value",
    wrong_values(
        [
            "flops",
            "hbm_bytes",
            "hbm_bw",
            "ici_bw",
            "dcn_bw",
            "scaleout_bw",
            "node_size",
            "wraparound",
        ]
    )
    + [
        ("pod_shape", v)
        for v in ([], {}, "8x8", None, 8, [8.0, 8], [[8], 8], ["8", "8"], [True, 8], [0, 8])
    ]
    + [
        ("pod_shape", [8] * 5),
        ("pod_shape", [2**20 + 1, 8]),
        ("pod_shape", [2**20] * 4),
    ]  # 2**80 chips
    + [("node_size", 8.0), ("node_size", -8), ("node_size", 2**64), ("name", 3), ("name", None)],
    ids=short,
)
def test_a_chip_field_of_the_wrong_type_is_a_value_error(field, value):
    for chip in (CHIP, GPU):
        with pytest.raises(ValueError, match=f"^Chip {field} must be "):
            catalog.chip_from_json({**chip, field: value})


def test_a_hardware_file_with_node_size_an_empty_list(tmp_path):
    path = tmp_path / "chip.json"
    path.write_text(json.dumps({**CHIP, "node_size": []}))
    with pytest.raises(
        ValueError, match=r"Chip node_size must be a whole number from 0 to 2\*\*20; got \[\]"
    ):
        catalog.chip_from_json(path)


@pytest.mark.parametrize(
    "field, value",
    wrong_values(
        ["layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab"], also=[0, -1, 8.0]
    )
    + [
        (field, v)
        for field in ("gated", "tied_embeddings")
        for v in ([], {}, None, 0, 1, "true", 1.0)
    ]
    + [("name", 7), ("name", ["tiny"])],
    ids=short,
)
def test_a_model_field_of_the_wrong_type_is_a_value_error(field, value):
    with pytest.raises(ValueError, match=f"^Model {field} must be "):
        catalog.model_from_json(json.dumps({**TINY, field: value}))


@pytest.mark.parametrize(
    "field, value",
    wrong_values(
        ["weight_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes"], also=[-1, 1e9]
    ),
    ids=short,
)
def test_a_precision_field_of_the_wrong_type_is_a_value_error(field, value):
    with pytest.raises(ValueError, match=f"^Precision {field} must be "):
        Precision(
            **{"name": "p", "weight_bytes": 2, "grad_bytes": 2, "optimizer_bytes": 12, field: value}
        )


def test_a_huge_integer_is_shown_by_its_size():
    with pytest.raises(ValueError, match="Model layers must be .*; got an integer of 1329 bits"):
        catalog.model_from_json({**TINY, "layers": 10**400})
    with pytest.raises(
        ValueError, match="is not valid JSON: Exceeds the limit"
    ):  # json refuses 5000 digits
        catalog.model_from_json('{"layers": ' + "9" * 5000 + "}")


def test_json_nested_a_thousand_deep_is_a_value_error(tmp_path):
    deep = '{"layers": ' + "[" * 1000 + "]" * 1000 + "}"
    path = tmp_path / "deep.json"
    path.write_text(deep)
    for source in (deep, path):
        with pytest.raises(ValueError, match="is nested too deeply"):
            catalog.model_from_json(source)
    with pytest.raises(
        ValueError, match=r"Model layers must be .*; got \[\[\[\[\[\[\[\.\.\.\]\]\]"
    ):  # cut short
        catalog.model_from_json({**TINY, "layers": json.loads("[" * 500 + "]" * 500)})


def test_a_named_pipe_is_refused_before_it_is_opened(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this system")
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)
    # A writer that waits for a reader: had the catalog opened the pipe, this releases it (and the
    # test fails on the message) instead of hanging.
    writer = threading.Thread(target=lambda: open(fifo, "wb").close(), daemon=True)
    writer.start()
    try:
        with pytest.raises(
            ValueError, match=r"model\.json is a named pipe \(FIFO\); give a JSON file"
        ):
            catalog.model_from_json(fifo)
    finally:
        # releases the writer, now or when it opens
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join(timeout=10)
        os.close(reader)
    assert not writer.is_alive()


@pytest.mark.parametrize("device", ["/dev/urandom", "/dev/zero", "/dev/null"])
def test_a_device_is_refused(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    with pytest.raises(ValueError, match=f"^{device} is a character device; give a JSON file"):
        catalog.chip_from_json(device)


def test_a_directory_a_huge_file_and_binary_are_refused(tmp_path):
    with pytest.raises(ValueError, match="is a directory; give a JSON file"):
        catalog.model_from_json(tmp_path)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(catalog.LARGEST_FILE + 1)  # sparse: nothing is written
    with pytest.raises(ValueError, match=r"huge\.json is over 1,000,000 bytes"):
        catalog.model_from_json(str(huge))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b'{"name": "\xff\xfe"}')
    with pytest.raises(ValueError, match=r"binary\.json is not UTF-8 text \(byte 10 is 0xff\)"):
        catalog.model_from_json(binary)
    with pytest.raises(ValueError, match="cannot read 'a\\\\x00b'"):
        catalog.model_from_json("a\x00b")
    with pytest.raises(ValueError, match="must be a JSON file, JSON text or a dict; got int"):
        catalog.model_from_json(42)


def test_a_file_of_a_megabyte_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "tiny.json"
    text = json.dumps(TINY)
    path.write_text(
        "\ufeff" + text + " " * (catalog.LARGEST_FILE - len(text) - 3), encoding="utf-8"
    )
    assert path.stat().st_size == catalog.LARGEST_FILE
    assert catalog.model_from_json(path).name == "tiny"


@pytest.mark.parametrize("name", [["tpu-v5p"], {"a": 1}, None, 5])
def test_a_preset_name_of_the_wrong_type_is_unknown(name):
    with pytest.raises(ValueError, match="unknown hardware .*; known: tpu-v4p"):
        catalog.hardware(name)


# Products of a model's dimensions are float64: none wraps around as int64 did.
BIGGEST = Model("biggest", **LARGEST_DIMS)


def test_the_largest_model_allowed_has_finite_positive_counts():
    L, D, F, N_h, K, H, V = LARGEST_DIMS.values()
    p = param_count(**BIGGEST.dims())
    exact = 3 * L * D * F + 2 * D * (N_h + K) * H * L + 2 * V * D  # Python ints never wrap
    assert float(p.total) == pytest.approx(exact, rel=1e-12) and float(p.total) < 1e28
    f = flops_per_token(
        params=p.total, layers=L, seq_len=2**53, heads=N_h, head_dim=H, attention=True
    )
    # 1.2e35, finite
    assert float(f) == pytest.approx(6 * exact + 12 * L * 2**53 * N_h * H, rel=1e-12)
    assert np.isfinite(step_time(batch=1e29, params=p.total, chips=1, flops=1e15, mfu=1e-9))
    # A sequence that long is refused where the workload is built: the formulas trust their inputs.
    with pytest.raises(
        ValueError,
        match="seq_len must be a whole number from 1 to 16,777,216; got 9007199254740992",
    ):
        Workload(BIGGEST, batch=1e6, seq_len=2**53)


def test_a_model_over_a_ceiling_is_refused():
    with pytest.raises(
        ValueError, match=r"Model layers must be a whole number from 1 to 2\*\*20; got 1048577"
    ):
        Model("m", **{**BIGGEST.dims(), "layers": 2**20 + 1})
    with pytest.raises(
        ValueError, match=r"Model heads must be a whole number from 1 to 2\*\*20; got 2147483648"
    ):
        catalog.model_from_json({**TINY, "heads": 2**31})


def test_a_long_sequence_does_not_wrap_the_flops_per_token():
    L70 = MODELS["llama-3-70b"]
    T, L, N_h, H = 10**15, L70.layers, L70.heads, L70.head_dim  # --seq-len 1e15 --attention-flops
    psi = param_count(**L70.dims()).total
    f = flops_per_token(params=psi, layers=L, seq_len=T, heads=N_h, head_dim=H, attention=True)
    # 7.9e21, over int64's 9.2e18
    assert float(f) == pytest.approx(6 * float(psi) + 12 * L * T * N_h * H, rel=1e-12)
    extra = recompute_flops_per_token(
        params=psi, layers=L, seq_len=T, heads=N_h, head_dim=H, remat="selective"
    )
    assert float(extra) == pytest.approx(4 * L * T * N_h * H, rel=1e-12)
    assert float(training_flops(params=70 * 10**9, tokens=15 * 10**12)) == pytest.approx(6.3e24)
    B, chips = 4 * 10**18, 2**40  # integers whose product with f once wrapped
    assert (
        float(utilisation(batch=B, flops_per_token=f, chips=chips, flops=10**15, step_time=1)) > 0
    )


# Any JSON value under the model's keys loads into a Model with a finite positive parameter count,
# or is a ValueError: never another exception, an overflow or a NaN.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=0, max_value=2**40)
    | st.builds(lambda e, sign: sign * 2**e, st.integers(0, 300), st.sampled_from([1, -1]))
    | st.floats()
    | st.floats(min_value=1e300)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def model_json(draw):
    """A valid model's JSON with some of its values (maybe none) replaced by any JSON value."""
    data = {
        field: draw(st.integers(1, min(largest, 2**16))) for field, largest in LARGEST_DIMS.items()
    }
    data |= {"gated": draw(st.booleans()), "tied_embeddings": draw(st.booleans()), "name": "m"}
    for key in draw(st.sets(st.sampled_from(sorted(data)), max_size=3)):
        data[key] = draw(JSON_VALUES)
    return data


@settings(max_examples=200, deadline=None)
@given(model_json())
def test_any_json_values_make_a_model_or_a_value_error(data):
    for source in (data, json.dumps(data)):  # a dict, and the JSON text a file would hold
        try:
            model = catalog.model_from_json(source)
        except ValueError:
            continue
        total = float(param_count(**model.dims()).total)
        assert math.isfinite(total) and total > 0
