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

from traitlets import Any, HasTraits, Int, TraitError

from .. import catalog, fields
from ..cost import Cluster, Estimate, Layout, Options, Workload, evaluate
from ..cost.hardware.slices import slices_near
from ..cost.stacks import COMPILING, PAIRING
from ..cost.step.profiles import default_stack
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

    >>> s = Scenario(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=3e6)
    >>> s.update(hardware="tpu-v5e", slice_shape=(16, 16))
    >>> Scenario.from_json(s.to_json()).slice_shape
    (16, 16)
    """

    revision = Int(0, read_only=True)  # +1 per applied change, however many fields it touched

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
        """The fields, name -> value: a copy of the state."""
        return dict(self._state)

    def values(self) -> tuple[Cluster, Workload, Layout, Options]:
        """The cluster, workload, layout and options this scenario stands for (built once per
        state: they are frozen, and every view of one change reads them)."""
        if self.__dict__.get("_values_of") is not self._state:
            self._values, self._values_of = fields.values(self._state), self._state
        return self._values

    def estimate(self) -> Estimate:
        """The scenario's own layout, evaluated: exactly the numbers the panel shows."""
        return evaluate(*self.values())

    def fitted_to(self, slice_shape=None, hardware=None) -> dict:
        """The changes that move this scenario onto another slice (or chip) and keep it whole.

        Pipeline stages that no longer divide the chips fall back to 1, axis roles of another
        number of axes are cleared, and a split by hand keeps its TP degree if it can. Another
        chip drops fp8 matmuls it does not have, torch.compile where its stack has none, and a
        profile made for the chip left behind. A chip
        without a slice takes the slice of it nearest to this scenario's chips that runs it
        (``slices_near``): the same count if it can, else the nearest; its default slice if none
        does (the update then says why).
        """
        if slice_shape is not None:
            return self._moved_to(tuple(slice_shape), hardware)
        chip = catalog.hardware(hardware)
        for shape in slices_near(chip, self.chips):
            changes = self._moved_to(shape, hardware)
            try:
                fields.checked({**self._state, **changes}, tuple(changes))
            except (ValueError, TypeError):
                continue
            return changes
        return self._moved_to(chip.default_slice, hardware)

    def _moved_to(self, slice_shape: tuple, hardware) -> dict:
        changes = {"slice_shape": slice_shape}
        if hardware is not None:
            changes["hardware"] = hardware
            chip = catalog.hardware(hardware)
            if self.matmul_dtype == "fp8" and not chip.flops_fp8:
                changes["matmul_dtype"] = "bf16"  # the chip has no fp8 matmuls
            if self.profile is not None and self.profile.chip not in ("", chip.name):
                changes["profile"] = None  # made for the chip left behind
            changes.update(_switches_kept(self._state, self.stack, chip))
        chips = math.prod(slice_shape)
        z = self.z if chips % self.z == 0 else 1
        if z != self.z:
            changes["z"] = z
        if self.axis_roles and len(self.axis_roles) != len(slice_shape):
            changes["axis_roles"] = ()
        stage = chips // z
        y = self.y if self.y and stage % self.y == 0 else 1
        changes.update(x=stage // y, y=y)
        return changes

    def update(self, **changes) -> None:
        """Apply several fields at once: all of them, or none if any is refused."""
        written = changes
        changes = _named(changes, {**self._state, **changes})
        _reject_unknown(changes)
        if "stack" in changes:  # switches the new stack has not go back to its own
            chip = catalog.hardware(changes.get("hardware", self.hardware))
            kept = _switches_kept(self._state, changes["stack"], chip)
            changes.update({k: v for k, v in kept.items() if k not in changes})
        if "model" in changes:  # expert parallelism the new model can take
            kept = _experts_kept(changes["model"], self._state)
            changes.update({k: v for k, v in kept.items() if k not in changes})
        self._replace({**self._state, **changes}, tuple(changes), written=written)

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
        """The scenario as a JSON object with a version; presets are saved by name."""
        return fields.to_json(self._state)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Load a saved scenario. Unknown or missing keys, wrong types and other versions raise."""
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


def _switches_kept(state, stack, chip) -> dict:
    """torch.compile back to the stack's, and ``ep_overlap`` off, where the stack (the chip's,
    unless one is named) has none; nothing to change otherwise."""
    stack = stack or default_stack(chip)
    changes = {}
    if state["torch_compile"] and stack not in COMPILING:
        changes["torch_compile"] = None
    if state["ep_overlap"] and stack not in PAIRING:
        changes["ep_overlap"] = False
    return changes


def _experts_kept(model, state) -> dict:
    """A dense model drops expert parallelism; a MoE model takes the largest EP up to the one held
    that divides its experts. No model (a name or value refused later): nothing."""
    try:
        model = catalog.model(model)
    except (ValueError, TypeError):
        return {}
    if model.moe is None:
        dense = {"ep": 1, "etp": None, "ep_overlap": False}
        return {k: v for k, v in dense.items() if state[k] != v}
    ep = state["ep"]
    while model.moe.experts % ep:
        ep -= 1
    return {"ep": ep} if ep != state["ep"] else {}
