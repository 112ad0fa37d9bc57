"""The command line: ``scaling-widgets estimate``, ``plan``, ``map``, ``export``, ``compare`` and
``demo``.

``estimate`` reads a state of the fields (``fields/``): the command line's defaults, or a saved
scenario (``--scenario FILE.json``), with every flag given on top, and evaluates the four values
it stands for by the same path as the panel. A flag given beside ``--scenario`` overrides that
field of the file. Bad input prints one line naming the option, the value and what is allowed, and
exits 2. A closed pipe (``| head``) ends quietly.

Tier 11 of the package (``tests/test_tiers.py`` declares the order), the top but for the package's
face: it may import any other part.
"""

from __future__ import annotations

import gc
import sys


def main(argv=None) -> int:
    """Run the command line: parse, evaluate and print; bad input is one line on stderr. The
    top-level help loads nothing but the list of commands; a command loads what it runs.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program's name; None: ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 when done (``demo``: the server's status); 1 when the reader of the output went
        away (``| head``).

    Raises
    ------
    SystemExit
        With status 2 for bad input: the message names the option, the value and what is
        allowed; with 0 after the help.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        from .commands import top_parser

        top_parser().parse_args(argv)  # the help, or "a command is needed": it exits
    from .run import run

    return run(argv)


def console() -> int:
    """The installed ``scaling-widgets`` (and ``python -m scaling_widgets``): ``main`` in a
    process of its own, which ends when it returns.

    Returns
    -------
    status : int
        ``main``'s.
    """
    try:
        return main()
    finally:
        # The process ends here: the interpreter's last collection would walk every object the
        # cost model made, only to free what the operating system frees anyway (12 ms of an
        # estimate's 160, benchmarks/bench_startup.py). Frozen, they are not walked.
        gc.freeze()
