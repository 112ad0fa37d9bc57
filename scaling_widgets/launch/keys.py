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
from ..cost.ground.records import record
from ..cost.ground.refusals import refuse
from .conventions import Degrees

DATA = Path(__file__).resolve().parent.parent / "data"  # a path, not importlib.resources: 4 ms
KEYS = DATA / "config_keys"  # of every start that builds the command line


def data_json(name: str) -> dict:
    """The package's data file ``data/<name>`` (a JSON object), read.

    Parameters
    ----------
    name : str
        The file's name in ``scaling_widgets/data``.

    Returns
    -------
    data : dict
        Its object.
    """
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@record
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
    """The keys of ``framework``'s configuration (flags with their dashes for Megatron-LM).

    Parameters
    ----------
    framework : str
        The format's name: its schema is ``data/config_keys/<framework>.json``.

    Returns
    -------
    keys : frozenset of str
        The keys: ``section.key`` for torchtitan, ``--flag`` for Megatron-LM, ``base.yml``'s
        top-level keys for MaxText.

    References
    ----------
    .. [1] docs/MODEL.md §G (the keys a file may hold).
    .. [2] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/config/job_config.py`` (``JobConfig``'s dataclasses).
    .. [3] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (every flag its parser adds by name).
    .. [4] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/training/arguments.py`` (every flag its parser adds, those built from the config
       dataclasses included).
    .. [5] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/configs/base.yml`` (its top-level keys).
    """
    data = json.loads((KEYS / f"{framework}.json").read_text(encoding="utf-8"))
    return frozenset(data["keys"])


def flat(table: dict, prefix: str = "") -> dict:
    """A nested table as ``section.key`` -> value.

    Parameters
    ----------
    table : dict
        A parsed TOML or YAML table; a value that is a dict is a section.
    prefix : str, default ""
        What every key starts with: the sections above ``table``, each followed by a dot.

    Returns
    -------
    flat : dict
        Dotted key -> value, one entry per leaf.
    """
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def checked_keys(
    framework: str,
    table: dict,
    read: tuple,
    unpriced: dict,
    approximated: dict,
    also: frozenset = frozenset(),
) -> tuple[dict, list, list]:
    """Split a file's keys: those ``read`` into the layout, the ignored, and notes on those read
    as their nearest (``approximated``: key -> what is charged instead).

    Parameters
    ----------
    framework : str
        The format's name, whose schema (``schema``) says which keys exist.
    table : dict
        The file's keys (flat: ``section.key`` or ``--flag``) -> values.
    read : tuple of str
        The keys read into the layout and the model.
    unpriced : dict
        Key -> its default, for keys the model cannot price: refused when set to anything else.
    approximated : dict
        Key -> what is charged instead, for keys read as their nearest when set.
    also : frozenset, optional
        Keys known beside the framework's schema (a fork's own, as Megatron-DeepSpeed's flags).

    Returns
    -------
    got : dict
        The keys of ``read`` the file sets -> their values.
    ignored : list of str
        The keys that change nothing the model prices.
    notes : list of str
        One line for each approximated key set: the key, its value and what is charged.

    Raises
    ------
    InputError
        For a key the framework has not (naming the nearest it has), or one of ``unpriced`` set
        away from its default (key -> default).
    """
    known = schema(framework) | also
    got, ignored, notes = {}, [], []
    for key, value in table.items():
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise refuse(key, f"a key of {framework}'s configuration{hint}", "unknown")
        if key in unpriced and value != unpriced[key]:
            off = unpriced[key] is False  # a switch, or a flag that is off unless given
            allowed = "off (left out): it is not priced" if off else f"{unpriced[key]!r}"
            raise refuse(key, allowed + ("" if off else ": another setting is not priced"), value)
        if key in read:
            got[key] = value
        elif key in approximated and value:
            notes.append(f"{key} = {value}: {approximated[key]}")
        elif key not in unpriced:
            ignored.append(key)
    return got, ignored, notes


def layers_of(model) -> int:
    """A model's layers: a preset's by name, or the ``Model``'s own.

    Parameters
    ----------
    model : str or Model
        A preset's name, or a ``Model``.

    Returns
    -------
    layers : int
        L, the model's transformer layers.
    """
    return catalog.model(model).layers


def yaml_loaded(text: str, field: str, reads: str):
    """A YAML text's value, PyYAML loaded only for it; a text PyYAML cannot read is refused on
    one line naming ``field`` and where PyYAML stopped.

    Parameters
    ----------
    text : str
        The YAML.
    field : str
        What a refusal names: "config" for a file, a key for one value.
    reads : str
        What the text should be, worded to follow "must be" ("a YAML file MaxText reads").

    Returns
    -------
    value : object
        The YAML's value (a dict for a file of keys).

    Raises
    ------
    InputError
        "<field> must be <reads> (line N: what PyYAML found)".
    """
    import yaml  # PyYAML loads only for a YAML file, not for every command

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        said = f"line {mark.line + 1}: {problem}" if mark is not None else problem
        raise refuse(field, f"{reads} ({said})", "a file" if field == "config" else text) from None
