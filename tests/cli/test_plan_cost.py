"""Cost beside time: with the tokens and a price, a plan shows each layout's run, its cost and its
energy beside the days, and sorts by any of them (on one cluster they sort alike)."""

from __future__ import annotations

import json

from scaling_widgets.text import units

from .running import run

PLAN = ["plan", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "512", "--batch", "4M",
        "--seq-len", "8k", "--top", "5"]  # fmt: skip
PRICED = [*PLAN, "--tokens", "15T", "--price-per-chip-hour", "2.5"]


def test_the_table_shows_each_runs_cost_and_energy_as_its_json_holds_them(capsys):
    code, table, _ = run(capsys, *PRICED)
    assert code == 0
    head = next(line for line in table.splitlines() if line.lstrip().startswith("#"))
    assert head.index("to train") < head.index("cost") < head.index("energy") < head.index("binds")
    code, out, _ = run(capsys, *PRICED, "--json")
    rows = [line for line in table.splitlines() if line[:3].strip().isdigit()]
    for row, layout in zip(rows, json.loads(out)["layouts"]):
        assert units.count(layout["run"]["cost"]) in row
        assert units.energy(layout["run"]["energy_j"]) in row


def test_sorted_by_cost_the_cheapest_run_comes_first(capsys):
    code, out, _ = run(capsys, *PRICED, "--sort", "cost", "--json")
    costs = [layout["run"]["cost"] for layout in json.loads(out)["layouts"]]
    assert code == 0 and costs == sorted(costs)
    code, by_time, _ = run(capsys, *PRICED, "--sort", "time", "--json")
    assert [layout["run"]["cost"] for layout in json.loads(by_time)["layouts"]] == costs


def test_a_sort_the_plan_cannot_make_is_refused_naming_what_it_needs(capsys):
    code, out, err = run(capsys, *PLAN, "--tokens", "15T", "--sort", "cost")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--sort cost needs a price: give --price-per-chip-hour" in err
    code, _, err = run(capsys, *PLAN, "--sort", "energy")
    assert code == 2 and "--sort energy needs the run: give --tokens" in err


def test_sorting_by_energy_on_a_chip_without_a_rated_power_names_the_flag(capsys):
    plan = ["plan", "--model", "llama-3-8b", "--batch", "4M", "--mesh", "v5p-512", "--tokens",
            "15T", "--sort", "energy"]  # fmt: skip
    code, out, err = run(capsys, *plan)
    assert code == 2 and out == ""
    assert "--sort energy needs the chip's power: give --chip-power" in err
    code, _, _ = run(capsys, *plan, "--chip-power", "450", "--top", "1")
    assert code == 0
