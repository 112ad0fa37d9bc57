"""Recommendations in the panel: plan, pick a row, and the panel shows that row's layout; a plan
for other inputs is stale."""

import math
import re

import scaling_widgets as sw
from scaling_widgets.widgets import Recommendations
from scaling_widgets.widgets.recommendations import COLUMNS
from scaling_widgets.widgets.scenario import Scenario

from .examples import EXAMPLE_16


def test_recommendations_plan_and_apply_a_row():
    panel = sw.explore(**EXAMPLE_16)
    table = panel.recommendations
    table._run.click()
    assert len(table.rows) == 10 and "layouts evaluated" in table._summary.value
    memory = panel.memory_bar.data
    third = table.rows[2].rank
    table._cells[third][-1].children[0].click()  # its "use" button (then "pin")
    chosen = table.plan.layout(third)
    s = panel.scenario
    assert (s.x, s.y, s.z, s.zero, s.optimal_split) == (
        chosen["x"],
        chosen["y"],
        chosen["z"],
        chosen["zero"],
        False,
    )
    assert panel.memory_bar.data is not memory and (
        int(panel.analysis.estimate.x),
        int(panel.analysis.estimate.y),
    ) == (
        chosen["x"],
        chosen["y"],
    )


def test_recommendations_say_what_an_impossible_cluster_would_need():
    table = Recommendations(
        Scenario(model="llama-3-405b", hardware="tpu-v5e", slice_shape=(2, 2), batch=1e5)
    )
    table._run.click()
    assert (
        "no layout of LLaMA-3 405B fits on 4 TPU v5e chips" in table._message.text
        and table.rows == []
    )
    assert table._table.children == ()


def test_a_recommendation_on_another_axis_order_rewrites_the_slice():
    # 256-token sequences (3906): enough for whole-pod layouts in every order of the axes
    # (8192-token ones, 122, could run no layout of a whole pod).
    panel = sw.explore(
        model="llama-3-70b",
        hardware="tpu-v5p",
        slice_shape=(16, 20, 28),
        batch=1e6,
        seq_len=256,
        mfu=0.4,  # ranked by the chapter's step: compute-bound layouts first
    )
    table = panel.recommendations
    table._run.click()
    labels = {row.rank: table._cells[row.rank][1].value for row in table.rows}
    other = next(rank for rank, label in labels.items() if " on " in label)  # another order
    order = tuple(int(n) for n in re.search(r" on (\d+)x(\d+)x(\d+)", labels[other]).groups())
    assert sorted(order) == [16, 20, 28] and order != (16, 20, 28)
    table.pick(other)
    assert panel.scenario.slice_shape == order  # the slice as the row orders its axes
    assert panel.scenario.to_json() and panel.recommendations.current() == other


def test_a_plan_for_other_inputs_is_marked_stale_and_cannot_be_picked():
    panel = sw.explore(**EXAMPLE_16)
    table = panel.recommendations
    table._run.click()
    table.pick(1)
    assert not table.stale  # picking a row changes the layout, not what was planned for
    before = panel.scenario.to_json()
    panel.scenario.update(batch=panel.scenario.batch * 2)
    use, pin = table._cells[0][-1].children
    assert table.stale and use.disabled and pin.disabled and "plan again" in table._summary.value
    changed = panel.scenario.to_json()
    table.pick(0)  # a stale row applies nothing
    assert panel.scenario.to_json() == changed != before
    table._run.click()
    assert not table.stale and not table._cells[0][-1].children[0].disabled


def test_the_table_sorts_by_any_column_and_marks_the_scenarios_own_row():
    panel = sw.explore(**EXAMPLE_16)
    table = panel.recommendations
    table._run.click()
    shown = lambda: [table._table.children.index(table._cells[r.rank][0]) for r in table.rows]  # noqa: E731
    assert shown() == sorted(shown())  # best first to start
    table._headers["memory"].click()

    def on_show():
        return sorted(
            table.rows, key=lambda r: table._table.children.index(table._cells[r.rank][0])
        )

    memory = [r.memory for r in on_show()]
    assert memory == sorted(memory) and table._headers["memory"].description == "memory/chip ▲"
    table._headers["memory"].click()  # again: the other way
    memory = [r.memory for r in on_show()]
    assert memory == sorted(memory, reverse=True)
    texts = "".join(cell.value for cells in table._cells.values() for cell in cells[:-1])
    assert table.current() is None and "●" not in texts
    row = table.rows[3]
    table.pick(row.rank)
    assert table.current() == row.rank and table._cells[row.rank][0].value.count("●") == 1
    assert "font-weight:bold" in table._cells[row.rank][2].value


def test_near_identical_layouts_share_one_row():
    panel = sw.explore(**EXAMPLE_16)
    table = panel.recommendations
    table._run.click()
    assert (
        sum(len(row.alike) for row in table.rows) > 0 and "near-identical" in table._summary.value
    )
    split = lambda knobs: (knobs["x"], knobs["y"], knobs["z"], knobs["slice_shape"])  # noqa: E731
    for row in table.rows:
        for (
            rank
        ) in row.alike:  # folded in: the same split, the same step to half a percent, a worse rank
            e = table.plan.estimate(rank)
            assert split(table.plan.layout(rank)) == split(row.knobs) and rank > row.rank
            assert abs(float(e.step_time) / row.step - 1) <= 0.005
    rows = [(split(r.knobs), round(r.step, 4)) for r in table.rows]
    assert len(set(rows)) == len(rows)  # no two rows left that say the same


def test_with_tokens_and_a_price_each_row_shows_its_runs_time_cost_and_energy_and_sorts_by_them():
    # a user choosing a layout by money and energy, not only by the step
    panel = sw.explore(model="llama-3-8b", hardware="h100", chips=64, batch=2**20, seq_len=8192,
                       tokens=1e12, price_per_chip_hour=2.5)  # fmt: skip
    table = panel.recommendations
    table._run.click()
    best = table.rows[0]
    run = table.plan.estimate(best.rank).run
    assert (best.wall, best.cost, best.energy) == (run.wall, run.cost, run.energy)
    texts = [cell.value for cell in table._cells[best.rank][6:9]]
    assert all("-" not in text.split(">")[1] for text in texts)
    table.sort_by("cost")
    shown = list(table._table.children)  # the rows as drawn, cheapest first
    drawn = sorted(table.rows, key=lambda row: shown.index(table._cells[row.rank][0]))
    costs = [row.cost for row in drawn]
    assert costs == sorted(costs) and costs != [row.cost for row in table.rows[::-1]]
    assert table._headers["cost"].description == "cost ▲" and "cost" in COLUMNS


def test_without_tokens_the_runs_columns_say_so_and_sort_last():
    table = Recommendations(Scenario(model="llama-3-8b", hardware="tpu-v5e", slice_shape=(4, 4),
                                     batch=2**20, tokens=None))  # fmt: skip
    table._run.click()
    assert all(math.isnan(row.cost) for row in table.rows)
    assert ">-</span>" in table._cells[table.rows[0].rank][7].value


def test_a_row_picked_from_a_scenario_with_a_group_across_pods_is_the_rows_own_layout():
    # a plan's rows hold no TP, EP or CP across pods: picking one leaves none behind
    s = Scenario(model="llama-3-8b", hardware="tpu-v5p", slice_shape=(4, 8, 8), pods=8,
                 batch=2**26, seq_len=2**17, strategy="fsdp", cp=4, cp_pods=2)  # fmt: skip
    table = Recommendations(s)
    table._run.click()
    picked = table.row_scenario(2)
    assert picked.cp_pods == 1
    assert float(picked.estimate().step_time) == float(table.plan.estimate(2).step_time)
