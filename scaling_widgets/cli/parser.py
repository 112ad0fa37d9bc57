"""The command line's parser: a subcommand each, one helper a subcommand, their options those of
the table of fields (``options.py``) and their own (as nox builds its parser from its options)."""

from __future__ import annotations

import argparse

from ..text import units
from .commands import COMMANDS, DESCRIPTION, PROG, Parser
from .options import add_fields, typed

# what a plan sorts by: the step, or the whole run (time, cost and energy sort alike)
SORTS = ("step", "time", "cost", "energy", "wall")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line: a subcommand each, their options from the table of fields and their
    own (one helper a subcommand).

    Parameters
    ----------
    argv : list of str, optional
        The arguments it is built to parse. Given, only their command's options are built, and
        the launch files' readers load only for its help or a command that writes one: a start
        builds no more than it parses (``benchmarks/bench_startup.py``). None: every command,
        with its help.

    Returns
    -------
    parser : argparse.ArgumentParser
        A ``Parser``: ``estimate``, ``plan``, ``export``, ``map``, ``compare`` and ``demo``.
    """
    parser = Parser(prog=PROG, description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    builders = {"estimate": _estimate, "plan": _plan, "export": _export, "map": _map,
                "compare": _compare, "demo": _demo}  # fmt: skip
    asked = argv[0] if argv and argv[0] in builders else None  # else argparse names them all
    helping = argv is None or "-h" in argv or "--help" in argv
    for name, add in builders.items():
        if asked in (None, name):
            add(commands, helping)
    return parser


def _estimate(commands, helping: bool) -> None:
    est = commands.add_parser("estimate", help=COMMANDS["estimate"])
    est.add_argument(
        "--scenario",
        metavar="FILE.json",
        default=argparse.SUPPRESS,
        help="evaluate a scenario saved from the panel; a flag given beside it overrides"
        " that field",
    )
    _launch_file(est, helping)
    add_fields(est, "estimate")
    est.add_argument(
        "--measured-peak-gb",
        type=typed(units.parse_count, "--measured-peak-gb"),
        metavar="GB",
        default=argparse.SUPPRESS,
        help="a measured peak (as the stack reports it) that calibrates the memory; saved with "
        "--save-profile",
    )
    est.add_argument(
        "--save-profile",
        metavar="FILE.json",
        default=argparse.SUPPRESS,
        help="with --measured-step-time and/or --measured-peak-gb: calibrate and save",
    )
    est.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the report"
    )
    est.add_argument(
        "--trace",
        metavar="FILE.json",
        default=argparse.SUPPRESS,
        help="write the predicted step as a trace for Perfetto or chrome://tracing: a stage a"
        " process, compute and communication apart, the bubble as idle",
    )


def _plan(commands, helping: bool) -> None:
    from ..launch import FORMATS  # --export-to's choices

    planner = commands.add_parser("plan", help=COMMANDS["plan"])
    _launch_file(planner, helping)
    add_fields(planner, "plan")
    planner.add_argument(
        "--export-to",
        choices=tuple(FORMATS),
        default=argparse.SUPPRESS,
        help="print the launch file of the layout at --rank instead of the table",
    )
    planner.add_argument(
        "--sort",
        "--rank-by",
        dest="rank_by",
        choices=SORTS,
        default="step",
        help="sort by the step time, or with --tokens by the run's time to train on the wall"
        " clock (time; failures and checkpoints counted), its cost (with --price-per-chip-hour)"
        " or its energy: on one cluster these three sort alike, the same chips for the same"
        " hours (default step; --rank-by is its older name, wall the older time)",
    )
    planner.add_argument(
        "--rank",
        type=typed(units.parse_whole, "--rank"),
        default=1,
        help="the row to export, 1 the best (default 1)",
    )
    planner.add_argument(
        "--rank-of",
        metavar="'FLAGS'",
        default=argparse.SUPPRESS,
        help="where the layout that estimate's layout flags give (in quotes) ranks in the plan's"
        " scenario, whether it ties the best, and which terms make the best three faster",
    )
    _caps(planner)
    planner.add_argument(
        "--top",
        type=typed(units.parse_whole, "--top"),
        default=10,
        help="layouts to show (default 10)",
    )
    planner.add_argument(
        "--json",
        action="store_true",
        help="one JSON object whose layouts list is ranked best first",
    )


def _export(commands, helping: bool) -> None:
    from ..launch import FORMATS  # --to's choices

    export = commands.add_parser("export", help=COMMANDS["export"])
    export.add_argument(
        "--to", required=True, choices=tuple(FORMATS), help="the framework whose file to write"
    )
    export.add_argument(
        "--output", metavar="FILE", default=argparse.SUPPRESS, help="write there (default: print)"
    )
    export.add_argument("--scenario", metavar="FILE.json", default=argparse.SUPPRESS,
                        help="export a scenario saved from the panel")  # fmt: skip
    _launch_file(export, helping)
    add_fields(export, "estimate")


def _map(commands, helping: bool) -> None:
    mapper = commands.add_parser("map", help=COMMANDS["map"])
    add_fields(mapper, "map")
    mapper.add_argument(
        "--batches",
        type=typed(_range, "--batches"),
        metavar="LO..HI",
        default=argparse.SUPPRESS,
        help="the global batches of the columns [tokens] (default 64K..128M)",
    )
    mapper.add_argument(
        "--chip-range",
        type=typed(_range, "--chip-range"),
        metavar="LO..HI",
        default=argparse.SUPPRESS,
        help="the chips of the rows (default 8..16K; a TPU's up to four pods)",
    )
    mapper.add_argument(
        "--cells",
        type=typed(_cells, "--cells"),
        metavar="ROWSxCOLUMNS",
        default=(24, 24),
        help="rows and columns at most (default 24x24)",
    )
    _caps(mapper)
    mapper.add_argument(
        "--json", action="store_true", help="one JSON object: every cell's layout, step and MFU"
    )


def _compare(commands, helping: bool) -> None:
    compare = commands.add_parser("compare", help=COMMANDS["compare"])
    compare.add_argument("scenarios", nargs="+", metavar="FILE.json", help="two to four scenarios")
    how = compare.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="one JSON object: the rows and numbers")
    how.add_argument("--csv", action="store_true", help="CSV: a row a number, a column a scenario")


def _demo(commands, helping: bool) -> None:
    demo = commands.add_parser("demo", help=COMMANDS["demo"])
    demo.add_argument(
        "--port",
        type=typed(units.parse_whole, "--port"),
        help="port on 127.0.0.1 (default: a free one)",
    )
    demo.add_argument(
        "--no-browser", action="store_true", help="do not open a browser; just print the URL"
    )
    demo.add_argument(
        "--cull-after",
        type=typed(units.parse_whole, "--cull-after"),
        default=60,
        metavar="SECONDS",
        help="shut down a closed page's kernel after this many idle seconds (default 60)",
    )
    demo.add_argument(
        "--max-kernels",
        type=typed(units.parse_whole, "--max-kernels"),
        metavar="N",
        help="the most pages open at once, one kernel each; a page over it is asked to retry"
        " (default: what half of the free memory holds)",
    )
    demo.add_argument(
        "--warm",
        type=int,
        choices=range(9),
        default=1,
        metavar="N",
        help="pages kept ready, their kernels started and the dashboard run, so that a page"
        " opens at once (default 1; 0 for none)",
    )
    demo.add_argument(
        "--no-token",
        action="store_true",
        help="open the panel to every user and program on this machine (no token in the URL)",
    )
    demo.add_argument(
        "--theme",
        choices=("light", "dark"),
        default="light",
        help="the page's theme (default light)",
    )


def _launch_file(parser, helping: bool) -> None:
    """``--config``: start from a framework's launch file, and ``--verbose`` to list what of it
    was ignored. The files it reads are named in its help; they load the readers, so only when
    ``helping``."""
    if helping:
        from ..launch import readable

        files = f": {readable()}"
    else:
        files = ""  # never shown: only the help shows it
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help=f"start from a launch file{files} (with --hardware, and --chips where the"
        " file does not say); a flag given beside it overrides that field",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="with --config, list every key that was ignored"
    )


def _caps(parser) -> None:
    """``--max-tp`` and ``--max-pp``: the planner's and the map's limits on a layout."""
    for flag, what in (("--max-tp", "TP"), ("--max-pp", "pipeline stages")):
        parser.add_argument(
            flag,
            type=typed(units.parse_whole, flag),
            default=argparse.SUPPRESS,
            help=f"the most {what} a layout may take",
        )


def _pair(text: str, flag: str, sep: str, parse, example: str) -> tuple:
    """Two values written with ``sep`` between them ("64K..128M", "24x24"), each parsed."""
    first, found, second = text.partition(sep)
    if not found:
        raise ValueError(f"{flag} must be two values such as {example}; got {text!r}")
    return parse(first, flag), parse(second, flag)


def _range(text: str, flag: str) -> tuple[float, float]:
    """ "64K..128M" as (65536.0, 134217728.0)."""
    return _pair(text, flag, "..", units.parse_batch, "64K..128M")


def _cells(text: str, flag: str = "--cells") -> tuple[int, int]:
    """ "24x24" as (24, 24): rows (chip counts) by columns (batches)."""
    return _pair(text.lower(), flag, "x", units.parse_whole, "24x24")
