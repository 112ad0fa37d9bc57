"""The keys a framework's configuration has (``data/config_keys/<format>.json``, read from each
framework's source), and what reading a file made of them: the keys that set the layout, those
refused because the model cannot price them, and those ignored because they change nothing it
prices."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from pathlib import Path

from .. import catalog
from ..cost.ground.refusals import refuse
from .conventions import Degrees

KEYS = Path(__file__).resolve().parent.parent / "data" / "config_keys"


@dataclasses.dataclass(frozen=True)
class LaunchFile:
    """A framework's file, read: its degrees, its model, and what was left out of them."""

    framework: str
    degrees: Degrees
    model: object  # a preset's name, or the user's ``Model``
    ignored: tuple  # keys that change nothing the model prices
    notes: tuple  # keys read as their nearest, and what was taken for them
    extra: dict = dataclasses.field(default_factory=dict)  # other fields: the stack, tokens


@functools.cache
def schema(framework: str) -> frozenset:
    """The keys of ``framework``'s configuration (flags with their dashes for Megatron-LM)."""
    data = json.loads((KEYS / f"{framework}.json").read_text(encoding="utf-8"))
    return frozenset(data["keys"])


def flat(table: dict, prefix: str = "") -> dict:
    """A nested table as ``section.key`` -> value."""
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def checked_keys(
    framework: str, table: dict, read: tuple, unpriced: dict, approximated: dict
) -> tuple[dict, list, list]:
    """Split a file's keys: those ``read`` into the layout, the ignored, and notes on those read
    as their nearest (``approximated``: key -> what is charged instead).

    Raises
    ------
    InputError
        For a key the framework has not (naming the nearest it has), or one of ``unpriced`` set
        away from its default (key -> default).
    """
    known = schema(framework)
    got, ignored, notes = {}, [], []
    for key, value in table.items():
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise refuse(key, f"a key of {framework}'s configuration{hint}", "unknown")
        if key in unpriced and value != unpriced[key]:
            raise refuse(key, f"{unpriced[key]!r}: another setting is not priced", value)
        if key in read:
            got[key] = value
        elif key in approximated and value:
            notes.append(f"{key} = {value}: {approximated[key]}")
        elif key not in unpriced:
            ignored.append(key)
    return got, ignored, notes


def layers_of(model) -> int:
    """A model's layers: a preset's by name, or the ``Model``'s own."""
    return catalog.model(model).layers
