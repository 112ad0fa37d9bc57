"""The command line's commands and what each is for: the top-level help, without loading what
they run (``parser.py`` builds each command's own options)."""

from __future__ import annotations

import argparse

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


class Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line, without the usage."""

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
