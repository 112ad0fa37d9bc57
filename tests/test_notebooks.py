"""Every demo notebook runs top to bottom in a real kernel and ends with its own asserts."""

import ast
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
