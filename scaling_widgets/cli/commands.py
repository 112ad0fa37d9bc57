"""The command line's commands and what each is for: the top-level help, without loading what
they run (``parser.py`` builds each command's own options)."""

from __future__ import annotations

import argparse
import functools
import os
import sys

PROG = "scaling-widgets"
DESCRIPTION = "How to parallelize a transformer for training."
COMMANDS = {
    "estimate": "evaluate one layout and compare the strategies",
    "plan": "rank every legal layout of a cluster",
    "export": "write a layout as a framework's launch file (the same flags as estimate)",
    "map": "which layout wins where: the best at each global batch and count of chips",
    "compare": "scenarios saved from the panel side by side, differences marked",
    "demo": "serve the panel in the browser with Voila",
}


class Formatter(argparse.HelpFormatter):
    """argparse's help at the terminal's width, read once a process: argparse builds a formatter
    for every option it adds, and each reads the width through shutil, whose import (bz2, lzma)
    is 2 ms of a start that prints no help."""

    def __init__(self, prog: str):
        super().__init__(prog, width=_help_width())


@functools.cache
def _help_width() -> int:
    """The terminal's columns less argparse's margin of 2: ``COLUMNS``, else the terminal's, else
    80, as ``shutil.get_terminal_size`` reads them."""
    try:
        return int(os.environ["COLUMNS"]) - 2
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns - 2
    except (AttributeError, ValueError, OSError):
        return 78


class Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line, without the usage, and whose help is read at
    the terminal's width once (``Formatter``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, formatter_class=Formatter, **kwargs)

    def error(self, message):  # one line, no usage dump
        """Print ``prog: error: message`` on stderr and exit.

        Parameters
        ----------
        message : str
            argparse's message.

        Raises
        ------
        SystemExit
            With status 2.
        """
        self.exit(2, f"{self.prog}: error: {message}\n")


def top_parser() -> argparse.ArgumentParser:
    """The top level alone: the commands by name, each without its options.

    Returns
    -------
    parser : argparse.ArgumentParser
        A ``Parser`` whose help lists ``COMMANDS``.
    """
    parser = Parser(prog=PROG, description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, said in COMMANDS.items():
        commands.add_parser(name, help=said)
    return parser
