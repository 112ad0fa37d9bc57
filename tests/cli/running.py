"""The command line run in the test's own process, as a user runs it: its exit code, what it
printed and what it said on stderr; ``estimate --json`` read back as the record it prints."""

from __future__ import annotations

import json

from scaling_widgets.cli import main


def run(capsys, *args) -> tuple[int, str, str]:
    """``scaling-widgets *args``: the exit code (2 for a refusal), stdout and stderr."""
    try:
        code = main(list(args))
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def estimate(capsys, *args) -> dict:
    """``scaling-widgets estimate *args --json``, which must run, as the record it prints."""
    code, out, err = run(capsys, "estimate", *args, "--json")
    assert code == 0, err
    return json.loads(out)
