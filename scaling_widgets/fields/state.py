"""A scenario's state: a flat dict, field name -> value, from a user's input to the four values.

``checked`` turns what a user gave (the panel, a saved file, the command line) into a checked
state, and ``values`` turns a state into the four values ``evaluate`` takes: the one path from any
of them to a number. ``to_json`` and ``from_json`` save and read it.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .. import catalog
from ..cost import Cluster, Layout, Options, Workload
from ..cost.evaluation.evaluate import validate
from ..cost.ground.refusals import InputError, refuse
from ..cost.strategies import BEST, STRATEGIES
from ..cost.transformer.exactness import Exactness
from .field import VALUES, Field
from .table import FIELDS, FIELDS_TABLE, READABLE, SCENARIO, VERSION


def scenario_start() -> dict:
    """The panel's first state (before it is checked).

    Returns
    -------
    state : dict of str to object
        Every field of the scenario by name, at its first value.
    """
    return {name: FIELDS[name].first() for name in SCENARIO}


def defaults() -> dict:
    """What the command line takes for a field it is not given (before it is checked).

    Returns
    -------
    state : dict of str to object
        Every field of the scenario by name, at its default.
    """
    return {name: FIELDS[name].fallback() for name in SCENARIO}


def checked(state: dict, changed=()) -> dict:
    """The state with every field checked (a preset's name becomes the preset), the slice and the
    split filled in, and the layout checked whole by the cost model: ``ValueError`` naming the
    field otherwise. ``changed`` names the fields the user just set (see ``filled``).

    Parameters
    ----------
    state : dict
        A scenario's state, field name -> value, as a user gave it (presets by name).
    changed : tuple of str, default ()
        The fields the user just set.

    Returns
    -------
    state : dict
        The checked state: presets as their values, the slice and the split filled in.

    Raises
    ------
    ValueError
        Naming the field (an ``InputError`` where the cost model refuses it).
    """
    out = filled(coerced(state), changed)
    validate(*values(out))
    return out


def coerced(state: dict) -> dict:
    """Every field checked on its own: a preset's name becomes the preset, a number its type.

    Parameters
    ----------
    state : dict
        A scenario's state: field name -> value.

    Returns
    -------
    state : dict
        The same fields, each checked.

    Raises
    ------
    ValueError
        Naming the first field that cannot be read or checked, or that holds more than one value.
    """
    return {name: _checked_field(FIELDS[name], value) for name, value in state.items()}


def filled(state: dict, changed=()) -> dict:
    """The slice (None: the chip's default) and a split by hand filled in.

    The split by hand is kept whole: a group left out (None) is the rest of a stage, and when the
    slice or the stages change under it, X follows unless it was just given. Choosing a strategy
    that does not split a stage, without a split, turns the split by hand off.

    Parameters
    ----------
    state : dict
        A scenario's state, its fields checked (``coerced``).
    changed : tuple of str, default ()
        The fields the user just set: X just set is kept, and a strategy that does not split a
        stage, just chosen without X or Y, turns the split by hand off.

    Returns
    -------
    state : dict
        A new state with the slice and the split filled in.
    """
    out = dict(state)
    if out["slice_shape"] is None:
        out["slice_shape"] = out["hardware"].default_slice
    splits = STRATEGIES[out["strategy"]].on == STRATEGIES[BEST].on
    if "strategy" in changed and not splits and not {"x", "y"} & set(changed):
        out["optimal_split"] = True
    chips, z = math.prod(out["slice_shape"]), out["z"]
    stage = chips // z if z and chips % z == 0 else 0
    x, y = out["x"], out["y"]
    if not splits or not stage:  # the strategy sets its own groups; or no whole stage to split
        return out
    if x is None and y is not None and stage % y == 0:
        out["x"] = stage // y
    elif y is None and x is not None and stage % x == 0:
        out["y"] = stage // x
    elif (
        x is not None and y is not None and x * y != stage and "x" not in changed and stage % y == 0
    ):
        out["x"] = stage // y
    return out


def given_by_hand(state: dict, given: dict) -> dict:
    """``state`` with the fields ``given`` on the command line (or beside a saved scenario): X or
    Y given is a split by hand, the other group the rest of a stage unless it is given too.

    Parameters
    ----------
    state : dict
        A scenario's state: field name -> value.
    given : dict
        The fields given, by name -> value.

    Returns
    -------
    state : dict
        A new state: ``state`` updated with ``given``, ``optimal_split`` off where X or Y is
        given, and the group not given None (filled in by ``filled``).
    """
    out = {**state, **given}
    if {"x", "y"} & set(given):
        out["optimal_split"] = False
        for name, partner in (("x", "y"), ("y", "x")):
            if name in given and partner not in given:
                out[partner] = None
    return out


def from_flags(parsed: dict, state: dict) -> dict:
    """The fields given on the command line (argparse's namespace of what was typed): a word such
    as ``on`` read as its value, another flag of a field (``--chips``) resolved against
    ``state``.

    Parameters
    ----------
    parsed : dict
        Destination -> value: a field's name, or ``"name:--flag"`` for another flag of the
        field.
    state : dict
        The fields another flag is resolved against (``--chips`` needs the hardware).

    Returns
    -------
    given : dict
        Field name -> value, with the fields another flag implies where neither ``state`` nor
        the flags given set them.
    """
    given = {}
    # The field's own flags first: another flag of a field (--chips, --dp) reads them.
    for dest, value in sorted(parsed.items(), key=lambda item: ":" in item[0]):
        name, _, alt = dest.partition(":")
        field = FIELDS[name]
        if alt:
            flag = next(f for f in field.also if f.name == alt)
            value = value if flag.resolve is None else flag.resolve(value, {**state, **given})
            for other, implied in (flag.implies or {}).items():
                if {**state, **given}.get(other) is None:
                    given[other] = implied
        elif field.choices is not None and field.parse is not None:
            value = field.parse(value, field.flag)
        given[name] = value
    return with_implied(given)


def with_implied(given: dict, held: dict | None = None) -> dict:
    """``given`` with the fields its values imply (a slice's name, its chip) where not given.

    Parameters
    ----------
    given : dict
        Field name -> value, as typed.
    held : dict, optional
        Fields given another way (the API's ``chip=`` for the hardware): checked against, never
        replaced. None: none.

    Returns
    -------
    given : dict
        The same, and each implied field neither it nor ``held`` has.

    Raises
    ------
    InputError
        Naming the implying field where the field it implies is given otherwise.
    """
    out, held = dict(given), held or {}
    for name, value in given.items():
        implied = FIELDS[name].implies(value) if FIELDS[name].implies else {}
        for other, its in implied.items():
            typed = out.get(other, held.get(other))
            if typed is not None and _preset_id(typed) != its:
                said, mine = getattr(value, "name", value), catalog.hardware(its).name
                of = f"a slice of the {other} given, {getattr(typed, 'name', typed)}: {said} is"
                raise refuse(name, f"{of} {mine}'s", said)
            if other not in held:
                out.setdefault(other, its)
    return out


def _preset_id(value):
    """A chip's preset id, however it was given: its id, its name ("TPU v5p") or the chip."""
    if isinstance(value, str):
        try:
            return catalog.hardware(value).id
        except ValueError:
            return value
    return getattr(value, "id", value)


def _checked_field(field: Field, value):
    if field.coerce is not None:
        try:
            value = field.coerce(field.name, value)
        except InputError:
            raise
        except (TypeError, ValueError) as err:  # a preset's name or a file's JSON: its own words
            raise ValueError(f"{field.name}: {err}") from None
    check = field.checker()
    value = value if check is None else check(field.name, value)
    if isinstance(value, np.ndarray):  # the values take one per layout; a state is one layout
        raise refuse(field.name, "one value: a scenario is one layout", value.tolist())
    return value


def values(state: dict) -> tuple[Cluster, Workload, Layout, Options]:
    """The cluster, workload, layout and options a checked state stands for.

    ``x`` and ``y`` are a split by hand, used when ``optimal_split`` is off (by every strategy:
    DP, FSDP and TP refuse a split other than their own); ``axis_roles`` (one of "x", "y", "z" per
    slice axis; empty: the automatic rule) give whole axes to the groups instead, and set Z.

    Parameters
    ----------
    state : dict
        A checked state (``checked``).

    Returns
    -------
    cluster : Cluster
        The chip, the slice and the pods.
    workload : Workload
        What is trained: the model, the global batch, its sequences, the precision, the tokens.
    layout : Layout
        How the work is spread: the strategy, the groups, the stages and their switches.
    options : Options
        How the numbers are read, the exactness switches included.
    """
    roles = tuple(state["axis_roles"]) or None
    by_hand = not state["optimal_split"]
    given = {
        **state,
        "axis_roles": roles,
        "z": None if roles else state["z"],
        "x": state["x"] if by_hand and roles is None else None,
        "y": state["y"] if by_hand and roles is None else None,
    }
    parts: dict[str, dict] = {kind: {} for kind in VALUES}
    for field in FIELDS_TABLE:
        if field.value is not None and field.name in given:
            parts[field.value.split(".")[0]][field.attribute] = given[field.name]
    exact = Exactness(**parts.pop("exact"))
    return (
        Cluster(**parts["cluster"]),
        Workload(**parts["workload"]),
        Layout(**parts["layout"]),
        Options(**parts["options"], exact=exact),
    )


def to_json(state: dict) -> str:
    """A checked state as a saved scenario: a JSON object with its version, presets by name.

    Parameters
    ----------
    state : dict
        A checked state (``checked``).

    Returns
    -------
    text : str
        The JSON text: ``version`` and every field of the scenario.
    """
    data = {"version": VERSION}
    for name in SCENARIO:
        field, value = FIELDS[name], state[name]
        if value is not None and field.dump is not None:
            value = field.dump(value)
        data[name] = list(value) if isinstance(value, tuple) else value
    return json.dumps(data)


def from_json(text: str) -> dict:
    """A saved scenario's state, not yet checked. Unknown or missing keys and other versions raise
    ``ValueError``; a key its version did not have yet takes its default.

    Parameters
    ----------
    text : str
        A saved scenario's JSON text.

    Returns
    -------
    state : dict
        Every field of the scenario, by name, not yet checked.

    Raises
    ------
    ValueError
        For text that is not JSON, a version not readable, an unknown key, or a key its version
        had that is missing.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"scenario is not valid JSON: {err}") from None
    if not isinstance(data, dict) or data.get("version") not in READABLE:
        got = data.get("version") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"scenario version must be one of {READABLE}; got {got!r}")
    version = data.pop("version")
    unknown = sorted(set(data) - set(SCENARIO), key=str)
    if unknown:
        raise ValueError(f"unknown scenario key {unknown[0]!r}; allowed: {', '.join(SCENARIO)}")
    for name in SCENARIO:
        field = FIELDS[name]
        if name not in data:
            if field.since <= version and not field.absent_ok:
                raise ValueError(f"scenario key {name!r} is missing")
            data[name] = field.fallback()
    if version < 5 and data["cp"] == 1:
        data["cp"] = None  # CP 1 was the default: now the sequences choose (1 where they can)
    if version < 4 and STRATEGIES.get(data["strategy"], STRATEGIES[BEST]).on != STRATEGIES[BEST].on:
        data["optimal_split"] = True  # before version 4 a split by hand counted for FSDP + TP only
    return {name: data[name] for name in SCENARIO}
