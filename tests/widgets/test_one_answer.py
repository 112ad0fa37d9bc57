"""One answer: the panel, the CLI, the planner and the API evaluate the same validated layout
through one path, so a number on screen equals what ``estimate --json`` prints for that layout.

Property tests over random scenarios (hypothesis, derandomized): the panel is built without a
browser, its controls are set as a user would, and what it shows (the memory bars' data, the
summary's text, the controls' values) is compared with the CLI run on the exported scenario and
on the equivalent flags. An impossible change is refused in the panel and by the CLI in the same
words, and changes nothing.
"""

from __future__ import annotations

import io
import json
import math
import os
import shlex
import tempfile
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
from hypothesis import assume, event, example, given, settings
from hypothesis import strategies as st

import scaling_widgets as sw
from scaling_widgets import explore
from scaling_widgets.cli import main
from scaling_widgets.cost import REMAT_POLICIES, SCHEDULES
from scaling_widgets.cost.schedules import SCHEDULES as SCHEDULES_BY_NAME
from scaling_widgets.cost.schedules import runs
from scaling_widgets.cost.stacks import COMPILING, STACKS
from scaling_widgets.cost.strategies import STRATEGIES
from scaling_widgets.cost.views import BAR_PARTS
from scaling_widgets.fields import FIELDS, checked, mended, scenario_start
from scaling_widgets.fields.command import command
from scaling_widgets.presets import MODELS, PRECISIONS
from scaling_widgets.text import report
from scaling_widgets.text.units import batch, nbytes, seconds
from scaling_widgets.widgets.memory_bar import GB, clipped_at
from scaling_widgets.widgets.recommendations import TOP
from scaling_widgets.widgets.scenario import Scenario, ScenarioError

SETTINGS = dict(derandomize=True, deadline=None, max_examples=60)
MODEL_NAMES = ("llama-2-7b", "llama-2-13b", "llama-3-8b", "llama-3-70b")


# ---------------------------------------------------------------------------------------------
# Scenarios


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _heads_ok(model, y: int) -> bool:
    """TP can run (check.runs): Y divides the heads, and the KV heads divide Y or Y them."""
    return model.heads % y == 0 and (y % model.kv_heads == 0 or model.kv_heads % y == 0)


@st.composite
def scenario_fields(draw) -> dict:
    """Fields of a scenario meant to be valid: the batch keeps a whole sequence per data replica
    and microbatch, stages divide the layers and the chips, a hand TP degree divides the heads.
    A few draws are still refused (a ZeRO stage with a strategy, no legal best split): the tests
    skip those. ``_measure`` (popped by ``valid``) asks for a measured step that many times the
    layout's step at peak."""
    name = draw(st.sampled_from(MODEL_NAMES))
    model = MODELS[name]
    hardware = draw(st.sampled_from(("tpu-v5p", "h100", "tpu-v5e")))
    if hardware == "tpu-v5p":
        shape = tuple(draw(st.sampled_from((4, 8, 12, 16))) for _ in range(3))
    elif hardware == "tpu-v5e":
        shape = draw(st.sampled_from(((8, 8), (16, 16))))
    else:
        shape = (draw(st.integers(1, 64)), 8)
    chips = math.prod(shape)
    pods = draw(st.integers(1, 4))
    seq_len = draw(st.sampled_from((1024, 2048, 4096)))
    # the panel's default, twice
    strategy = draw(st.sampled_from(("fsdp+tp", "fsdp+tp", "fsdp", "dp", "tp")))
    stages = [z for z in _divisors(model.layers) if chips % z == 0]
    if strategy == "tp":  # TP puts a whole stage on Y: keep the stages whose chips the heads allow
        stages = [z for z in stages if _heads_ok(model, chips // z)] or stages
    z = draw(st.sampled_from(stages))
    stage = chips // z
    schedule = draw(st.sampled_from(SCHEDULES))
    virtual = 1
    if schedule == "interleaved":
        virtual = draw(st.sampled_from([v for v in (1, 2, 4, 5, 8) if model.layers % (z * v) == 0]))
    virtual = SCHEDULES_BY_NAME[schedule].fixed_chunks or virtual  # a V's two chunks
    microbatches = draw(st.one_of(st.none(), st.integers(1, 8)))
    if microbatches and not runs(schedule=schedule, stages=z, microbatches=microbatches):
        microbatches = None  # one the schedule cannot run (DualPipe's m ≥ 2Z): its own
    m = microbatches or (4 * z if z > 1 else 1)
    optimal = not draw(st.booleans())  # the best split is the simplest draw
    x, y = None, 1
    if strategy == "fsdp+tp" and not optimal:
        y = draw(st.sampled_from([d for d in _divisors(stage) if _heads_ok(model, d)]))
        x = stage // y
    if strategy in ("dp", "fsdp"):
        replicas = stage
    elif strategy == "tp":
        replicas = 1
    elif not optimal:
        replicas = x
    else:  # the best split may take a smaller data axis than the whole stage
        replicas = max(stage // draw(st.sampled_from((1, 2, 4, 8))), 1)
    replicas *= pods
    sequences = replicas * m * draw(st.integers(1, 3)) + draw(st.integers(0, replicas - 1))
    zero = draw(st.sampled_from((None, 0) if strategy == "tp" else (None, 0, 1, 2, 3)))
    stack = draw(st.sampled_from((None, None, *STACKS)))
    compiles = (stack or ("fsdp2" if hardware == "h100" else "maxtext")) in COMPILING
    return dict(
        model=name,
        hardware=hardware,
        slice_shape=shape,
        pods=pods,
        batch=float(sequences * seq_len),
        seq_len=seq_len,
        strategy=strategy,
        zero=zero,
        optimal_split=optimal,
        x=x,
        y=y,
        z=z,
        microbatches=microbatches,
        precision=draw(st.sampled_from(list(PRECISIONS))),
        mfu=draw(st.floats(0.05, 1.0)),
        tokens=draw(st.sampled_from((2e12, 15e12, 3.3e11))),
        attention_flops=draw(st.booleans()),
        remat=draw(st.sampled_from(REMAT_POLICIES)),
        ring_factor=draw(st.booleans()),
        halve_without_wrap=draw(st.booleans()),
        latency=draw(st.one_of(st.just(0.0), st.floats(1e-7, 1e-4))),
        overhead_bytes=draw(st.one_of(st.just(0.0), st.floats(1e8, 2e10))),
        fits_below=draw(st.one_of(st.just(1.0), st.floats(0.5, 1.0))),
        schedule=schedule,
        virtual_stages=virtual,
        sequence_parallel=draw(st.booleans()),
        _measure=draw(st.one_of(st.none(), st.floats(1.01, 4.0))),
        stack=stack,
        flash_attention=draw(st.sampled_from((None, True, False))),
        matmul_dtype=draw(st.sampled_from(("bf16", "fp8"))) if hardware == "h100" else "bf16",
        # on where the stack (the chip's: fsdp2 on the H100, MaxText on a TPU) can compile
        torch_compile=draw(st.sampled_from((None, True, False) if compiles else (None, False))),
    )


def case(**fields) -> dict:
    """Fields for an ``@example``: the scenario's defaults, and no measured step unless asked."""
    return {**scenario_start(), "_measure": None, **fields}


# The chapter's example 16 (in 512-token sequences, so every strategy can run); an H100 cluster
# over two pods, pipelined and interleaved, calibrated by a measured step; a v5e slice by hand,
# counting attention FLOPs (the roofline's token-level curves once refused those: no panel); DP
# over two stages (their 4·Z microbatches once refused the curves' smallest batches: no panel);
# a MoE whose EP group folds over TP x X (expert TP 1), on 256 H100s; Megatron-LM pairing the
# expert all-to-alls of an interleaved pipeline (combined 1F1B).
EXAMPLES = (
    case(model="llama-2-13b", slice_shape=(16, 16, 16), batch=3e6, seq_len=512),
    case(
        model="llama-3-70b",
        hardware="h100",
        slice_shape=(64, 8),
        pods=2,
        batch=16 * 2**20,
        seq_len=4096,
        z=4,
        schedule="interleaved",
        virtual_stages=2,
        remat="selective",
        sequence_parallel=True,
        _measure=1.5,
    ),
    case(
        model="llama-3-8b",
        hardware="tpu-v5e",
        slice_shape=(16, 16),
        batch=2**20,
        seq_len=2048,
        optimal_split=False,
        x=64,
        y=4,
        zero=1,
        microbatches=2,
        attention_flops=True,
        overhead_bytes=2e9,
        fits_below=0.9,
        ring_factor=True,
    ),
    case(
        model="llama-2-7b",
        slice_shape=(4, 12, 16),
        pods=4,
        batch=12 * 2**20,
        seq_len=1024,
        strategy="dp",
        z=2,
        schedule="gpipe",
    ),
    case(
        model="qwen3-235b-a22b",
        hardware="h100",
        slice_shape=(32, 8),
        batch=1024 * 4096,
        seq_len=4096,
        optimal_split=False,
        x=16,
        y=2,
        z=8,
        zero=1,
        ep=32,
        etp=1,
    ),
    case(
        model="mixtral-8x7b",
        hardware="h100",
        slice_shape=(8, 8),
        batch=512 * 4096,
        seq_len=4096,
        strategy="dp",
        zero=1,
        z=4,
        schedule="interleaved",
        virtual_stages=2,
        remat="selective",
        ep=8,
        stack="megatron-lm",
        ep_overlap=True,
    ),
)


def valid(fields: dict) -> dict:
    """The fields if the scenario takes them (else the example is skipped), with the measured
    step filled in: a multiple of what the layout's FLOPs take at the chips' peak."""
    fields = dict(fields)
    measure = fields.pop("_measure")
    try:
        s = Scenario(**fields)
    except ScenarioError:
        assume(False)
    if measure is not None:
        e = s.estimate()
        at_peak = e.batch * e.hardware_flops_per_token / (e.chips * e.chip.flops)
        fields["measured_step_time"] = float(at_peak) * measure
    return fields


# ---------------------------------------------------------------------------------------------
# The CLI, in process


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue(), err.getvalue()


def cli_json(argv: list[str]) -> dict:
    code, out, err = run_cli([*argv, "--json"])
    assert code == 0 and err == "", err
    return json.loads(out)


def exported_json(panel) -> dict:
    """``estimate --scenario FILE --json`` on what the panel's export holds."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scenario.json")
        with open(path, "w") as f:
            f.write(panel.export.value)
        return cli_json(["estimate", "--scenario", path])


def flags_of(scenario) -> list[str] | None:
    """The ``estimate`` flags ``command`` writes for the scenario, without the program's name."""
    text = command(*scenario.values())
    return None if text is None else shlex.split(text)[1:]


def with_flags(words: list[str], **flags) -> list[str]:
    """``words`` with some flags set (``pp="64"`` for --pp 64), replaced where given already."""
    words = list(words)
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if flag in words:
            words[words.index(flag) + 1] = value
        else:
            words += [flag, value]
    return words


def assert_close(a, b, rel=1e-9, where="") -> None:
    """Two JSON records equal: names and flags exactly, numbers to ``rel``."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_close(a[k], b[k], rel, f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b)):
            assert_close(u, v, rel, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, rel=rel, abs=1e-300), where
    else:
        assert a == b, where


# ---------------------------------------------------------------------------------------------
# 1. A valid scenario: what the panel shows is what estimate --json prints


def assert_panel_shows(panel, data: dict) -> None:
    """The panel's estimate and what it draws and writes equal the CLI's JSON ``data``."""
    s, analysis = panel.scenario, panel.analysis
    e = analysis.estimate
    assert analysis.error == ""
    # The estimate the panel holds is the CLI's own, number for number.
    assert report.record(e) == {k: v for k, v in data.items() if k != "strategies"}
    memory, peak = data["memory_per_chip_bytes"], data["peak_memory_bytes"]
    assert float(e.step_time) == data["step_time_s"] and float(e.memory.total) == memory["total"]
    assert float(e.peak.reserved) == peak["reserved"]
    assert (float(e.mfu), float(e.hfu), float(e.bubble)) == (
        data["mfu"],
        data["hfu"],
        data["bubble"],
    )
    assert (bool(e.fits), bool(e.compute_bound)) == (data["fits"], data["compute_bound"])
    layout = data["layout"]
    xyz = (layout["X"], layout["Y"], layout["Z"])
    assert (int(e.x), int(e.y), int(e.z) // int(e.layout.pp_pods)) == xyz  # a pod's groups
    # The controls show that layout.
    chosen, placed = panel.strategy_selector.value, panel.mesh_picker.value
    assert (chosen["x"], chosen["y"], chosen["z"]) == xyz and (
        placed["x"],
        placed["y"],
        placed["z"],
    ) == xyz
    assert chosen["microbatches"] == layout["microbatches"] and chosen["zero"] == data["zero_stage"]
    assert panel.training._batch._text.value == batch(data["batch_tokens"])
    predicted = s.mfu is None  # the step predicted: the box ticked, the MFU slider off
    assert (
        panel.training._step._predict.value == predicted
        and panel.training._step._mfu.disabled == (predicted or s.measured_step_time is not None)
    )
    assert predicted or panel.training._step._mfu.value == s.mfu
    assert panel.exactness._fits_below.value == s.fits_below
    assert (placed["mx"], placed["my"]) == (layout["M_X"], layout["M_Y"])
    # The memory bars: the current strategy's peak by part, in GB, and its total above it.
    bars, mem = panel.memory_bar._bars, panel.memory_bar.data
    assert [str(x).removeprefix("● ") for x in bars.x] == [
        STRATEGIES[name].label for name in mem.strategies
    ]
    i = mem.strategies.index(s.strategy)
    assert str(bars.x[i]).startswith("● ")  # the current layout's bar is marked
    # A bar far above HBM is clipped at the top of the scale, its parts in proportion; its label
    # still gives the whole value, with "▲".
    top = clipped_at(mem)
    clipped = peak["reserved"] / GB > top
    parts = np.array([sum(peak[k] for k in kinds) for kinds in BAR_PARTS.values()])
    parts = parts / GB * (top / (peak["reserved"] / GB) if clipped else 1)
    assert np.allclose(np.asarray(bars.y)[:, i], parts, rtol=1e-12) and (
        not clipped or parts.sum() == pytest.approx(top)
    )
    # named by its layout (in the tooltip)
    assert mem.labels[i] == data["layout_name"].split(", ")[0]
    total_text = panel.memory_bar._totals.text[i]
    over = {"fits": "", "tight": " tight", "does not fit": " too big"}[data["memory_verdict"]]
    assert total_text == nbytes(peak["reserved"]) + over + (" ▲" if clipped else "")
    # The other strategies' bars are the JSON's strategies; one that cannot run is an empty bar
    # saying so.
    for j, name in enumerate(mem.strategies):
        entry = data["strategies"][name]
        if name == s.strategy:
            continue
        assert entry["runs"] == (panel.memory_bar._totals.text[j] != "cannot run"), name
        column = np.asarray(bars.y)[:, j] * GB
        if entry["runs"]:
            shown = min(entry["peak_bytes"], top * GB)  # clipped at the top of the scale
            assert column.sum() == pytest.approx(shown, rel=1e-12), name
            assert analysis.strategies[name].step_time == entry["step_time_s"], name
        else:
            assert not column.any() and entry["why"] == str(analysis.strategies[name]), name
    # The summary prints the same step, memory and utilisation.
    summary = panel.summary.value
    assert seconds(data["step_time_s"]) in summary
    assert (
        f"= {nbytes(peak['reserved'])} reserved" in summary
        and f"of {nbytes(data['usable_hbm_bytes'])}" in summary
    )
    assert f"{100 * data['mfu']:.1f}" in summary
    assert ("DOES NOT FIT" in summary) == (data["memory_verdict"] == "does not fit")


@settings(**SETTINGS)
@given(scenario_fields())
@example(EXAMPLES[0])
@example(EXAMPLES[1])
@example(EXAMPLES[2])
@example(EXAMPLES[3])
@example(EXAMPLES[4])
@example(EXAMPLES[5])
def test_the_panel_shows_what_estimate_json_prints(fields):
    fields = valid(fields)
    panel = explore(**fields)
    hand = fields["strategy"] == "fsdp+tp" and not fields["optimal_split"]
    event(f"{fields['hardware']}, {fields['strategy']}{' by hand' if hand else ''}")
    event("pipelined" if fields["z"] > 1 else "one stage")
    event("a measured step" if fields.get("measured_step_time") else "at the MFU")
    data = exported_json(panel)
    assert_panel_shows(panel, data)
    # The same layout given as flags gives the same numbers (a float written in decimal, rel 1e-9).
    flags = flags_of(panel.scenario)
    assert flags is not None  # every value here has a flag
    assert_close(data, cli_json(flags))
    # And the API, called on the scenario's values directly.
    assert report.record(panel.scenario.estimate()) == {
        k: v for k, v in data.items() if k != "strategies"
    }


# ---------------------------------------------------------------------------------------------
# 2. A picked recommendation: the panel shows that row's step and memory exactly


@settings(**{**SETTINGS, "max_examples": 50})
@given(scenario_fields(), st.integers(0, TOP - 1))
@example(EXAMPLES[0], 3)
@example(EXAMPLES[1], 0)
def test_a_picked_recommendation_shows_its_own_step_and_memory(fields, row):
    panel = explore(**valid(fields))
    rec = panel.recommendations
    rec._on_run_click()
    if rec._message.text:  # no layout the planner tries runs here, or none fits: it says so
        assert rec.plan is None and rec.rows == [], rec._message.text
        event(f"planner refused: {rec._message.text.split(' ')[0]}")
        assume(False)
    rank = rec.rows[
        min(row, len(rec.rows) - 1)
    ].rank  # the rows listed: the best ten groups, or all that fit
    rec._cells[rank][-1].children[0].click()  # "use"
    # the planner's row is a layout the scenario takes
    assert rec._message.text == "", rec._message.text
    plan, s = rec.plan, panel.scenario
    index = plan.order[rank]
    step, memory = float(plan.step_time[index]), float(plan.memory[index])
    knobs = plan.layout(rank)
    assert (
        {k: getattr(s, k) for k in knobs} == knobs
        and s.strategy == "fsdp+tp"
        and not s.optimal_split
    )
    # The panel's estimate and the CLI's JSON of the scenario now are that row, exactly.
    e = panel.analysis.estimate
    assert float(e.step_time) == step and float(e.peak.reserved) == memory
    exported = exported_json(panel)
    assert exported["step_time_s"] == step and exported["peak_memory_bytes"]["reserved"] == memory
    assert report.record(plan.estimate(rank)) == {
        k: v for k, v in exported.items() if k != "strategies"
    }
    assert_panel_shows(panel, exported)
    # The row's label and the summary write the same step and memory.
    cells = [cell.value for cell in rec._cells[rank][:-1]]
    assert (
        f">{seconds(step)}<" in cells[2] and f">{nbytes(memory)}<" in cells[4] and "●" in cells[0]
    )
    assert (
        seconds(step) in panel.summary.value
        and f"= {nbytes(memory)} reserved" in panel.summary.value
    )


# ---------------------------------------------------------------------------------------------
# 3. An impossible change: refused inline, nothing changes, and the CLI says the same


def _must_be(text: str) -> tuple[str, str]:
    field, _, rest = text.partition(" must be ")
    assert rest, text
    return field, rest


def _pin_the_split(panel) -> None:
    """Switch FSDP + TP's best split to the same split by hand (a valid change)."""
    s, selector = panel.scenario, panel.strategy_selector
    if s.strategy == "fsdp+tp" and s.optimal_split:
        selector._optimal.value = False
        assert selector._message.text == "" and not s.optimal_split


def _tp_not_dividing_heads(panel, data):
    s, selector = panel.scenario, panel.strategy_selector
    selector._strategy.value = "fsdp+tp"  # the split by hand is FSDP + TP's
    assume(selector._message.text == "")
    _pin_the_split(panel)
    m = int(panel.analysis.estimate.microbatches)
    enough = lambda x: s.batch >= s.seq_len * x * s.pods * m  # noqa: E731  (else the batch is refused first)
    bad = [(x, y) for x, y in panel.analysis.mesh.splits if not _heads_ok(s.model, y) and enough(x)]
    assume(bad)
    x, y = data.draw(st.sampled_from(bad), label="split")
    return (
        selector,
        lambda: setattr(selector._split, "value", (x, y)),
        {"fsdp": str(x), "tp": str(y)},
        {"y"},
    )


def _more_stages_than_layers(panel, data):
    s, selector = panel.scenario, panel.strategy_selector
    layers, chips = s.model.layers, s.chips
    dividing = [z for z in _divisors(chips) if z > layers]
    z = data.draw(
        st.sampled_from(dividing) if dividing else st.integers(layers + 1, 4 * layers), label="z"
    )
    flags = {"pp": str(z)}
    if "--fsdp" in flags_of(s):  # a split by hand: the selector keeps TP and gives X what is left
        whole = chips % z == 0 and (chips // z) % s.y == 0
        flags["fsdp"] = str(chips // z // s.y if whole else max(chips // (s.y * z), 1))
    return selector, lambda: setattr(selector._stages, "value", z), flags, {"z", "virtual_stages"}


def _no_context_parallelism(panel):
    """CP 1 asked for: else the smallest CP that keeps sequences whole would make room."""
    panel.strategy_selector._cp.value = 1
    assume(panel.strategy_selector._message.text == "")


def _too_many_microbatches(panel, data):
    s, selector = panel.scenario, panel.strategy_selector
    _no_context_parallelism(panel)
    _pin_the_split(panel)  # else the best split would take a smaller data axis to make room
    e = panel.analysis.estimate
    per_replica = s.batch / (s.seq_len * int(e.x) * s.pods)
    m = math.floor(per_replica) + data.draw(st.integers(1, 3), label="extra microbatches")
    return (
        selector,
        lambda: setattr(selector._microbatches, "value", m),
        {"microbatches": str(m)},
        {"microbatches"},
    )


def _batch_below_a_sequence_per_replica(panel, data):
    s, training = panel.scenario, panel.training
    _no_context_parallelism(panel)
    e = panel.analysis.estimate
    # Fewer tokens than a sequence for each data replica; with the best split, for even one.
    replicas = 1 if s.strategy == "fsdp+tp" and s.optimal_split else int(e.x)
    batch = data.draw(st.integers(1, s.seq_len * replicas * s.pods - 1), label="batch")
    # a batch rounds up to a whole sequence: where a legal split has one replica, it runs
    assume(_refused({**s.state(), "batch": batch}, ("batch",)))
    return (
        training,
        lambda: setattr(training._batch._text, "value", str(batch)),
        {"batch": str(batch)},
        {"batch"},
    )


def _refused(state: dict, changed: tuple) -> bool:
    try:
        checked(state, changed)
    except ValueError:
        return True
    return False


def _more_virtual_stages_than_layers(panel, data):
    s, selector = panel.scenario, panel.strategy_selector
    if s.schedule != "interleaved":
        selector._schedule.value = "interleaved"
        assume(selector._message.text == "")
    z = s.z if not s.axis_roles else panel.analysis.mesh.z
    v = data.draw(st.integers(max(2, s.model.layers // z + 1), s.model.layers // z + 64), label="v")
    flags = {"schedule": "interleaved", "virtual_stages": str(v)}
    return selector, lambda: setattr(selector._virtual, "value", v), flags, {"virtual_stages"}


def _bad_axis_length(panel, data):
    s, picker = panel.scenario, panel.mesh_picker
    pod = s.hardware.pod_shape
    axis = (
        0 if s.hardware.is_gpu else data.draw(st.integers(0, len(s.slice_shape) - 1), label="axis")
    )
    # the nodes of a GPU cluster; a TPU pod's longest axis
    longest = pod[0] if s.hardware.is_gpu else max(pod)
    n = data.draw(st.integers(longest + 1, 2 * longest), label="n")
    shape = tuple(n if i == axis else length for i, length in enumerate(s.slice_shape))
    fitted = {**s.state(), **mended(s.state(), {"slice_shape": shape})[0]}
    flags = {"mesh": "x".join(map(str, shape)), "pp": str(fitted["z"])}
    if "--fsdp" in flags_of(s):
        flags.update(fsdp=str(fitted["x"]), tp=str(fitted["y"]))
    return picker, lambda: setattr(picker._axes.children[axis], "value", n), flags, {"slice_shape"}


IMPOSSIBLE = {
    "tp not dividing the heads": _tp_not_dividing_heads,
    "more stages than layers": _more_stages_than_layers,
    "more microbatches than sequences per replica": _too_many_microbatches,
    "batch below a sequence per replica": _batch_below_a_sequence_per_replica,
    "more virtual stages than layers": _more_virtual_stages_than_layers,
    "an axis longer than the pod's": _bad_axis_length,
}


@pytest.mark.parametrize("kind", IMPOSSIBLE)
@settings(**{**SETTINGS, "max_examples": 15})
@given(fields=scenario_fields(), data=st.data())
def test_an_impossible_change_is_refused_in_the_same_words_and_changes_nothing(kind, fields, data):
    panel = explore(**valid(fields))
    event(f"{fields['hardware']}, {fields['strategy']}")
    control, change, flags, fields_named = IMPOSSIBLE[kind](panel, data)
    s = panel.scenario
    before = (
        s.state(),
        s.to_json(),
        s.revision,
        panel.summary.value,
        panel.export.value,
        panel.analysis.estimate,
    )
    words = with_flags(flags_of(s), **flags)  # the equivalent command, before the change
    change()
    # Refused in the panel, inline, naming the field; the control shows the scenario again.
    message = control._message.text
    field, rest = _must_be(message)
    assert field in fields_named, message
    event(f"refused: {message.split('; got')[0][:60]}")
    after = (
        s.state(),
        s.to_json(),
        s.revision,
        panel.summary.value,
        panel.export.value,
        panel.analysis.estimate,
    )
    assert after[:5] == before[:5] and after[5] is before[5]
    assert panel.strategy_selector._stages.value == panel.analysis.mesh.z
    assert panel.strategy_selector._microbatches.value == int(panel.analysis.estimate.microbatches)
    assert panel.strategy_selector._split.value in (
        None,
        (panel.analysis.mesh.x, panel.analysis.mesh.y),
    )
    assert panel.strategy_selector._virtual.value == s.virtual_stages
    assert tuple(box.value for box in panel.mesh_picker._axes.children) == s.slice_shape
    assert panel.training._batch._text.value == batch(s.batch)
    # The CLI given the same change as flags: exit 2, one line, the same sentence after its flag.
    code, out, err = run_cli(words)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    flag = FIELDS[field].flag if field in FIELDS else field
    assert err == f"scaling-widgets estimate: error: {flag} must be {rest}\n"


def test_a_split_in_the_command_lines_names_is_the_same_by_hand_split_everywhere():
    # tp=4 given to the panel, the API or the CLI: TP 4 by hand, the data axis the rest.
    where = dict(model="llama-3-70b", hardware="h100", chips=1024, batch="4M", tp=4)
    shown = explore(**where).analysis.estimate
    api = sw.estimate(**where)
    code, out, _ = run_cli(
        ["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "1024",
         "--batch", "4M", "--tp", "4", "--json"]
    )  # fmt: skip
    cli = json.loads(out)
    assert code == 0 and (int(shown.x), int(shown.y)) == (int(api.x), int(api.y)) == (256, 4)
    assert float(shown.step_time) == float(api.step_time) == cli["step_time_s"]


def test_the_panel_explore_the_cli_and_the_api_start_from_the_same_step():
    # No MFU given anywhere: each predicts the step, at the same split and microbatches.
    where = dict(model="llama-3-70b", hardware="h100", chips=1024, batch="16M", seq_len="8k")
    panel = explore(**where)
    shown = panel.analysis.estimate
    api = sw.estimate(**where)
    code, out, _ = run_cli(
        ["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "1024",
         "--batch", "16M", "--seq-len", "8k", "--json"]
    )  # fmt: skip
    cli = json.loads(out)
    assert code == 0 and shown.step_breakdown is not None and api.step_breakdown is not None
    assert float(shown.step_time) == float(api.step_time) == cli["step_time_s"]
    layout = cli["layout"]
    assert (layout["X"], layout["Y"], layout["microbatches"]) == (
        int(shown.x),
        int(shown.y),
        int(shown.microbatches),
    )
