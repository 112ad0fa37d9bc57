"""The command line's options generated from the table of fields (``fields/``): the flags
``estimate``, ``plan``, ``export`` and ``map`` offer, parsed and checked for their form; the cost
model checks what they mean. ``parser.py`` adds them to each subcommand.

A field's flag is offered by ``estimate``, and by ``plan`` unless the planner chooses that field
itself. Every flag's default is "not given" (``argparse.SUPPRESS``): what the user typed is
exactly what the namespace holds, and a flag beside ``--scenario`` overrides that field.
"""

from __future__ import annotations

import argparse

from .. import catalog
from ..cost.search.layouts import HELD, SEARCHED
from ..cost.search.map_axes import AXES as MAP_AXES
from ..fields import FIELDS_TABLE, Field
from ..text import units

# options that are no field
ACTIONS = ("scenario", "measured_peak_gb", "save_profile", "json", "top", "max_tp", "max_pp",
           "config", "verbose", "to", "output", "export_to", "rank", "rank_by", "rank_of",
           "trace", "scenarios", "csv", "batches", "chip_range", "cells")  # fmt: skip


def typed(parse, flag: str):
    """``parse(text, flag)`` as argparse's type: its ValueError becomes argparse's one line.

    Parameters
    ----------
    parse : callable
        ``parse(text, flag)`` -> value; a ``ValueError`` for text it refuses.
    flag : str
        The flag, as the messages name it ("--batch").

    Returns
    -------
    convert : callable
        ``convert(text)`` -> value, named after the flag; raises ``argparse.ArgumentTypeError``
        where ``parse`` raises ``ValueError``.
    """

    def convert(text):
        try:
            return parse(text, flag)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = flag
    return convert


def offered(field: Field, command: str) -> bool:
    """Whether ``command`` offers this field's flag: the planner does not take what it chooses,
    nor the map its axes (it takes the planner's flags else).

    Parameters
    ----------
    field : Field
        A row of the table of fields.
    command : str
        The subcommand: "estimate" (also the flags of ``export``), "plan" or "map".

    Returns
    -------
    offered : bool
        True when the field has a flag and ``command`` takes it.
    """
    searches = command in ("plan", "map")
    if field.flag is None or ("plan" if searches else command) not in field.commands:
        return False
    if command == "map" and field.name in MAP_AXES:  # the map's rows and columns set these
        return False
    return not searches or field.name not in SEARCHED


def _help(field: Field, command: str) -> str:
    if command in ("plan", "map") and field.name in HELD:
        return f"{field.help} (default: searched)"
    default = field.fallback()
    if default is None or default is False or "default" in field.help:
        return field.help
    return (
        f"{field.help} (default {units.mesh(default) if isinstance(default, tuple) else default})"
    )


def _add_field(parser, field: Field, command: str) -> None:
    target = parser.add_mutually_exclusive_group() if field.also else parser
    common = dict(dest=field.name, default=argparse.SUPPRESS, help=_help(field, command))
    if field.switch:
        target.add_argument(field.flag, action="store_true", **common)
    elif field.choices is not None:  # checked as text; ``fields.from_flags`` reads the word
        words = tuple(str(c) for c in field.choices)
        target.add_argument(
            field.flag,
            type=typed(lambda text, _: catalog.matching(text, words, field.name), field.flag),
            metavar="{" + ",".join(words) + "}",
            **common,
        )
    else:
        convert = None if field.parse is None else typed(field.parse, field.flag)
        target.add_argument(field.flag, type=convert, metavar=field.metavar, **common)
    for alt in field.also:
        target.add_argument(
            alt.name,
            dest=f"{field.name}:{alt.name}",
            type=typed(alt.parse, alt.name),
            metavar=alt.metavar,
            default=argparse.SUPPRESS,
            help=alt.help,
        )


def add_fields(parser, command: str) -> None:
    """Add to ``parser`` the flag of every field ``command`` offers (``offered``), each with the
    default "not given" (``argparse.SUPPRESS``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A subcommand's parser.
    command : str
        The subcommand: "estimate" (also for ``export``), "plan" or "map".
    """
    for field in FIELDS_TABLE:
        if offered(field, command):
            _add_field(parser, field, command)
