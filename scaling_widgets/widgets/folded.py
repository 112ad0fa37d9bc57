"""Outputs shown folded: an exercise's answer stays closed until the reader opens it.

``with folded("Exercise 1, computed"):`` around a notebook cell's code keeps what the code prints
and displays as text and Markdown, and shows it as one ``<details>`` block under that title. A
notebook saved with its outputs keeps the block folded on GitHub, in nbviewer and in JupyterLab, so
a reader answers before seeing the numbers; the code still runs, and its checks still hold.
"""

from __future__ import annotations

import contextlib

from IPython.display import Markdown, display
from IPython.utils.capture import capture_output


@contextlib.contextmanager
def folded(title: str = "The numbers, computed (open after you answer)"):
    """Show what the block prints and displays as one folded Markdown block under ``title``;
    anything else it displays (a widget) is shown after the block, as it was.

    Parameters
    ----------
    title : str, default "The numbers, computed (open after you answer)"
        The line shown while the block is closed.

    Yields
    ------
    None
        The block runs inside it.
    """
    with capture_output() as captured:
        yield
    parts, others = [], []
    for output in captured.outputs:
        text = output.data.get("text/markdown")
        if text is None:
            others.append(output)
        else:
            parts.append(text)
    if captured.stdout.strip():
        parts.append(f"```text\n{captured.stdout.rstrip()}\n```")
    body = "\n".join(parts)
    display(Markdown(f"<details><summary>{title}</summary>\n\n{body}\n\n</details>"))
    for output in others:
        output.display()
