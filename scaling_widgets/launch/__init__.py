"""Launch files (docs/MODEL.md §G): a layout written as torchtitan's job TOML, Megatron-LM's
``torchrun … pretrain_gpt.py`` script or MaxText's overrides, and those files read back into a
scenario's fields. One module a framework; ``conventions`` maps our degrees to theirs, ``keys``
holds each framework's schema, ``shell`` reads a script's launch line.

Tier 7 of the package (``tests/test_tiers.py`` declares the order): it imports from fields/, text/,
catalog.py, presets.py and cost/; widgets/ and cli/ above it write and read the files.
"""

from __future__ import annotations

import dataclasses
import pathlib

from .. import catalog
from ..cost import Estimate
from ..cost.ground.refusals import refuse
from ..presets import MODELS
from ..text.explain import layout_name
from ..text.units import seconds
from . import maxtext, megatron, torchtitan
from .conventions import Degrees, degrees_of, fields_of
from .keys import LaunchFile

FRAMEWORKS = ("torchtitan", "megatron", "maxtext")
COMMENT = "#"  # every format here comments with it


def detect(text: str, name: str = "") -> str:
    """Which framework a file is for: a TOML is torchtitan's; flags of Megatron-LM (or a script
    that runs ``pretrain_*.py``) are Megatron-LM's."""
    if name.endswith(".toml") or text.lstrip().startswith("["):
        return "torchtitan"
    if name.endswith((".yml", ".yaml")) or "maxtext" in text or "_parallelism" in text:
        return "maxtext"
    if "pretrain_" in text or "--num-layers" in text or "--tensor-model-parallel-size" in text:
        return "megatron"
    raise refuse(
        "config",
        "a torchtitan TOML, a Megatron-LM script or flags, or a MaxText YAML or script",
        name or "?",
    )


def read_config(
    source: str,
    *,
    chip,
    chips: int | None = None,
    pods: int | None = None,
    model=None,
    framework: str | None = None,
) -> tuple[dict, LaunchFile]:
    """A launch file (a path, or its text) as a scenario's fields on ``chip`` (``chips`` of it in
    all, where the file does not say, over ``pods`` pods), with the file's reading: its ignored
    keys and notes. The model is ``model``, else a Hugging Face ``config.json`` beside the file,
    else the one the file names.

    Returns
    -------
    fields : dict
        The scenario's fields: the model, chip, batch, degrees and switches the file sets.
    read : LaunchFile
        What was read, ignored and approximated.
    """
    path = pathlib.Path(source)
    is_file = "\n" not in source and path.suffix != "" and path.exists()
    text = path.read_text() if is_file else source
    framework = framework or detect(text, path.name if is_file else "")
    beside = path.parent / "config.json" if is_file else None
    if model is None and beside is not None and beside.exists():  # the team's own model
        model = catalog.model_from_json(beside)
    module = {"torchtitan": torchtitan, "megatron": megatron, "maxtext": maxtext}[framework]
    slices = {"pods": pods} if framework == "maxtext" else {}  # its DCN axes fill the pods
    read = module.read(text, chips=chips, model=model, **slices)
    degrees = read.degrees if pods is None else dataclasses.replace(read.degrees, pods=pods)
    fields = {**fields_of(degrees, chip), **read.extra}
    fields["model"] = read.model
    fields["hardware"] = chip
    return fields, read


def write_config(framework: str, e: Estimate) -> str:
    """The evaluated layout ``e`` as ``framework``'s launch file, headed by comments that say what
    it is for, the knobs chosen for it and what it cannot express."""
    d = degrees_of(e)
    model = e.workload.model
    name = catalog.name_of(model, MODELS) or model.name
    if framework == "torchtitan":
        text, chosen, cannot = torchtitan.write(d, model=name, layers=model.layers)
    elif framework == "megatron":
        text, chosen, cannot = megatron.write(d, model=model, node_size=e.chip.node_size)
    elif framework == "maxtext":
        text, chosen, cannot = maxtext.write(d, model=name if name in MODELS else model)
    else:
        raise refuse("framework", f"one of {', '.join(FRAMEWORKS)}", framework)
    head = [
        f"Written by scaling-widgets: {model.name} on {d.world:,} {e.chip.name},"
        f" batch {d.global_batch:,} sequences of {d.seq_len}",
        f"Layout: {layout_name(e)}; predicted step {seconds(float(e.step_time))}",
        *(f"Chosen for it: {c}" for c in chosen),
        *(f"Cannot express: {c}" for c in cannot),
    ]
    shebang = ["#!/bin/bash"] if framework == "megatron" else []
    return "\n".join([*shebang, *(f"{COMMENT} {line}" for line in head), "", text])


__all__ = [
    "FRAMEWORKS",
    "Degrees",
    "LaunchFile",
    "degrees_of",
    "detect",
    "read_config",
    "write_config",
]
