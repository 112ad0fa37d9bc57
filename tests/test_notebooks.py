"""Every demo notebook runs top to bottom in a real kernel, ends with its own asserts, and keeps a
current image of each widget it shows (checked without a browser)."""

import ast
import base64
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

FOLDER = Path(__file__).parents[1] / "demo_notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
sys.path.insert(0, str(FOLDER))
from refresh_outputs import cleaned, numbers  # noqa: E402
from widget_images import WIDGET, attach, stale, widget_outputs  # noqa: E402

REFRESH = "python demo_notebooks/refresh_outputs.py"


def top_level_asserts(source: str) -> list[ast.Assert]:
    """The assert statements a cell runs whenever it runs to its end: not in a comment, a string,
    a branch or a function. A cell magic would make the cell not Python, and ``ast`` refuses it."""
    return [node for node in ast.parse(source).body if isinstance(node, ast.Assert)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    """It runs, ends with its asserts, and prints the very numbers saved with it."""
    nb = nbformat.read(path, as_version=4)
    saved = numbers(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"saved without outputs: {REFRESH}"
    last = nb.cells[-1]
    assert last.cell_type == "code" and top_level_asserts(last.source), (
        "the last cell must assert what it shows"
    )
    # One more cell, whose assert must fail: the kernel checks asserts (not run with -O or
    # PYTHONOPTIMIZE).
    nb.cells.append(nbformat.v4.new_code_cell("assert False, 'the kernel checks asserts'"))
    # the kernel talks over socket files, not TCP ports: a second suite running beside this one
    # could take a port between choosing it and binding it ("Address already in use")
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    client = NotebookClient(
        nb, km=km, timeout=120, resources={"metadata": {"path": str(path.parent)}}
    )
    with pytest.raises(
        CellExecutionError, match="the kernel checks asserts"
    ):  # not an error of an earlier cell
        client.execute()
    assert last.execution_count is not None  # the last cell ran to its end, asserts and all
    nb.cells.pop()  # the check's own cell
    assert numbers(cleaned(nb)) == saved, f"the saved outputs are stale: {REFRESH}"


@pytest.mark.parametrize(
    "source, asserts",
    [
        ("x = 1\nassert x == 1\nprint('ok')", 1),
        ("# assert x == 1\nprint('assert')", 0),  # the word alone is not a check
        ("if False:\n    assert x == 1", 0),
        ("def check():\n    assert x == 1", 0),
    ],
)
def test_only_a_top_level_assert_counts(source, asserts):
    assert len(top_level_asserts(source)) == asserts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_widget_has_a_current_image(path):
    """Each widget output carries a PNG of the widget, drawn by the notebook's code as it is now: a
    reader without a kernel sees the figure."""
    nb = nbformat.read(path, as_version=4)
    assert stale(nb) == [], f"stale: run {REFRESH} {path.stem}"


WITH_WIDGETS = FOLDER / "07_widgets_one_by_one.ipynb"


def test_a_changed_cell_makes_its_image_and_the_later_ones_stale():
    nb = nbformat.read(WITH_WIDGETS, as_version=4)
    cells = [i for i, _ in widget_outputs(nb)]
    assert len(cells) >= 3 and stale(nb) == []
    nb.cells[cells[1]].source += " "  # one character of the second widget's cell
    assert [problem.split(":")[0] for problem in stale(nb)] == [f"cell {i}" for i in cells[1:]]
    assert all("other code" in problem for problem in stale(nb))


def test_a_markdown_cell_changes_no_image():
    nb = nbformat.read(WITH_WIDGETS, as_version=4)
    next(c for c in nb.cells if c.cell_type == "markdown").source += " more words"
    assert stale(nb) == []


def test_a_widget_without_its_image_or_saved_live_is_caught():
    nb = nbformat.read(WITH_WIDGETS, as_version=4)
    (_, first), (_, second) = widget_outputs(nb)[:2]
    first.data.pop("image/png")
    second.data = {WIDGET: {"model_id": "0"}, "text/plain": "VBox()"}
    problems = stale(nb)
    assert "without its image" in problems[0] and "live widget" in problems[1]


def test_images_go_one_to_a_widget_or_not_at_all():
    nb = nbformat.read(WITH_WIDGETS, as_version=4)
    png = base64.b64decode(widget_outputs(nb)[0][1].data["image/png"])
    with pytest.raises(ValueError, match="which image is which is unknown"):
        attach(nb, [png], {})


def test_the_numbers_leave_the_images_out():
    """An image's base64 holds digits; the numbers compared with a fresh run are the text's."""
    nb = nbformat.read(WITH_WIDGETS, as_version=4)
    saved = numbers(nb)
    for _, output in widget_outputs(nb):
        assert any(c.isdigit() for c in output.data.pop("image/png"))
        output.metadata = {}
    assert numbers(nb) == saved
