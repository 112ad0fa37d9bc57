"""The command line's text and JSON on a fixed set of scenarios, unchanged (``scenarios.py``):
every strategy, pipeline schedule, software stack and launch format. A restructure keeps them
byte for byte; a change that is meant refreshes them (``refresh.py``) and says why."""

import pytest

from .output import kept, output
from .refresh import GOLDEN
from .scenarios import command_lines

LINES = command_lines()


def test_the_scenarios_cover_every_strategy_schedule_stack_and_format():
    from scaling_widgets.cost import SCHEDULES, STRATEGIES
    from scaling_widgets.cost.stacks import STACKS
    from scaling_widgets.launch import FORMATS

    said = " ".join(" ".join(argv) for argv in LINES.values())
    for name in (*STRATEGIES, *SCHEDULES, *STACKS):
        assert f" {name} " in f"{said} ", name
    for framework in FORMATS:
        assert f"--to {framework}" in said or f"--export-to {framework}" in said, framework
        assert f"configs/{framework}" in said, framework
    assert 30 <= len({name.rsplit(".", 1)[0] for name in LINES})


@pytest.mark.parametrize("name", sorted(LINES))
def test_the_output_is_unchanged(name):
    golden = (GOLDEN / name).read_text()
    assert kept(name, output(LINES[name])) == golden
