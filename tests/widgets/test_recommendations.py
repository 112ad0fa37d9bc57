"""Recommendations in the panel: plan, pick a row, and the panel shows that row's layout; a plan
for other inputs is stale."""

import scaling_widgets as sw
from scaling_widgets.widgets import Recommendations
from scaling_widgets.widgets.scenario import Scenario

from .examples import EXAMPLE_16


def test_recommendations_plan_and_apply_a_row():
    panel = sw.explore(**EXAMPLE_16)
    table = panel.recommendations
    table._run.click()
    assert len(table._rows.options) == 10 and "layouts evaluated" in table._summary.value
    memory = panel.memory_bar.data
    table._rows.value = 2  # the third best
    chosen = table.plan.layout(2)
    s = panel.scenario
    assert (s.x, s.y, s.z, s.zero, s.optimal_split) == (chosen["x"], chosen["y"], chosen["z"], chosen["zero"], False)
    assert panel.memory_bar.data is not memory and (int(panel.analysis.estimate.x), int(panel.analysis.estimate.y)) == (
        chosen["x"],
        chosen["y"],
    )


def test_recommendations_say_what_an_impossible_cluster_would_need():
    table = Recommendations(Scenario(model="llama-3-405b", hardware="tpu-v5e", slice_shape=(2, 2), batch=1e5))
    table._run.click()
    assert "no layout of LLaMA-3 405B fits on 4 TPU v5e chips" in table._message.text and table._rows.options == ()


def test_a_recommendation_on_another_axis_order_rewrites_the_slice():
    # 256-token sequences (3906): enough for FSDP 2240 x TP 4 in the order given and 1120 x 8 in
    # another (8192-token ones, 122, could run no layout of a whole pod).
    panel = sw.explore(model="llama-3-70b", hardware="tpu-v5p", slice_shape=(16, 20, 28), batch=1e6, seq_len=256)
    table = panel.recommendations
    table._run.click()
    assert "on 20x28x16" in table._rows.options[0][0]  # TP takes the 16 axis, the last in that order
    table._rows.value = 0
    assert panel.scenario.slice_shape == (20, 28, 16) and bool(panel.analysis.estimate.compute_bound)


def test_a_plan_for_other_inputs_is_marked_stale_and_cannot_be_picked():
    panel = sw.explore(**EXAMPLE_16)
    table = panel.recommendations
    table._run.click()
    table._rows.value = 1
    assert not table.stale  # picking a row changes the layout, not what was planned for
    before = panel.scenario.to_json()
    panel.scenario.update(batch=panel.scenario.batch * 2)
    assert table.stale and table._rows.disabled and "plan again" in table._summary.value
    changed = panel.scenario.to_json()
    table._rows.value = 0  # a stale row applies nothing
    assert panel.scenario.to_json() == changed != before
    table._run.click()
    assert not table.stale and not table._rows.disabled
