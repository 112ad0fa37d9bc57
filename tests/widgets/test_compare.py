"""Pinned scenarios side by side: the numbers are each scenario's own ``estimate --json``, the
panel's table is the command line's, and a fifth pin drops the oldest."""

import io
import json
from contextlib import redirect_stdout

import scaling_widgets as sw
from scaling_widgets.cli import main


def cli_json(argv) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


def test_the_comparison_holds_each_scenarios_own_numbers(tmp_path):
    panel = sw.explore(model="llama-3-70b", hardware="h100", chips=256, batch=2**22, seq_len=8192,
                       tokens=15e12, strategy="fsdp+tp")  # fmt: skip
    paths = []
    for tp in (2, 8):
        panel.scenario.update(tp=tp)
        panel.compare.pin()
        paths.append(tmp_path / f"tp{tp}.json")
        paths[-1].write_text(panel.scenario.to_json())
    pinned = panel.compare.value
    assert [json.loads(p)["y"] for p in pinned] == [2, 8]
    table = cli_json(["compare", *map(str, paths), "--json"])
    rows = {row["name"]: row for row in table["rows"]}
    for i, path in enumerate(paths):
        record = cli_json(["estimate", "--scenario", str(path), "--json"])
        assert rows["step"]["values"][i] == record["step_time_s"]
        assert rows["peak: reserved"]["values"][i] == record["peak_memory_bytes"]["reserved"]
        assert rows["run: wall clock"]["values"][i] == record["run"]["wall_s"]
    assert rows["step"]["differs"] and not rows["model"]["differs"]
    # the panel's table is the command line's, named A and B
    assert panel.compare._table.value.count('class="sw-differs"') == sum(
        row["differs"] for row in table["rows"]
    )
    assert "<th>A</th><th>B</th>" in panel.compare._table.value


def test_a_fifth_pin_drops_the_oldest_and_unpinning_clears():
    panel = sw.explore(model="llama-2-13b", slice_shape=(16, 16, 16), batch=3e6)
    for batch in (3e6, 4e6, 5e6, 6e6, 7e6):
        panel.scenario.update(batch=batch)
        panel.compare.pin()
    assert len(panel.compare.value) == 4
    assert json.loads(panel.compare.value[0])["batch"] == 4e6
    panel.compare._clear.click()
    assert panel.compare.value == [] and "Pin scenarios" in panel.compare._table.value


def test_a_plan_row_pins_with_its_own_numbers_and_leaves_the_scenario_as_it_was():
    panel = sw.explore(model="llama-3-70b", hardware="h100", chips=256, batch=2**22, seq_len=8192)
    before = panel.scenario.to_json()
    recommendations = panel.recommendations
    recommendations._run.click()
    rank = recommendations.rows[1].rank
    pin = recommendations._cells[rank][-1].children[1]
    assert pin.description == "pin"
    pin.click()
    assert panel.scenario.to_json() == before  # pinned, not used
    (pinned,) = panel.compare.value
    step = sw.Scenario.from_json(pinned).estimate().step_time
    assert float(step) == float(recommendations.plan.estimate(rank).step_time)
