"""The panel keeps what a change leaves as it was (the roofline's curves, the other strategies'
estimates) and never shows a stale number: after any run of changes, what it shows equals a fresh
evaluation of the scenario with nothing kept."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cost import views
from scaling_widgets.cost.views.curves import _curve
from scaling_widgets.widgets.analysis import Analysis, evaluate_scenario
from scaling_widgets.widgets.scenario import Scenario, ScenarioError

START = dict(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(8, 8, 8), batch=2**21,
             seq_len=2048)  # fmt: skip
CHANGES = st.sampled_from(
    [
        {"batch": 2**22},
        {"batch": 3e6},
        {"batch": 2**27},  # past the grid's decade: new curves
        {"strategy": "fsdp"},
        {"strategy": "dp"},
        {"strategy": "fsdp+tp"},
        {"strategy": "fsdp+tp", "optimal_split": False, "x": 128, "y": 4},
        {"zero": 1},
        {"zero": None},
        {"z": 2},
        {"z": 1},
        {"ring_factor": True},
        {"ring_factor": False},
        {"hardware": "tpu-v5e", "slice_shape": (16, 16)},
        {"hardware": "tpu-v5p", "slice_shape": (8, 8, 8)},
        {"model": "llama-3-8b"},
        {"remat": "full"},
        {"seq_len": 4096},
    ]
)


def shown(r: views.RooflineData, m: views.MemoryData) -> tuple:
    """What the roofline and the memory bars draw."""
    curves = {name: np.nan_to_num(c["both"]).tolist() for name, c in r.comm.items()}
    bars = {
        name: (e.step_time.item(), e.peak.reserved.item()) if hasattr(e, "peak") else str(e)
        for name, e in zip(m.strategies, m.estimates)
    }
    point = {p: np.nan_to_num(v).tolist() for p, v in r.current.items()}  # NaN: nothing moves
    return r.batch.tolist(), curves, r.crossover, point, m.parts.tolist(), bars


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(CHANGES, min_size=1, max_size=6))
def test_what_the_panel_keeps_is_what_a_fresh_evaluation_gives(changes):
    s = Scenario(**START)
    analysis = Analysis.of(s)
    for change in changes:
        try:
            s.update(**change)
        except ScenarioError:
            continue
        kept = shown(analysis.roofline, analysis.memory)
        _curve.cache_clear()  # nothing kept: every curve and strategy evaluated again
        current, _, roofline, memory, _ = evaluate_scenario(s)
        assert kept == shown(roofline, memory)
        assert analysis.estimate.step_time.item() == current.step_time.item()
        # and the kept curve of the layout in use turns compute-bound where its estimate does
        r = analysis.roofline
        assert r.crossover[r.current_curve] == pytest.approx(float(current.crossover_batch))
