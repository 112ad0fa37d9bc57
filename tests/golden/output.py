"""One golden command line's output, as it is kept: what it printed, its exit code, and the
repository's path made neutral; JSON with its floats to nine significant digits, so that the
last bits of a float that another numpy sums differently do not count as a change."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from scaling_widgets.cli import main

ROOT = str(Path(__file__).resolve().parent.parent.parent)


def output(argv: list[str]) -> str:
    """What ``scaling-widgets ARGV`` prints, with its exit code when that is not 0."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
    text = out.getvalue() + (f"[stderr]\n{err.getvalue()}" if err.getvalue() else "")
    if code:
        text += f"[exit {code}]\n"
    return text.replace(ROOT, "<repo>")


def kept(name: str, text: str) -> str:
    """The form the golden file holds: a JSON output rounded and indented, text as printed."""
    if not name.endswith(".json") or text.startswith("[") or "[exit" in text:
        return text
    printed, said, stderr = text.partition("[stderr]\n")  # notes beside the JSON, kept as said
    return (
        json.dumps(_rounded(json.loads(printed)), indent=1, sort_keys=True) + "\n" + said + stderr
    )


def _rounded(value):
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value
