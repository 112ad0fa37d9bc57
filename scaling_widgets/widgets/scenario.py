"""The scenario: everything a user chooses, shared by every widget bound to it.

A ``Scenario`` holds the fields below as traits, so widgets observe it. It stands for the four
values the cost model evaluates (``values()``), and ``estimate()`` is exactly what the panel
shows. Every change is checked whole before any of it is applied: a field's type and range
here, then the layout by the cost model's own check. A refusal is a ``ScenarioError`` that
names the field; nothing of a refused change is kept. ``to_json``/``from_json`` save and load it.
"""

from __future__ import annotations

import dataclasses
import json
import math

from traitlets import Any, HasTraits, Int, TraitError, observe, validate

from .. import catalog
from ..cost import (
    REMAT_POLICIES,
    SCHEDULES,
    STRATEGIES,
    Chip,
    Cluster,
    Estimate,
    Exactness,
    Layout,
    Model,
    Options,
    Precision,
    Workload,
    evaluate,
)  # fmt: skip
from ..cost.context import CP_KINDS
from ..cost.estimate import validate as validate_layout
from ..cost.mesh import ROLES
from ..cost.profiles import STACKS
from ..cost.steptime import Profile
from ..presets import HARDWARE, MODELS, PRECISIONS
from ..text import units
from . import fields as f

VERSION = 3  # 2 added ep, cp and cp_kind (SPEC D), 3 the stack and flash attention (SPEC E); older files
# load with the defaults
READABLE = (1, 2, 3)
# name -> (default, how a value is checked); the order is the JSON's.
FIELDS = {
    "model": ("llama-2-13b", f.preset(catalog.model)),
    "hardware": ("tpu-v5p", f.preset(catalog.hardware)),
    "slice_shape": (None, f.shape),  # None: the chip's full pod
    "pods": (1, f.whole(1, 2**22)),
    "batch": (16e6, f.number(0, 1e30, "tokens")),  # LLaMA-3's batch: it runs on a whole v5p pod
    "seq_len": (4096, f.whole(1, 2**24)),
    "strategy": ("fsdp+tp", f.one_of(STRATEGIES)),
    "zero": (None, f.optional(f.one_of((0, 1, 2, 3)))),  # None: the strategy's own (DP/TP 0, FSDP 3)
    "optimal_split": (True, f.boolean),
    "x": (None, f.optional(f.whole(1, 2**22))),  # the manual FSDP x TP split; None: all of a stage on X
    "y": (1, f.whole(1, 2**22)),
    "z": (1, f.whole(1, 2**22)),
    "microbatches": (None, f.optional(f.whole(1, 2**22))),  # None: 4·Z under pipelining, else 1
    "axis_roles": ((), f.roles(ROLES)),
    "precision": ("book", f.preset(catalog.precision)),
    "mfu": (0.4, f.optional(f.number(0, 1, "a share of peak", closed=True))),  # None: predict the step
    "tokens": (2e12, f.number(0, 1e30, "tokens")),  # for the time to train
    "attention_flops": (False, f.boolean),
    "remat": ("checkpoints", f.one_of(REMAT_POLICIES)),
    "measured_step_time": (None, f.optional(f.number(0, 1e30, "seconds"))),
    "ring_factor": (False, f.boolean),
    "halve_without_wrap": (False, f.boolean),
    "latency": (0.0, f.number(0, 1e30, "seconds", low_closed=True)),
    "overhead_bytes": (0.0, f.number(0, 1e30, "bytes", low_closed=True)),
    "fits_below": (1.0, f.number(0, 1, "a share of HBM", closed=True)),
    "schedule": ("1f1b", f.one_of(SCHEDULES)),
    "virtual_stages": (1, f.whole(1, 2**10)),
    "sequence_parallel": (False, f.boolean),
    "profile": (None, f.optional(f.profile)),  # None: the chip's; a measured step calibrates one
    "ep": (1, f.whole(1, 2**16)),  # expert parallelism, of the data axis (SPEC D.2)
    "cp": (1, f.whole(1, 2**20)),  # context parallelism, of the data axis (SPEC D.3)
    "cp_kind": ("ring", f.one_of(CP_KINDS)),
    "stack": (None, f.optional(f.one_of(tuple(STACKS)))),  # what the software keeps in memory (SPEC E.2)
    "flash_attention": (None, f.optional(f.boolean)),  # None: the stack's (on in every named stack)
}
# Files saved before these existed still load.
OPTIONAL_KEYS = ("slice_shape", "profile", "ep", "cp", "cp_kind", "stack", "flash_attention")


class ScenarioError(TraitError, ValueError):
    """A value the scenario cannot take; the message names the field."""


class Scenario(HasTraits):
    """What to evaluate: model, chip, slice, batch, strategy and split, precision, MFU.

    ``x`` and ``y`` are the manual FSDP x TP split, used by "fsdp+tp" when ``optimal_split`` is
    off; ``axis_roles`` (one of "x", "y", "z" per slice axis, or empty for the automatic rule)
    gives whole axes to the groups instead. ``microbatches`` None means 4·Z (1 without stages).

    >>> s = Scenario(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=3e6)
    >>> s.update(hardware="tpu-v5e", slice_shape=(16, 16))
    >>> Scenario.from_json(s.to_json()).slice_shape
    (16, 16)
    """

    locals().update({name: Any() for name in FIELDS})
    revision = Int(0, read_only=True)  # +1 per applied change, however many fields it touched

    def __init__(self, **kwargs):
        _reject_unknown(kwargs)
        values = {name: kwargs.get(name, default) for name, (default, _) in FIELDS.items()}
        values = _checked(values, kwargs)
        self._applying = True  # every value is checked: the traits take them as they are
        try:
            super().__init__(**values)
        finally:
            self._applying = False

    def __repr__(self):
        return f"Scenario({self.model.name} on {self.hardware.name} {units.mesh(self.slice_shape)}, {self.strategy})"

    @property
    def chips(self) -> int:
        """Chips of one pod's slice."""
        return math.prod(self.slice_shape)

    def state(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}

    def values(self) -> tuple[Cluster, Workload, Layout, Options]:
        """The cluster, workload, layout and options this scenario stands for."""
        return _values(self.state())

    def estimate(self) -> Estimate:
        """The scenario's own layout, evaluated: exactly the numbers the panel shows."""
        return evaluate(*self.values())

    def fitted_to(self, slice_shape, hardware=None) -> dict:
        """The changes that move this scenario onto another slice (or chip) and keep it whole.

        Pipeline stages that no longer divide the chips fall back to 1, axis roles of another
        number of axes are cleared, and a manual split keeps its TP degree if it can.
        """
        changes = {"slice_shape": tuple(slice_shape)}
        if hardware is not None:
            changes["hardware"] = hardware
        chips = math.prod(slice_shape)
        z = self.z if chips % self.z == 0 else 1
        if z != self.z:
            changes["z"] = z
        if self.axis_roles and len(self.axis_roles) != len(slice_shape):
            changes["axis_roles"] = ()
        stage = chips // z
        y = self.y if stage % self.y == 0 else 1
        changes.update(x=stage // y, y=y)
        return changes

    def update(self, **changes) -> None:
        """Apply several fields at once: all of them, or none if any is refused."""
        _reject_unknown(changes)
        new = _checked({**self.state(), **changes}, changes)
        self._applying = True
        try:
            with self.hold_trait_notifications():
                for name, value in new.items():  # the state checked: the changes and what follows (x)
                    setattr(self, name, value)
        finally:
            self._applying = False
        self.set_trait("revision", self.revision + 1)

    def __setattr__(self, name, value):
        """One field set directly is one change: ``update`` checks it and applies what follows."""
        if name in FIELDS and not getattr(self, "_applying", True):
            self.update(**{name: value})
        else:
            super().__setattr__(name, value)

    @validate(*FIELDS)
    def _validate(self, proposal):
        if self._applying:
            return proposal.value
        name = proposal.trait.name  # one field set directly: check it with the rest, as update does
        return _checked({**self.state(), name: proposal.value}, {name: proposal.value})[name]

    @observe(*FIELDS)
    def _count_revision(self, change):
        if not self._applying:
            self.set_trait("revision", self.revision + 1)

    def to_json(self) -> str:
        """The scenario as a JSON object with a version; presets are saved by name."""
        data = {"version": VERSION}
        for name, value in self.state().items():
            if isinstance(value, (Model, Chip, Precision)):
                value = _preset_name(value) or dataclasses.asdict(value)
            elif isinstance(value, Profile):
                value = dataclasses.asdict(value)
            data[name] = list(value) if isinstance(value, tuple) else value
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Load a saved scenario. Unknown or missing keys, wrong types and other versions raise."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            raise ScenarioError(f"scenario is not valid JSON: {err}") from None
        if not isinstance(data, dict) or data.get("version") not in READABLE:
            got = data.get("version") if isinstance(data, dict) else type(data).__name__
            raise ScenarioError(f"scenario version must be one of {READABLE}; got {got!r}")
        fields = {k: v for k, v in data.items() if k != "version"}
        unknown = sorted(set(fields) - set(FIELDS))
        missing = [name for name in FIELDS if name not in fields and name not in OPTIONAL_KEYS]
        if unknown:
            raise ScenarioError(f"unknown scenario key {unknown[0]!r}; allowed: {', '.join(FIELDS)}")
        if missing:
            raise ScenarioError(f"scenario key {missing[0]!r} is missing")
        for name, read in (("model", catalog.model_from_json), ("hardware", catalog.chip_from_json),
                           ("precision", lambda d: Precision(**d))):  # fmt: skip
            if isinstance(fields[name], dict):
                fields[name] = _named(read, fields[name], name)
        return cls(**fields)


def _checked(values: dict, changed) -> dict:
    """Every field checked on its own, then the layout as a whole by the cost model's check."""
    out = {}
    for name, value in values.items():
        try:
            out[name] = FIELDS[name][1](name, value)
        except (TypeError, ValueError, OverflowError) as err:
            raise ScenarioError(str(err)) from None
    if out["slice_shape"] is None:
        out["slice_shape"] = out["hardware"].default_slice
    if out["x"] is None or (out["x"] * out["y"] * out["z"] != math.prod(out["slice_shape"]) and "x" not in changed):
        out["x"] = max(math.prod(out["slice_shape"]) // (out["y"] * out["z"]), 1)  # a manual split starts whole
    try:
        validate_layout(*_values(out))
    except ValueError as err:
        raise ScenarioError(str(err)) from None
    return out


def _values(s: dict) -> tuple[Cluster, Workload, Layout, Options]:
    roles = tuple(s["axis_roles"]) or None
    manual = s["strategy"] == "fsdp+tp" and not s["optimal_split"] and roles is None
    exact = Exactness(ring_factor=s["ring_factor"], halve_without_wrap=s["halve_without_wrap"], latency=s["latency"])
    return (
        Cluster(s["hardware"], s["slice_shape"], s["pods"]),
        Workload(s["model"], s["batch"], s["seq_len"], s["precision"], s["tokens"]),
        Layout(
            strategy=s["strategy"], x=s["x"] if manual else None, y=s["y"] if manual else None,
            z=None if roles else s["z"], zero=s["zero"], microbatches=s["microbatches"], schedule=s["schedule"],
            virtual_stages=s["virtual_stages"], remat=s["remat"], sequence_parallel=s["sequence_parallel"],
            axis_roles=roles, ep=s["ep"], cp=s["cp"], cp_kind=s["cp_kind"],
        ),
        Options(
            mfu=s["mfu"], measured_step_time=s["measured_step_time"], attention_flops=s["attention_flops"],
            profile=s.get("profile"), stack=s.get("stack"), flash_attention=s.get("flash_attention"),
            exact=exact, overhead_bytes=s["overhead_bytes"], fits_below=s["fits_below"],
        ),
    )  # fmt: skip


def _reject_unknown(kwargs) -> None:
    unknown = sorted(set(kwargs) - set(FIELDS))
    if unknown:
        raise TypeError(f"Scenario got an unexpected keyword {unknown[0]!r}; allowed: {', '.join(FIELDS)}")


def _preset_name(value) -> str | None:
    table = {Model: MODELS, Chip: HARDWARE, Precision: PRECISIONS}[type(value)]
    return next((name for name, preset in table.items() if preset == value), None)


def _named(build, data: dict, field: str):
    try:
        return build(data)
    except (TypeError, ValueError) as err:
        raise ScenarioError(f"{field}: {err}") from None
