"""Every field a user sets, declared once: its scenario key, its CLI flag, its panel control.

A ``Field`` says where a user meets it: the value of the cost model it sets (``"layout.z"``), the
flag and help of the command line, the version of the saved scenario that added it, and the
panel's label. Its default and its check are the cost model's own, read from that value's
declaration (``cost/values.py``); a field of the scenario alone declares them here.

From this table come the CLI's options (``cli/options.py``), the ``Scenario``'s traits and JSON
keys (``widgets/scenario.py``), the equivalent command (``text/command.py``) and the planner's
options (``cost.search.plan``). A new option is a row here, and where it is new physics, a field
of its value and the formula that reads it.

A scenario's state is a flat dict, field name -> value. ``checked`` turns what a user gave into
a checked state, and ``values`` turns a state into the four values ``evaluate`` takes: the one
path from a panel, a saved file or the command line to a number.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import catalog
from .catalog import name_of
from .cost import Cluster, Layout, Options, Workload
from .cost.checks import InputError, Switch, refuse
from .cost.cluster.mesh import ROLES
from .cost.cluster.nodes import gpu_slice
from .cost.evaluate import validate
from .cost.schedules import SCHEDULES
from .cost.stacks import STACKS
from .cost.step.calibrate import profile_from_json
from .cost.strategies import BEST, STRATEGIES
from .cost.transformer.context import CP_KINDS
from .cost.transformer.counts import REMAT_POLICIES
from .cost.transformer.layer import Exactness
from .cost.transformer.shapes import Precision
from .presets import HARDWARE, MODELS, PRECISIONS
from .text import units

FROM_VALUE = object()  # a default read from the cost model's declaration of the field
VALUES = {
    "cluster": Cluster,
    "workload": Workload,
    "layout": Layout,
    "options": Options,
    "exact": Exactness,
}


@dataclass(frozen=True)
class Flag:
    """Another way to give a field on the command line: ``--chips 4096`` beside ``--mesh``."""

    name: str
    parse: Callable  # (text, flag) -> what ``resolve`` takes
    metavar: str | None = None
    help: str = ""
    resolve: Callable | None = None  # (parsed, state) -> the field's value; None: the parsed itself


@dataclass(frozen=True)
class Field:
    """A field a user sets (see the module's docstring)."""

    name: str  # the scenario's key and the API's keyword
    value: str | None  # "layout.z": the value and attribute it sets; None: the scenario's own
    help: str  # one line, for the CLI's help and the docs
    flag: str | None = None  # the CLI's flag; None: none
    parse: Callable | None = None  # CLI text -> value; None: the text itself
    metavar: str | None = None
    also: tuple = ()  # other flags that give the same field (a file, a count of chips)
    # where the flag is offered (plan: unless it searches it)
    commands: tuple = ("estimate", "plan")
    since: int = 1  # the saved scenario's version that added it; 0: not in the scenario
    absent_ok: bool = False  # a saved scenario of its version may leave it out
    default: Any = FROM_VALUE  # what the CLI and a scenario take when it is not given
    start: Any = FROM_VALUE  # the panel's first value, where it is not the default
    choices: tuple | None = None  # the names it takes, for the CLI and the panel's menus
    switch: bool = False  # a flag with no argument: present is True
    words: Callable | None = None  # value -> the CLI's argument text; None: str
    coerce: Callable | None = (
        None  # what a user gives (a preset's name, JSON) -> what the value takes
    )
    dump: Callable | None = None  # value -> JSON
    check: Callable | None = None  # the scenario's own fields' check; the others are the value's
    label: str = ""  # the panel's words for it
    choice_labels: dict | None = None  # the panel's words for each choice, where not the name

    @property
    def owner(self):
        """The value class this field belongs to (None: the scenario's own)."""
        return None if self.value is None else VALUES[self.value.split(".")[0]]

    @property
    def attribute(self) -> str:
        return self.name if self.value is None else self.value.split(".")[-1]

    def checker(self):
        """The check of this field: its value's declaration, or its own."""
        if self.check is not None or self.owner is None:
            return self.check
        return self.owner.__dataclass_fields__[self.attribute].metadata.get("check")

    def fallback(self):
        """Its default: the table's, else the value's declaration."""
        if self.default is not FROM_VALUE or self.owner is None:
            return None if self.default is FROM_VALUE else self.default
        declared = self.owner.__dataclass_fields__[self.attribute]
        return None if declared.default is dataclasses.MISSING else declared.default

    def first(self):
        """The panel's first value."""
        return self.fallback() if self.start is FROM_VALUE else self.start

    def get(self, values: tuple):
        """This field as the four values hold it."""
        cluster, workload, layout, options = values
        holder = {
            "cluster": cluster,
            "workload": workload,
            "layout": layout,
            "options": options,
            "exact": options.exact,
        }[self.value.split(".")[0]]
        return getattr(holder, self.attribute)

    def cli_words(self, value) -> str | None:
        """The CLI argument that gives ``value``; None if no flag can say it."""
        return (self.words or str)(value)


def _name(table: dict):
    """A preset's name for the command line; None for one of your own (no flag says it)."""
    return lambda value: name_of(value, table)


def _named(table: dict):
    """A preset saved by its name; one of your own by its fields."""
    return lambda value: name_of(value, table) or dataclasses.asdict(value)


def _preset(find, read):
    """A preset's name or the preset itself (``find``), or one of your own as JSON (``read``)."""
    return lambda name, value: read(value) if isinstance(value, dict) else find(value)


def _file(read):
    """A flag that names a file: read it."""
    return lambda text, flag: read(text)


def _on_off(value) -> str:
    return "on" if value else "off"


def _shape(name: str, value):
    """Axis lengths as a tuple, or None for the chip's default slice (JSON gives lists)."""
    return tuple(value) if isinstance(value, list) else value


def _roles(name: str, value):
    ok = isinstance(value, (tuple, list)) and len(value) <= 4 and all(r in ROLES for r in value)
    if not ok:
        raise refuse(
            name, "one of 'x', 'y', 'z' per slice axis, or empty for the automatic rule", value
        )
    return tuple(value)


def _profile(name: str, value):
    """An efficiency profile, or its fields as a JSON object."""
    if isinstance(value, dict):
        return profile_from_json(json.dumps(value))
    return value


def _profile_file(path: str):
    return profile_from_json(catalog.read_text(path))


def _fraction(text: str, field: str) -> float:
    value = units.parse_count(text, field)
    if value > 1:
        raise ValueError(f"{field} must be in (0, 1], such as 0.4; got {text!r}")
    return value


def _gigabytes(text: str, field: str) -> float:
    value = units.parse_count(text, field) * 1e9
    if not value < 1e30:
        raise ValueError(f"{field} must be a number of GB below 1e21; got {text!r}")
    return value


def _on(text: str, flag: str) -> bool:
    """A flag's word for a switch: ``--flash-attention on`` is True."""
    return {"on": True, "off": False}[text]


COUNT, WHOLE = units.parse_count, units.parse_whole


def _gpu_slice(chips: int, hardware) -> tuple[int, int]:
    """``--chips N``: whole nodes of the chip's preset, or part of one."""
    chip = catalog.hardware(hardware)
    if not chip.is_gpu:
        raise refuse(
            "chips", f"left out for a TPU torus ({chip.name}): give its shape with --mesh", chips
        )
    return gpu_slice(chips=chips, node_size=chip.node_size)


FIELDS_TABLE = (
    # The cluster.
    Field("hardware", "cluster.chip", "a chip preset", flag="--hardware", default="tpu-v5p",
          choices=tuple(HARDWARE), coerce=_preset(catalog.hardware, catalog.chip_from_json),
          also=(Flag("--hardware-file", _file(catalog.chip_from_json), "F.json",
                     "your own chip as JSON"),),
          words=_name(HARDWARE), dump=_named(HARDWARE), label="Hardware"),
    Field("slice_shape", "cluster.slice_shape",
          "slice shape such as 16x16x16 (default: a TPU's full pod, 1,024 GPUs)", flag="--mesh",
          parse=units.parse_mesh, coerce=_shape, words=units.mesh, absent_ok=True,
          also=(Flag("--chips", WHOLE, None, "GPUs in all (GPU presets; nodes from the preset)",
                     resolve=lambda chips, state: _gpu_slice(chips, state["hardware"])),)),
    Field("pods", "cluster.pods", "pods joined by DCN", flag="--pods", parse=WHOLE,
          label="Pods (DCN)"),
    # The workload.
    Field("model", "workload.model", "a model preset", flag="--model", choices=tuple(MODELS),
          start="llama-2-13b", coerce=lambda name, value: catalog.model(value),
          also=(Flag("--model-file", _file(catalog.model_from_json), "F.json",
                     "your own model as JSON"),),
          words=_name(MODELS), dump=_named(MODELS), label="Model"),
    Field("batch", "workload.batch", "global batch in tokens: 3M, 3e6 or 3000000", flag="--batch",
          parse=COUNT, start=16e6, words=lambda v: repr(float(v)), label="Batch"),
    Field("seq_len", "workload.seq_len", "sequence length", flag="--seq-len", parse=WHOLE,
          default=4096, label="Seq length"),
    Field("precision", "workload.precision", "bytes per parameter policy (book: 10)",
          flag="--precision", default="book", choices=tuple(PRECISIONS),
          coerce=_preset(catalog.precision, lambda fields: Precision(**fields)),
          words=_name(PRECISIONS), dump=_named(PRECISIONS), label="Precision"),
    Field("tokens", "workload.tokens", "training tokens, such as 15T: reports time to train",
          flag="--tokens", parse=COUNT, start=2e12, words=lambda v: repr(float(v)),
          label="Train on"),
    # The layout.
    Field("strategy", "layout.strategy", "the parallelism strategy", flag="--strategy",
          commands=("estimate",), choices=tuple(STRATEGIES), label="Strategy",
          choice_labels={name: s.label for name, s in STRATEGIES.items()}),
    Field("optimal_split", None, "FSDP + TP at its best legal split (off: x and y by hand)",
          default=True, check=Switch(), label="Best split (computed)"),
    Field("x", "layout.x", "FSDP/data degree", flag="--fsdp", metavar="X", parse=WHOLE),
    Field("y", "layout.y", "tensor-parallel degree", flag="--tp", metavar="Y", parse=WHOLE,
          default=1),
    Field("z", "layout.z", "pipeline stages", flag="--pp", metavar="Z", parse=WHOLE, default=1,
          label="PP stages Z"),
    Field("microbatches", "layout.microbatches", "pipeline microbatches (default 4·Z)",
          flag="--microbatches", parse=WHOLE, label="Microbatches"),
    Field("axis_roles", "layout.axis_roles", "the group each slice axis is given to, by hand",
          default=(), check=_roles),
    Field("zero", "layout.zero", "ZeRO stage on the data axis (dp, tp: 0; fsdp, fsdp+tp: 3)",
          flag="--zero", parse=lambda text, flag: int(text), choices=(0, 1, 2, 3), label="ZeRO"),
    Field("ep", "layout.ep",
          "expert parallelism: EP chips of the data axis split a MoE model's experts",
          flag="--ep", metavar="EP", parse=WHOLE, since=2, label="EP (experts)"),
    Field("cp", "layout.cp", "context parallelism: CP chips of the data axis split each sequence",
          flag="--cp", metavar="CP", parse=WHOLE, since=2, label="CP (sequence)"),
    Field("cp_kind", "layout.cp_kind", "how CP passes keys and values", flag="--cp-kind",
          choices=CP_KINDS, since=2, label="CP passes",
          choice_labels={"ring": "a ring", "all-gather": "an all-gather",
                         "ulysses": "Ulysses all-to-all"}),
    Field("schedule", "layout.schedule", "pipeline schedule", flag="--schedule",
          choices=tuple(SCHEDULES), label="Schedule",
          choice_labels={name: s.label for name, s in SCHEDULES.items()}),
    Field("virtual_stages", "layout.virtual_stages",
          "virtual stages per device, with an interleaved schedule", flag="--virtual-stages",
          parse=WHOLE, label="virtual stages"),
    Field("sequence_parallel", "layout.sequence_parallel",
          "shard LayerNorm and dropout activations over TP", flag="--sequence-parallel",
          switch=True, label="sequence parallel"),
    Field("microbatch_seqs", "layout.microbatch_seqs", "sequences per microbatch",
          flag="--microbatch-seqs", parse=WHOLE, commands=("estimate",), since=4),
    Field("remat", "layout.remat", "recompute policy", flag="--remat", choices=REMAT_POLICIES,
          label="Recompute"),
    Field("mx", "layout.mx", "override: mesh axes the X group spans", flag="--mx", parse=COUNT,
          commands=("estimate",), since=4),
    Field("my", "layout.my", "override: mesh axes the Y group spans", flag="--my", parse=COUNT,
          commands=("estimate",), since=4),
    Field("wraparound", "layout.wraparound",
          "override: every group a ring (on) or none (off); default the chip's rule",
          flag="--wraparound", parse=_on, choices=("on", "off"), words=_on_off, since=4),
    # How the numbers are read.
    Field("mfu", "options.mfu",
          "take this utilisation as given, the chapter's model (default: predict the step)",
          flag="--mfu", parse=_fraction, start=0.4, label="MFU"),
    Field("measured_step_time", "options.measured_step_time",
          "calibrate: report the MFU and HFU a measured step time implies",
          flag="--measured-step-time", metavar="SECONDS", parse=COUNT, commands=("estimate",),
          label="Measured step"),
    Field("profile", "options.profile",
          "efficiency profile for the predicted step (default: the chip's)", flag="--profile",
          metavar="FILE.json", parse=_file(_profile_file), coerce=_profile,
          words=lambda v: None, dump=dataclasses.asdict, absent_ok=True),
    Field("attention_flops", "options.attention_flops",
          "count attention FLOPs, 12·L·T·N_h·H a token", flag="--attention-flops", switch=True,
          label="count attention FLOPs"),
    Field("ring_factor", "exact.ring_factor", "a ring over n chips moves (n-1)/n of the array",
          flag="--ring-factor", switch=True, label="ring factor (n-1)/n"),
    Field("halve_without_wrap", "exact.halve_without_wrap",
          "halve a TPU group's bandwidth without a ring", flag="--halve-without-wraparound",
          switch=True, label="halve bandwidth without wraparound"),
    Field("latency", "exact.latency", "seconds per collective", flag="--latency",
          metavar="SECONDS", parse=COUNT, label="latency (µs)"),
    Field("overhead_bytes", "options.overhead_bytes", "runtime memory per chip, GB",
          flag="--overhead-gb", parse=_gigabytes, words=lambda v: repr(v / 1e9),
          label="overhead (GB)"),
    Field("fits_below", "options.fits_below", "share of HBM a layout may fill (0.9)",
          flag="--fits-below", parse=_fraction, label="fits below"),
    Field("stack", "options.stack", "what the software keeps in memory, for the peak and whether"
          " it fits; it also turns flash attention on (default: the chip's profile's)",
          flag="--stack", choices=tuple(STACKS), since=3, label="Stack"),
    Field("flash_attention", "options.flash_attention", "off keeps the s x s attention scores,"
          " in memory and in the step (default: the stack's, on)", flag="--flash-attention",
          choices=("on", "off"), parse=_on, words=_on_off, since=3, label="Flash attn"),
)  # fmt: skip
FIELDS: dict[str, Field] = {f.name: f for f in FIELDS_TABLE}
VERSION = max(f.since for f in FIELDS_TABLE)  # the saved scenario's version
READABLE = tuple(range(1, VERSION + 1))
# the scenario's keys, in the JSON's order
SCENARIO = tuple(f.name for f in FIELDS_TABLE if f.since)


def scenario_start() -> dict:
    """The panel's first state (before it is checked)."""
    return {name: FIELDS[name].first() for name in SCENARIO}


def defaults() -> dict:
    """What the command line takes for a field it is not given (before it is checked)."""
    return {name: FIELDS[name].fallback() for name in SCENARIO}


def checked(state: dict, changed=()) -> dict:
    """The state with every field checked (a preset's name becomes the preset), the slice and the
    split filled in, and the layout checked whole by the cost model: ``ValueError`` naming the
    field otherwise. ``changed`` names the fields the user just set (see ``filled``)."""
    out = filled(coerced(state), changed)
    validate(*values(out))
    return out


def coerced(state: dict) -> dict:
    """Every field checked on its own: a preset's name becomes the preset, a number its type."""
    return {name: _checked_field(FIELDS[name], value) for name, value in state.items()}


def filled(state: dict, changed=()) -> dict:
    """The slice (None: the chip's default) and a split by hand filled in.

    The split by hand is kept whole: a group left out (None) is the rest of a stage, and when the
    slice or the stages change under it, X follows unless it was just given. Choosing a strategy
    that does not split a stage, without a split, turns the split by hand off.
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
    Y given is a split by hand, the other group the rest of a stage unless it is given too."""
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
    ``state``."""
    given = {}
    for dest, value in parsed.items():
        name, _, alt = dest.partition(":")
        field = FIELDS[name]
        if alt:
            flag = next(f for f in field.also if f.name == alt)
            value = value if flag.resolve is None else flag.resolve(value, {**state, **given})
        elif field.choices is not None and field.parse is not None:
            value = field.parse(value, field.flag)
        given[name] = value
    return given


def _checked_field(field: Field, value):
    if field.coerce is not None:
        try:
            value = field.coerce(field.name, value)
        except InputError:
            raise
        except (TypeError, ValueError) as err:  # a preset's name or a file's JSON: its own words
            raise ValueError(f"{field.name}: {err}") from None
    check = field.checker()
    return value if check is None else check(field.name, value)


def values(state: dict) -> tuple[Cluster, Workload, Layout, Options]:
    """The cluster, workload, layout and options a checked state stands for.

    ``x`` and ``y`` are a split by hand, used when ``optimal_split`` is off (by every strategy:
    DP, FSDP and TP refuse a split other than their own); ``axis_roles`` (one of "x", "y", "z" per
    slice axis; empty: the automatic rule) give whole axes to the groups instead, and set Z.
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
    """A checked state as a saved scenario: a JSON object with its version, presets by name."""
    data = {"version": VERSION}
    for name in SCENARIO:
        field, value = FIELDS[name], state[name]
        if value is not None and field.dump is not None:
            value = field.dump(value)
        data[name] = list(value) if isinstance(value, tuple) else value
    return json.dumps(data)


def from_json(text: str) -> dict:
    """A saved scenario's state, not yet checked. Unknown or missing keys and other versions raise
    ``ValueError``; a key its version did not have yet takes its default."""
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
    if version < 4 and STRATEGIES.get(data["strategy"], STRATEGIES[BEST]).on != STRATEGIES[BEST].on:
        data["optimal_split"] = True  # before version 4 a split by hand counted for FSDP + TP only
    return {name: data[name] for name in SCENARIO}
