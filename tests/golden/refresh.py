"""Write the golden outputs: ``python -m tests.golden.refresh`` from the repository's root.

Run it only when a change of the numbers or the words is meant, and say why in the commit: the
golden test exists to show that a restructure changed neither.
"""

from __future__ import annotations

from .output import kept, output
from .scenarios import DATA, command_lines

GOLDEN = DATA / "golden"


def refresh() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for old in GOLDEN.glob("*.*"):
        old.unlink()
    for name, argv in command_lines().items():
        (GOLDEN / name).write_text(kept(name, output(argv)))


if __name__ == "__main__":
    refresh()
