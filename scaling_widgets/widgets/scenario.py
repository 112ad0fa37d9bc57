"""The scenario: everything a user chooses, shared by every widget bound to it.

A ``Scenario`` holds one state of the fields (``fields/``), replaced whole: a change is checked
with the rest of the state before any of it is applied (``fields.checked``, the cost model's own
checks), so a refused change keeps nothing and says why in a ``ScenarioError`` that names the
field. Each field is also a trait, which widgets observe; setting one is an ``update`` of that
field alone. ``values()`` are the four values the cost model evaluates, and ``estimate()`` is
exactly what the panel shows. ``to_json``/``from_json`` save and load it.
"""

from __future__ import annotations

import math
from types import MappingProxyType

from traitlets import Any, HasTraits, Int, TraitError, Unicode

from .. import fields
from ..cost import Cluster, Estimate, Layout, Options, Workload, evaluate
from ..fields import FIELDS, SCENARIO
from ..fields.keywords import as_given, fields_named
from ..text import units

VERSION, READABLE = fields.VERSION, fields.READABLE


class ScenarioError(TraitError, ValueError):
    """A value the scenario cannot take; the message names the field."""


class Setting(Any):
    """A field of the scenario as a trait: it reads the state; setting it is one ``update``."""

    def __set__(self, obj, value):
        obj.update(**{self.name: value})


# Every field of the table is a trait of the scenario, declared from its row.
_Fields = type(
    "_Fields", (HasTraits,), {name: Setting(help=FIELDS[name].help) for name in SCENARIO}
)


class Scenario(_Fields):
    """What to evaluate: model, chip, slice, batch, strategy and split, precision, MFU.

    ``x`` and ``y`` are the split by hand, used when ``optimal_split`` is off; ``axis_roles``
    (one of "x", "y", "z" per slice axis, or empty for the automatic rule) gives whole axes to
    the groups instead. ``microbatches`` None: whole sequences each, the fastest count that fits.

    Each field of the table (``fields.SCENARIO``) is a trait of that name: reading it gives the
    state's value, and setting it is an ``update`` of that field alone.

    Parameters
    ----------
    **kwargs
        The fields, by their names (``model``, ``hardware``, ``slice_shape``, ``batch``, ...)
        or in the command line's names and forms (``fsdp=``, ``tp=``, ``pp=``, ``dp=``,
        ``chips=``, ``mesh=``, ``batch="4M"``). A field not given takes its first value
        (``fields.scenario_start``). A split given as ``fsdp``, ``tp`` or ``dp`` is a split by
        hand unless ``optimal_split`` is given too.

    Attributes
    ----------
    revision : int
        +1 per applied change, however many fields it touched; widgets observe it.
    mended : str
        What the last change mended to keep the scenario runnable, in one line; empty if nothing.
    chips : int
        Chips of one pod's slice [chips].

    Raises
    ------
    ScenarioError
        A value the scenario cannot take; the message names the field as it was written.
    TypeError
        A keyword that names no field.

    Examples
    --------
    >>> s = Scenario(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=3e6)
    >>> s.update(hardware="tpu-v5e", slice_shape=(16, 16))
    >>> Scenario.from_json(s.to_json()).slice_shape
    (16, 16)
    """

    revision = Int(0, read_only=True)  # +1 per applied change, however many fields it touched
    mended = Unicode("", read_only=True)  # what the last change mended, in one line

    def __init__(self, **kwargs):
        # also fsdp=, chips=, batch="4M"
        self._start(_named(kwargs, fields.scenario_start()), written=kwargs)

    def _start(self, given: dict, written: dict | None = None) -> None:
        _reject_unknown(given)
        super().__init__()
        self._state = MappingProxyType({})
        start = {**fields.scenario_start(), **given}
        self._replace(start, tuple(given), count=False, written=written)

    def __repr__(self):
        where = f"{self.hardware.name} {units.mesh(self.slice_shape)}"
        return f"Scenario({self.model.name} on {where}, {self.strategy})"

    @property
    def chips(self) -> int:
        """Chips of one pod's slice."""
        return math.prod(self.slice_shape)

    def state(self) -> dict:
        """The fields, name -> value: a copy of the state.

        Returns
        -------
        state : dict of str to Any
            Field name -> value, a copy: changing it changes nothing in the scenario.
        """
        return dict(self._state)

    def values(self) -> tuple[Cluster, Workload, Layout, Options]:
        """The cluster, workload, layout and options this scenario stands for (built once per
        state: they are frozen, and every view of one change reads them).

        Returns
        -------
        cluster : Cluster
            The chips: a chip preset, one pod's slice and the pods.
        workload : Workload
            What is trained: the model, the global batch B [tokens], its sequences, the
            precision and the tokens of the whole run.
        layout : Layout
            How the work is spread.
        options : Options
            How the numbers are read.
        """
        if self.__dict__.get("_values_of") is not self._state:
            self._values, self._values_of = fields.values(self._state), self._state
        return self._values

    def estimate(self) -> Estimate:
        """The scenario's own layout, evaluated: exactly the numbers the panel shows.

        Returns
        -------
        estimate : Estimate
            ``evaluate`` of the scenario's ``values()``.
        """
        return evaluate(*self.values())

    def update(self, **changes) -> None:
        """Apply several fields at once: all of them, or none if any is refused. A field that the
        change leaves impossible takes its nearest choice that runs (``fields.mended``), and
        ``mended`` says what changed.

        Parameters
        ----------
        **changes
            The fields to change, in either form the constructor takes (``tp=4``,
            ``batch="4M"``, ...).

        Raises
        ------
        ScenarioError
            A change the scenario cannot take; none of it is applied, and the message names the
            field as it was written.
        TypeError
            A keyword that names no field.
        """
        written = changes
        changes = _named(changes, {**self._state, **changes})
        _reject_unknown(changes)
        changes, said = fields.mended(self._state, changes)
        self._replace({**self._state, **changes}, tuple(changes), written=written)
        self.set_trait("mended", said)

    def _replace(
        self, state: dict, changed: tuple, count: bool = True, written: dict | None = None
    ) -> None:
        """Check the whole new state, then show it: every trait that changed, in one
        notification. A refusal names the keyword as ``written`` (``tp``, not ``y``)."""
        try:
            new = fields.checked(state, changed)
        except (ValueError, TypeError, OverflowError) as err:
            raise ScenarioError(str(as_given(err, written or {}))) from None
        self._state = MappingProxyType(new)
        with self.hold_trait_notifications():
            for name, value in new.items():
                self.set_trait(name, value)
        if count:
            self.set_trait("revision", self.revision + 1)

    def to_json(self) -> str:
        """The scenario as a JSON object with a version; presets are saved by name.

        Returns
        -------
        text : str
            The JSON text, which ``from_json`` loads.
        """
        return fields.to_json(self._state)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Load a saved scenario. Unknown or missing keys, wrong types and other versions raise.

        Parameters
        ----------
        text : str
            A scenario's JSON, as ``to_json`` writes it.

        Returns
        -------
        scenario : Scenario
            A new scenario in that state; its numbers are read as numbers ("3M" is not).

        Raises
        ------
        ScenarioError
            For unknown or missing keys, wrong types, another version, or a state the checks
            refuse.
        """
        try:
            state = fields.from_json(text)
        except ValueError as err:
            raise ScenarioError(str(err)) from None
        scenario = cls.__new__(cls)  # a file says numbers as numbers: no "3M" read here
        scenario._start(state)
        return scenario


# The command line's names of the split: given, they are a split by hand, as on the command line.
_SPLIT_FLAGS = ("fsdp", "tp", "dp")


def _named(keywords: dict, state: dict) -> dict:
    """The fields keywords give in either form (``fields_named``), a misread one refused. A split
    given by the command line's names (``tp=4``) is a split by hand unless ``optimal_split`` says
    otherwise, the other group the rest of a stage."""
    try:
        named = fields_named(keywords, state)
    except (ValueError, TypeError) as err:
        raise ScenarioError(str(err)) from None
    if set(_SPLIT_FLAGS) & set(keywords) and "optimal_split" not in keywords:
        split = {k: named[k] for k in ("x", "y") if k in named}
        by_hand = fields.given_by_hand({**state, **named}, split)
        named.update({k: by_hand[k] for k in ("optimal_split", "x", "y")})
    return named


def _reject_unknown(kwargs) -> None:
    unknown = sorted(set(kwargs) - set(SCENARIO))
    if unknown:
        raise TypeError(
            f"Scenario got an unexpected keyword {unknown[0]!r}; allowed: {', '.join(SCENARIO)}"
        )
