"""The scenario: everything a user chooses, validated, shared by every widget bound to it.

A ``Scenario`` is a traitlets object, so widgets observe it and each other through it. A bad
value raises ``ScenarioError`` naming the field; ``update(**changes)`` applies several fields at
once or none of them. ``to_json``/``from_json`` save and load it, versioned and strict.
"""

from __future__ import annotations

import dataclasses
import json
import math

from traitlets import Bool, Enum, Float, HasTraits, Instance, Int, TraitError, Tuple, Unicode, Union, observe, validate

from . import catalog, units
from .cost import REMAT_POLICIES, SCHEDULES, STRATEGIES, Chip, Model, Precision
from .cost.mesh import ROLES, check_fits_pod
from .cost.nodes import check_gpu_slice
from .presets import HARDWARE, MODELS, PRECISIONS

VERSION = 1
FIELDS = (
    "model", "hardware", "slice_shape", "pods", "batch", "seq_len", "strategy", "zero", "optimal_split",
    "x", "y", "z", "microbatches", "axis_roles", "precision", "mfu", "tokens", "attention_flops", "remat",
    "measured_step_time", "ring_factor", "halve_without_wrap", "latency", "overhead_bytes", "fits_below",
    "schedule", "virtual_stages", "sequence_parallel",
)  # fmt: skip


class ScenarioError(TraitError, ValueError):
    """A value the scenario cannot take; the message names the field."""


class Scenario(HasTraits):
    """What to evaluate: model, chip, slice, batch, strategy and split, precision, MFU.

    ``x`` and ``y`` are the manual FSDP x TP split, used by "fsdp+tp" when ``optimal_split`` is
    off; ``axis_roles`` (one of "x", "y", "z" per slice axis, or empty for the automatic rule)
    gives whole axes to the groups instead. ``microbatches`` None means 4·Z.

    >>> s = Scenario(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=3e6)
    >>> s.update(hardware="tpu-v5e", slice_shape=(16, 16))
    >>> Scenario.from_json(s.to_json()).slice_shape
    (16, 16)
    """

    model = Union([Instance(Model), Unicode()])
    hardware = Union([Instance(Chip), Unicode()])
    slice_shape = Tuple()
    pods = Int(1)
    batch = Float(3e6)  # tokens
    seq_len = Int(4096)
    strategy = Enum(STRATEGIES, default_value="fsdp+tp")
    zero = Int(None, allow_none=True)  # ZeRO stage for dp/fsdp; None: the strategy's own (0 / 3)
    optimal_split = Bool(True)
    x = Int(1)
    y = Int(1)
    z = Int(1)
    microbatches = Int(None, allow_none=True)
    axis_roles = Tuple()
    precision = Union([Instance(Precision), Unicode()])
    mfu = Float(0.4)
    tokens = Float(2e12)  # for the time to train
    attention_flops = Bool(False)  # count 12·L·T·N_h·H per token (SPEC B.1); the chapter does not
    remat = Enum(REMAT_POLICIES, default_value="checkpoints")
    measured_step_time = Float(None, allow_none=True)  # seconds; calibrates the MFU
    schedule = Enum(SCHEDULES, default_value="1f1b")  # pipeline schedule (SPEC B.6)
    virtual_stages = Int(1)  # with the interleaved schedule
    sequence_parallel = Bool(False)  # SPEC B.4
    ring_factor = Bool(False)  # SPEC B.7 corrections, all off as in the chapter
    halve_without_wrap = Bool(False)
    latency = Float(0.0)  # seconds per collective
    overhead_bytes = Float(0.0)  # runtime memory per chip (SPEC B.8)
    fits_below = Float(1.0)  # the share of HBM a layout may fill
    revision = Int(0, read_only=True)  # +1 per applied change, however many fields it touched

    def __init__(self, **kwargs):
        _reject_unknown(kwargs)
        values = {"model": "llama-2-13b", "hardware": "tpu-v5p", "precision": "book", **kwargs}
        try:
            pod = catalog.hardware(values["hardware"]).pod_shape
        except ValueError as err:
            raise ScenarioError(str(err)) from None
        values.setdefault("slice_shape", pod)
        values.setdefault("x", math.prod(values["slice_shape"]) // values.get("z", 1))  # manual split: all FSDP
        self._batching = False
        super().__init__(**values)

    def __repr__(self):
        return f"Scenario({self.model.name} on {self.hardware.name} {units.mesh(self.slice_shape)}, {self.strategy})"

    @property
    def chips(self) -> int:
        """Chips of one pod's slice."""
        return math.prod(self.slice_shape)

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
        if self.strategy == "fsdp+tp" and not self.optimal_split:
            stage = chips // z
            changes.update({"x": stage // self.y} if stage % self.y == 0 else {"optimal_split": True})
        return changes

    def update(self, **changes) -> None:
        """Apply several fields at once: all of them, or none if any is rejected."""
        _reject_unknown(changes)
        self._batching = True
        try:
            with self.hold_trait_notifications():  # cross-validates at the end; rolls back on error
                for name, value in changes.items():
                    setattr(self, name, value)
        finally:
            self._batching = False
        self.set_trait("revision", self.revision + 1)

    @observe(*FIELDS)
    def _count_revision(self, change):
        if not self._batching:
            self.set_trait("revision", self.revision + 1)

    @validate(*FIELDS)
    def _validate(self, proposal):
        name, value = proposal.trait.name, proposal.value
        try:
            value = _coerce(name, value)
            state = {f: _coerce(f, getattr(self, f)) for f in FIELDS if f != name}
            _check_together({**state, name: value})
        except ValueError as err:
            raise ScenarioError(str(err)) from None
        return value

    def to_json(self) -> str:
        """The scenario as a JSON object with a version; presets are saved by name."""
        data = {"version": VERSION}
        for name in FIELDS:
            value = getattr(self, name)
            if isinstance(value, (Model, Chip, Precision)):
                value = _preset_name(value) or dataclasses.asdict(value)
            data[name] = list(value) if isinstance(value, tuple) else value
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Load a saved scenario. Unknown or missing keys, wrong types and other versions raise."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ScenarioError(f"scenario is not valid JSON: {err}") from None
        if not isinstance(data, dict) or data.get("version") != VERSION:
            got = data.get("version") if isinstance(data, dict) else type(data).__name__
            raise ScenarioError(f"scenario version must be {VERSION}; got {got!r}")
        fields = {k: v for k, v in data.items() if k != "version"}
        unknown, missing = sorted(set(fields) - set(FIELDS)), [f for f in FIELDS if f not in fields]
        if unknown:
            raise ScenarioError(f"unknown scenario key {unknown[0]!r}; allowed: {', '.join(FIELDS)}")
        if missing:
            raise ScenarioError(f"scenario key {missing[0]!r} is missing")
        for name, kind in (("model", catalog.model_from_json), ("hardware", catalog.chip_from_json)):
            if isinstance(fields[name], dict):
                fields[name] = _named(kind, fields[name], name)
        if isinstance(fields["precision"], dict):
            fields["precision"] = _named(lambda d: Precision(**d), fields["precision"], "precision")
        for name in ("slice_shape", "axis_roles"):
            if isinstance(fields[name], list):
                fields[name] = tuple(fields[name])
        return cls(**fields)


def _coerce(name: str, value):
    """One field on its own: preset names to presets, ranges. Raises ValueError."""
    if name == "model":
        return catalog.model(value)
    if name == "hardware":
        return catalog.hardware(value)
    if name == "precision":
        return catalog.precision(value)
    if name == "slice_shape":
        ok = len(value) > 0 and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value)
        if not ok:
            raise ValueError(f"slice_shape must be axis lengths >= 1, such as (16, 16, 16); got {value!r}")
    if name == "zero" and value is not None and value not in (0, 1, 2, 3):
        raise ValueError(f"zero must be a ZeRO stage 0, 1, 2 or 3, or None for the strategy's own; got {value!r}")
    if (
        name in ("pods", "seq_len", "x", "y", "z", "microbatches", "virtual_stages")
        and value is not None
        and not 1 <= value <= 2**53
    ):
        raise ValueError(f"{name} must be a whole number from 1 to 2**53; got {value!r}")
    if name in ("batch", "tokens") and not 0 < value < 1e30:
        raise ValueError(f"{name} must be a number of tokens > 0 and < 1e30; got {value!r}")
    if name == "measured_step_time" and value is not None and not 0 < value < 1e30:
        raise ValueError(f"measured_step_time must be seconds > 0, or None; got {value!r}")
    if name in ("latency", "overhead_bytes") and not 0 <= value < 1e30:
        raise ValueError(f"{name} must be a number >= 0; got {value!r}")
    if name in ("mfu", "fits_below") and not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1]; got {value!r}")
    if name == "mfu" and not 0 < value <= 1:
        raise ValueError(f"mfu must be in (0, 1], such as 0.4; got {value!r}")
    if name == "axis_roles" and any(r not in ROLES for r in value):
        raise ValueError(f"axis_roles must be 'x', 'y' or 'z' per axis, or empty; got {value!r}")
    return value


def _check_together(s: dict) -> None:
    """The fields against each other. Raises ValueError."""
    if s["zero"] is not None and s["strategy"] == "tp":
        raise ValueError("zero (a ZeRO stage) shards over the data axis, which strategy 'tp' does not have")
    if s["virtual_stages"] != 1 and s["schedule"] != "interleaved":
        raise ValueError(
            f"virtual_stages goes with schedule 'interleaved'; got {s['virtual_stages']} with {s['schedule']!r}"
        )
    chip, shape = s["hardware"], s["slice_shape"]
    (check_gpu_slice if chip.is_gpu else check_fits_pod)(shape, chip.pod_shape)
    chips = math.prod(shape)
    roles = s["axis_roles"]
    if roles:
        if len(roles) != len(shape):
            raise ValueError(f"axis_roles must name a group for each of the {len(shape)} axes of {units.mesh(shape)}")
        group = {g: math.prod(n for n, r in zip(shape, roles) if r == g) for g in ROLES}
        forbidden = {"dp": "y", "fsdp": "y", "tp": "x"}.get(s["strategy"])
        if forbidden and group[forbidden] > 1:
            raise ValueError(
                f"axis_roles give {forbidden} {group[forbidden]} chips, but strategy {s['strategy']!r} has none"
            )
        return
    if chips % s["z"]:
        raise ValueError(f"z (pipeline stages) must divide the {chips} chips of {units.mesh(shape)}; got {s['z']}")
    manual = s["strategy"] == "fsdp+tp" and not s["optimal_split"]
    if manual and s["x"] * s["y"] * s["z"] != chips:
        raise ValueError(
            f"x*y*z must equal the {chips} chips of {units.mesh(shape)}; got {s['x']}*{s['y']}*{s['z']} = "
            f"{s['x'] * s['y'] * s['z']}"
        )


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
