"""What a saved notebook shows for each widget where no kernel runs (GitHub, nbviewer, a course's
static site): a note, and a PNG of the widget as the live front end drew it (``screenshots.py``).

Each image records a hash of the notebook's code cells up to and including its own, so a test can
tell, without a browser, that an image no longer matches the code that drew it. The hash leaves the
versions of bqplot and the package out: a clean clone with newer ones must not fail the test.
"""

from __future__ import annotations

import base64
import hashlib
import struct

import nbformat

WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    "(a live widget: run the notebook to use it; the numbers it shows are printed beside it)"
)
KEY = "scaling_widgets"  # our entry in an image output's metadata


def code_hash(nb: nbformat.NotebookNode, index: int) -> str:
    """The sha256 of the notebook's code cells' sources, from the first to cell ``index``.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The notebook.
    index : int
        The last cell counted (a code cell that displays a widget).

    Returns
    -------
    digest : str
        The hex digest; a markdown cell's change leaves it as it was.
    """
    digest = hashlib.sha256()
    for cell in nb.cells[: index + 1]:
        if cell.cell_type == "code":
            digest.update(cell.source.encode() + b"\0")  # "ab" + "c" is not "a" + "bc"
    return digest.hexdigest()


def widget_outputs(nb: nbformat.NotebookNode) -> list[tuple[int, nbformat.NotebookNode]]:
    """Every output that shows a widget, in order, with its cell's index: a live one (the widget's
    view) or one saved as the note.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The notebook, run or saved.

    Returns
    -------
    outputs : list of (int, nbformat.NotebookNode)
        The cell's index and the output, in the order the page shows them.
    """
    found = []
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data or data.get("text/plain") == WIDGET_NOTE:
                found.append((i, output))
    return found


def attach(nb: nbformat.NotebookNode, pngs: list[bytes], drawn_by: dict) -> None:
    """Give the k-th widget output the k-th image, beside its note, and the hash of its code.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The notebook, run and cleaned: each widget output holds the note.
    pngs : list of bytes
        One PNG a widget output, in the page's order.
    drawn_by : dict
        What drew them (versions, the page's width), recorded beside the hash for a reader.

    Raises
    ------
    ValueError
        The page showed another number of widgets than the notebook holds.
    """
    outputs = widget_outputs(nb)
    if len(pngs) != len(outputs):
        raise ValueError(
            f"the page showed {len(pngs)} widgets, the notebook has {len(outputs)} widget outputs"
            f" (in cells {sorted({i for i, _ in outputs})}): which image is which is unknown"
        )
    for (i, output), png in zip(outputs, pngs):
        width, height = struct.unpack(">II", png[16:24])  # the PNG's IHDR
        output.data["image/png"] = base64.b64encode(png).decode()
        output.metadata = {
            "image/png": {"width": width, "height": height},
            KEY: {"code_sha256": code_hash(nb, i), **drawn_by},
        }


def stale(nb: nbformat.NotebookNode) -> list[str]:
    """What a reader without a kernel would miss: each widget output saved live, without its image,
    or with an image drawn by other code than the notebook's now.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The notebook as saved.

    Returns
    -------
    problems : list of str
        One line an output, naming its cell; empty when every image is current.
    """
    problems = []
    for i, output in widget_outputs(nb):
        recorded = output.get("metadata", {}).get(KEY, {}).get("code_sha256")
        if WIDGET in output.data:
            problems.append(f"cell {i}: a live widget's state, not its note and image")
        elif "image/png" not in output.data:
            problems.append(f"cell {i}: a widget without its image")
        elif recorded != code_hash(nb, i):
            problems.append(f"cell {i}: its image was drawn by other code than the cells' now")
    return problems
