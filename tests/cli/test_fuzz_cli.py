"""Random command lines for `estimate` and `plan`: a clear refusal or finite, non-negative numbers.

Flags come from the real flag set, with plausible values and edge ones (0, -1, 1e400, nan, huge
integers, unicode, empty); the model, chip and scenario files are valid ones, broken ones and
random JSON. Whatever comes in, `main` exits 0 with a report whose every number is finite and
>= 0, or exits 2 with one line on stderr: never another exception, a warning or a traceback.
The budget is fixed and the examples derandomized, so CI runs the same cases every time.
"""

import dataclasses
import json
import math
import re
import warnings

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import REMAT_POLICIES, SCHEDULES, STRATEGIES
from scaling_widgets.presets import HARDWARE, MODELS, PRECISIONS
from scaling_widgets.widgets.scenario import Scenario

BUDGET = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
EDGE = [
    "0",
    "-1",
    "1e-29",
    "1e-31",
    "5e-324",
    "1e29",
    "1e400",
    "nan",
    "inf",
    "-inf",
    str(2**64),
    "3M",
    "abc",
    "",
    "½",
    "١٢",
    "４",
    "1_0",
    " 8 ",
    "1e3",
    "0.5",
    "2**4",
    "16x16x16",
    "0x4",
    "é\n",
    "--json",
]
PLAUSIBLE = {
    "--model": list(MODELS),
    "--hardware": list(HARDWARE),
    "--mesh": [
        "1x1",
        "2x2x2",
        "4x4x4",
        "8x8x8",
        "16x16x16",
        "16x16",
        "4x8",
        "1x4",
        "16x8",
        "2x4x8",
        "16x20x28",
    ],
    "--chips": ["4", "8", "16", "64", "4096"],
    "--pods": ["1", "2", "4", "1000"],
    "--batch": ["1", "512", "1M", "3M", "16M", "1e9", "1e12"],
    "--seq-len": ["1", "128", "2048", "4096", "32768"],
    "--strategy": list(STRATEGIES),
    "--fsdp": ["1", "2", "8", "64", "512", "1024", "3"],
    "--tp": ["1", "2", "4", "8", "16", "5"],
    "--pp": ["1", "2", "4", "8", "3"],
    "--microbatches": ["1", "4", "8", "32", "1000"],
    "--zero": ["0", "1", "2", "3", "4"],
    "--schedule": list(SCHEDULES),
    "--virtual-stages": ["1", "2", "4", "3"],
    "--microbatch-seqs": ["0.5", "1", "2", "8"],
    "--remat": list(REMAT_POLICIES),
    "--measured-step-time": ["1e-6", "0.3", "10", "1e6"],
    "--latency": ["1e-6", "1e-3", "1"],
    "--overhead-gb": ["1", "10", "100", "1e20", "1e21"],
    "--fits-below": ["0.5", "0.9", "1"],
    "--mx": ["0.5", "1", "2", "3"],
    "--my": ["0.5", "1", "2", "3"],
    "--mfu": ["1e-9", "0.4", "1"],
    "--tokens": ["1", "2T", "15T"],
    "--precision": list(PRECISIONS),
    "--matmul-dtype": ["bf16", "fp8"],
    "--torch-compile": ["on", "off"],
    "--failure-rate": ["0", "2e-5", "0.01"],
    "--checkpoint-gbps": ["0.122", "10"],
    "--restart-time": ["0", "600"],
    "--checkpoint-interval": ["3600"],
    "--pue": ["1.1"],
    "--chip-power": ["500"],
    "--price-per-chip-hour": ["2.5"],
    "--top": ["1", "3", "100", str(2**53)],
}
SWITCHES = [
    "--sequence-parallel",
    "--ep-overlap",
    "--attention-flops",
    "--ring-factor",
    "--halve-without-wraparound",
]
PLAN_FLAGS = [
    "--model",
    "--hardware",
    "--mesh",
    "--chips",
    "--pods",
    "--batch",
    "--seq-len",
    "--mfu",
    "--precision",
    "--matmul-dtype",
    "--torch-compile",
    "--top",
]
ESTIMATE_FLAGS = [f for f in PLAUSIBLE if f != "--top"]
FILE_FLAGS = ["--model-file", "--hardware-file"]

# A number written out with a minus sign: after a space, "=", "(" or at the start of a line.
NEGATIVE = re.compile(r"(?:^|[\s=(])-\d", re.MULTILINE)
NOT_FINITE = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)
# A refusal names the flag ("--mesh must be ..."), never the cost model's field, nor the field twice
# ("--mesh must be slice_shape 32x32x32 does not fit ...").
FIELD_NAMED = re.compile(r"error: [a-z_]+ must be |must be (?:--)?[a-z]+_[a-z_]+ ")
# What every report has as a number (never null): a NaN or an infinity there is printed as null.
ALWAYS = [
    "params",
    "chips",
    "batch_tokens",
    "tokens_per_chip",
    "step_time_s",
    "compute_s",
    "exposed_comm_s",
    "mfu",
    "hfu",
    "bubble",
    "flops_per_token",
    "hardware_flops_per_token",
    "hbm_bytes",
    "stage_traffic_s",
]

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=8,
)
big_numbers = st.sampled_from(
    [0, -1, 1e-300, 5e-324, 1e29, 1e30, 1e308, 2**53 + 1, 2**64, 10**40, 1.5, True]
)


def _mutated(base: dict):
    """``base`` with some keys dropped, some values replaced (random JSON or an edge number)."""
    keys = sorted(base)
    return st.tuples(
        st.lists(st.sampled_from(keys), max_size=2),
        st.dictionaries(st.sampled_from([*keys, "extra"]), json_values | big_numbers, max_size=3),
    ).map(lambda t: {**{k: v for k, v in base.items() if k not in t[0]}, **t[1]})


def _preset_json(table):
    return st.sampled_from(sorted(table)).map(lambda name: dataclasses.asdict(table[name]))


def _file_text(table):
    """A model or chip file: a preset as JSON (maybe mutated), random JSON, deep nesting or not
    JSON."""
    valid = _preset_json(table)
    return st.one_of(
        valid.map(json.dumps),
        valid.flatmap(_mutated).map(json.dumps),
        json_values.map(json.dumps),
        st.integers(1, 100_000).map(lambda n: "[" * n + "]" * n),
        st.integers(1, 3_000).map(lambda n: '{"layers": ' + "[" * n + "]" * n + "}"),
        st.sampled_from(
            [
                "",
                "\ufeff{}",
                "{",
                "NaN",
                '{"layers": 1e999}',
                "\x00",
                '{"layers": ' + "9" * 5000 + "}",
            ]
        ),
        st.binary(max_size=8),  # not UTF-8, most often
    )


def _scenario_base(**fields) -> dict:
    return json.loads(Scenario(**fields).to_json())


SCENARIOS = [
    _scenario_base(),
    _scenario_base(hardware="h100", slice_shape=(4, 8), batch=1e6, seq_len=2048, tokens=1e12),
    _scenario_base(
        slice_shape=(4, 4, 4),
        batch=1e6,
        z=4,
        schedule="interleaved",
        virtual_stages=2,
        remat="selective",
        model="llama-3-8b",
        optimal_split=False,
        y=4,
        x=4,
    ),
]
scenario_texts = st.one_of(
    st.sampled_from(SCENARIOS).flatmap(_mutated).map(json.dumps),
    st.sampled_from(SCENARIOS)
    .map(lambda s: {**s, "model": dataclasses.asdict(MODELS["llama-2-7b"])})
    .flatmap(_mutated)
    .map(json.dumps),
    json_values.map(json.dumps),
)


SLICES = {
    "tpu": ["2x2x2", "4x4x4", "16x16x16", "4x8x4"],
    "tpu-2d": ["4x4", "8x16", "16x16"],
    "gpu": ["1x4", "2x8", "16x8"],
}


def _value(draw, flag: str) -> str:
    """Mostly a plausible value, else an edge one or any text."""
    kind = draw(st.integers(0, 9))
    if kind < 7:
        return draw(st.sampled_from(PLAUSIBLE[flag]))
    return draw(st.sampled_from(EDGE) if kind < 9 else st.text(max_size=5))


@st.composite
def command_lines(draw, command: str):
    """An argument list of ``command``: often a cluster that can run first, then random flags."""
    flags = PLAN_FLAGS if command == "plan" else ESTIMATE_FLAGS
    args = [command]
    if draw(st.integers(0, 3)):  # a command that can run, to reach the cost model
        hardware = draw(st.sampled_from(["tpu-v5p", "tpu-v4p", "tpu-v5e", "h100", "gb200-nvl72"]))
        kind = (
            "gpu"
            if HARDWARE[hardware].is_gpu
            else "tpu-2d"
            if len(HARDWARE[hardware].pod_shape) == 2
            else "tpu"
        )
        args += [
            "--model",
            draw(st.sampled_from(list(MODELS))),
            "--hardware",
            hardware,
            "--mesh",
            draw(st.sampled_from(SLICES[kind])),
            "--batch",
            draw(st.sampled_from(["3M", "16M", "1e9"])),
            "--seq-len",
            draw(st.sampled_from(["512", "2048", "4096"])),
        ]
    for flag in draw(st.lists(st.sampled_from(flags + FILE_FLAGS + SWITCHES), max_size=4)):
        if flag in SWITCHES:
            args.append(flag)
        elif flag in FILE_FLAGS:
            args += [
                flag,
                draw(st.sampled_from(["model", "hardware", "missing", "dir", "/dev/null", ""])),
            ]
        else:
            args += [flag, _value(draw, flag)]
    if draw(st.booleans()):
        args.append("--json")
    return args


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def _with_files(args, folder, model_text, hardware_text):
    """The argument list with its file names replaced by files holding the drawn texts."""
    paths = {
        "model": folder / "model.json",
        "hardware": folder / "hardware.json",
        "dir": folder,
        "missing": folder / "missing.json",
    }
    for name, text in (("model", model_text), ("hardware", hardware_text)):
        paths[name].write_bytes(
            text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        )
    return [
        str(paths[a]) if a in paths and i and args[i - 1] in FILE_FLAGS else a
        for i, a in enumerate(args)
    ]


def _numbers(value, where=""):
    """Every number in a JSON value, with where it is (booleans are not numbers)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{where}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield where, value


def _check_record(record: dict):
    for key in ALWAYS:
        assert record[key] is not None, f"{key} is null (NaN or infinite)"
    assert record["memory_per_chip_bytes"]["total"] is not None
    if record["training_tokens"] is not None:
        assert record["training_time_s"] is not None
    for summary in record.get("strategies", {}).values():
        if summary["runs"]:
            assert (
                summary["step_time_s"] is not None and summary["memory_per_chip_bytes"] is not None
            )


def run(argv, capsys):
    """``main(argv)``: exit 0 and a sound report, or exit 2 and one line on stderr."""
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exit_info:
            out, err = capsys.readouterr()
            assert exit_info.code == 2, (exit_info.code, err)
            assert (
                err.startswith("scaling-widgets") and err.endswith("\n") and "\n" not in err[:-1]
            ), err
            assert "Traceback" not in err and out == "", err
            assert "--scenario" in argv or not FIELD_NAMED.search(err), err
            code = None
    event("refused" if code is None else "ran")
    # A warning would be printed on the user's terminal beside the one line (or the report).
    shown = [
        w
        for w in caught
        if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
    ]
    assert not shown, [str(w.message) for w in shown]
    if code is None:
        return
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    if "--json" not in argv:
        assert not NOT_FINITE.search(out), NOT_FINITE.search(out)
        assert not NEGATIVE.search(out), out[max(NEGATIVE.search(out).start() - 200, 0) :]
        return
    data = json.loads(out)
    for where, number in _numbers(data):
        assert math.isfinite(number) and number >= 0, (where, number)
    for record in data.get("layouts", [data]):
        _check_record(record)


TINY_FLOPS = json.dumps({**dataclasses.asdict(HARDWARE["h100"]), "flops": 5e-324})
BASE = ["estimate", "--model", "llama-2-13b", "--batch", "3M"]


@BUDGET
@given(
    args=command_lines("estimate"),
    model_text=_file_text(MODELS),
    hardware_text=_file_text(HARDWARE),
)
# Found by these suites: the field named twice ("--mesh must be slice_shape 32x32x32 does not fit"),
# a denormal chip whose step overflows to infinity (a warning on stderr, null in the JSON).
@example(args=[*BASE, "--mesh", "32x32x32"], model_text="", hardware_text="")
@example(args=[*BASE, "--hardware", "h100", "--mesh", "4x4x4"], model_text="", hardware_text="")
@example(
    args=[*BASE, "--hardware-file", "hardware", "--chips", "16", "--json"],
    model_text="",
    hardware_text=TINY_FLOPS,
)
@example(args=[*BASE, "--hardware", "h100", "--chips", "12"], model_text="", hardware_text="")
def test_estimate_refuses_clearly_or_reports_sound_numbers(
    args, model_text, hardware_text, folder, capsys
):
    run(_with_files(args, folder, model_text, hardware_text), capsys)


@settings(BUDGET, max_examples=150)
@given(
    args=command_lines("plan"), model_text=_file_text(MODELS), hardware_text=_file_text(HARDWARE)
)
def test_plan_refuses_clearly_or_reports_sound_numbers(
    args, model_text, hardware_text, folder, capsys
):
    run(_with_files(args, folder, model_text, hardware_text), capsys)


@settings(BUDGET, max_examples=200)
@given(
    text=scenario_texts,
    json_out=st.booleans(),
    extra=st.sampled_from([[], [], ["--pods", "2"], ["--model", "x"]]),
)
def test_a_scenario_file_is_refused_clearly_or_reported(text, json_out, extra, folder, capsys):
    path = folder / "scenario.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    run(["estimate", "--scenario", str(path), *(["--json"] if json_out else []), *extra], capsys)


MAP_VALUES = {
    "--model": list(MODELS),
    "--hardware": list(HARDWARE),
    "--seq-len": ["512", "4096", "0", "-1", "1e9"],
    "--mfu": ["0.4", "1.5", "0"],
    "--remat": ["none", "full", "checkpoints", "x"],
    "--schedule": ["1f1b", "interleaved", "dualpipe", "x"],
    "--batches": ["64K..1M", "1M..64M", "8M..1M", "1..2", "-1..4M", "1M", "x..y", "0..0"],
    "--chip-range": ["8..64", "8..16K", "4096..40000", "3..5", "64..8", "0..1", "1e9..2e9"],
    "--cells": ["1x1", "2x3", "3x2", "0x2", "65x1", "2by2", "-1x2"],
}


@settings(BUDGET, max_examples=60)
@given(
    picked=st.dictionaries(
        st.sampled_from(sorted(MAP_VALUES)), st.sampled_from(range(8)), max_size=6
    ),
    json_out=st.booleans(),
)
def test_map_refuses_clearly_or_reports_sound_cells(picked, json_out, capsys):
    """``map`` with small grids (at most 3 x 3 unless refused): one line and exit 2, or every
    number in its output finite and non-negative."""
    args = ["map", "--cells", "2x2"]
    for flag, i in picked.items():
        values = MAP_VALUES[flag]
        args += [flag, values[i % len(values)]]
    args += ["--model", "llama-3-8b"] if "--model" not in picked else []
    capsys.readouterr()
    try:
        code = main([*args, *(["--json"] if json_out else [])])
    except SystemExit as exit_info:
        out, err = capsys.readouterr()
        assert exit_info.code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert out == ""
        event("refused")
        return
    event("ran")
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    if not json_out:
        assert not NOT_FINITE.search(out) and not NEGATIVE.search(out), out
        return
    data = json.loads(out)
    for where, number in _numbers(data):
        assert math.isfinite(number) and number >= 0, (where, number)
    assert len(data["cells"]) == len(data["chips"]) <= 3
