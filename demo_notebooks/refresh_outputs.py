"""Run the demo notebooks and save them with their outputs, so that a reader on GitHub, where no
kernel runs, sees every number and every figure. ``tests/test_notebooks.py`` runs each notebook
again and checks that the numbers it prints are the ones saved here, and that each widget's image
is current, so the saved outputs never go stale.

Run ``python demo_notebooks/refresh_outputs.py`` after changing a notebook or the model (or name
some notebooks: ``python demo_notebooks/refresh_outputs.py 02_reproduce_the_chapter``). It needs
the test extra and Debian's Chromium, as the browser tests do.

A live widget (the panel) cannot be saved for a reader without a kernel: its output keeps a one
line note and a PNG of the widget as Voila drew it in Chromium (``screenshots.py``), and each
notebook prints the numbers the widget shows beside it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import bqplot
import nbformat
from nbclient import NotebookClient
from widget_images import WIDGET, WIDGET_NOTE, attach

HERE = Path(__file__).resolve().parent
# a number as a notebook prints it: 1,234.5 or 3.2e+06 or 45%
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")  # an object's address, new in every kernel
TEXT_KINDS = ("text/plain", "text/markdown", "text/html")


def execute(path: Path, timeout: int = 300) -> nbformat.NotebookNode:
    """The notebook at ``path``, run top to bottom in a fresh kernel, its outputs cleaned."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
    )
    client.execute()
    return cleaned(nb)


def cleaned(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Outputs a reader can read anywhere: a widget's saved state and its long repr replaced by a
    note; no run times."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data:
                output["data"] = {"text/plain": WIDGET_NOTE}
    return nb


def numbers(nb: nbformat.NotebookNode) -> list[tuple[int, list[str]]]:
    """Every number each code cell prints (its text outputs, in order), cell by cell."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        found = []
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] if output.get("output_type") == "stream" else []
            data = output.get("data", {})
            texts += ["".join(data[k]) for k in TEXT_KINDS if k in data and WIDGET not in data]
            for text in texts:
                found += NUMBER.findall(ADDRESS.sub("", "".join(text)))
        out.append((i, found))
    return out


def main(names: list[str]) -> None:
    """Run the notebooks named (by the start of their names; none: all), draw their widgets in
    Voila, and save each with its outputs and images."""
    from screenshots import WIDTH, Voila  # the browser's part: only this command needs it

    paths = sorted(HERE.glob("*.ipynb"))
    if names:
        paths = [p for p in paths if any(p.stem.startswith(n) for n in names)]
    drawn_by = {"bqplot": bqplot.__version__, "page_width": WIDTH}
    with Voila(HERE) as voila:
        for path in paths:
            nb = execute(path)
            pngs = voila.widgets(path.name)
            attach(nb, pngs, drawn_by)
            nbformat.write(nb, path)
            size = sum(len(png) for png in pngs) / 1e3
            print(
                f"{path.name}: {sum(len(n) for _, n in numbers(nb))} numbers and {len(pngs)}"
                f" images ({size:,.0f} kB) saved"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
