"""A predicted step as a Chrome/Perfetto trace: the Trace Event Format, a process per pipeline
stage with compute and communication apart, the bubble drawn, and each stage's events adding up to
the step."""

import collections
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import step_trace
from scaling_widgets.cli import main
from scaling_widgets.cost import estimate
from scaling_widgets.cost.schedules import SCHEDULES, runs
from scaling_widgets.presets import HARDWARE, MODELS

LAYOUT = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], slice_shape=(32, 8),
              batch=2**22, seq_len=8192, x=8, y=8, z=4, zero=1)  # fmt: skip


def per_stage(trace: dict) -> dict:
    """Seconds of events each stage holds, and the events of each (stage, track)."""
    total = collections.defaultdict(float)
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            total[event["pid"]] += event["dur"] / 1e6
    return total


def test_the_format_is_the_trace_event_format():
    trace = json.loads(json.dumps(step_trace(estimate(**LAYOUT, microbatches=16))))
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert {e["tid"] for e in complete} == {"compute", "communication"}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["name"], str) for e in complete)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {"stage 0", "stage 1", "stage 2", "stage 3"}
    # the bubble is drawn: the first stage waits at the end, the last at the start
    idle = [e for e in complete if e["name"] == "idle"]
    assert {e["pid"] for e in idle} == {0, 1, 2, 3}


@settings(max_examples=25, deadline=None)
@given(schedule=st.sampled_from(list(SCHEDULES)), m=st.sampled_from([8, 16, 32]))
def test_each_stages_events_add_up_to_the_predicted_step(schedule, m):
    chunks = SCHEDULES[schedule].fixed_chunks or (2 if schedule == "interleaved" else 1)
    if not runs(schedule=schedule, stages=4, microbatches=m):
        return
    e = estimate(**LAYOUT, microbatches=m, schedule=schedule, virtual_stages=chunks)
    totals = per_stage(step_trace(e))
    assert len(totals) == 4
    for seconds in totals.values():
        assert seconds == pytest.approx(float(e.step_time), rel=1e-9)


def test_one_stage_and_the_chapters_step_at_a_given_mfu():
    e = estimate(**{**LAYOUT, "x": 32, "z": 1}, microbatches=4)
    assert per_stage(step_trace(e))[0] == pytest.approx(float(e.step_time), rel=1e-9)
    given = estimate(**LAYOUT, microbatches=16, mfu=0.4)  # no breakdown: compute and comm
    assert per_stage(step_trace(given))[3] == pytest.approx(float(given.step_time), rel=1e-9)


def test_the_command_line_writes_the_trace(tmp_path, capsys):
    path = tmp_path / "trace.json"
    flags = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "256", "--batch", "4M",
             "--seq-len", "8192", "--tp", "8", "--pp", "4", "--trace", str(path),
             "--json"]  # fmt: skip
    assert main(["estimate", *flags]) == 0
    step = json.loads(capsys.readouterr().out)["step_time_s"]
    assert per_stage(json.loads(path.read_text()))[0] == pytest.approx(step, rel=1e-9)
