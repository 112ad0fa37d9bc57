"""Launch files (docs/MODEL.md §G): a layout written as torchtitan's job TOML, Megatron-LM's
``torchrun … pretrain_gpt.py`` script, MaxText's overrides or llm-foundry's YAML, and those files
read back into a scenario's fields. One module a format, in ``formats/`` (a registry: a new
framework is a new file there); ``conventions`` maps our degrees to theirs, ``keys`` reads each
format's schema, ``shell`` a script's launch line.

Tier 7 of the package (``tests/test_tiers.py`` declares the order): it imports from fields/, text/,
catalog.py, presets.py and cost/; widgets/ and cli/ above it write and read the files.
"""

from __future__ import annotations

import dataclasses
import inspect
import pathlib

from .. import catalog
from ..cost import Estimate
from ..cost.ground.refusals import refuse
from ..text.explain import layout_name
from ..text.units import seconds
from .conventions import Degrees, degrees_of, fields_of
from .formats import FORMATS, Format
from .keys import LaunchFile
from .shell import with_called, with_sourced

COMMENT = "#"  # every format here comments with it


def detect(text: str, name: str = "") -> str:
    """Which format a file is, the first in order that knows it (``Format.detects``).

    Parameters
    ----------
    text : str
        The file's text.
    name : str, default ""
        The file's name; "" when it has none (text given as it is).

    Returns
    -------
    framework : str
        The format's name, a key of ``FORMATS``.

    Raises
    ------
    InputError
        When no format knows the file, naming the files ``--config`` reads.
    """
    for found in FORMATS.values():
        if found.detects(text, name):
            return found.name
    raise refuse("config", readable(), name or "?")


def readable() -> str:
    """The files ``--config`` reads, in words: every format's.

    Returns
    -------
    words : str
        Each format's ``READS``, in order, joined as a list ("…, or …").
    """
    said = [found.reads for found in FORMATS.values()]
    return ", ".join(said[:-1]) + ", or " + said[-1]


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

    Parameters
    ----------
    source : str
        The launch file: its path, or its text (text holds a newline, or names no existing file
        with a suffix); ``FILE:NAME`` for the config NAME of a torchtitan config registry.
    chip : Chip
        The chip the layout runs on; a launch file does not name its chips.
    chips : int, optional
        The chips in all, every pod [chips]; None: the world the file says (a Megatron-LM
        script's torchrun line). torchtitan's and MaxText's files say none, so they need it.
    pods : int, optional
        P, the pods, data-parallel replicas across the data-center network; None: what the file
        says (MaxText's ``num_slices``), else one.
    model : str or Model, optional
        A preset's name or a ``Model``; None: a ``config.json`` beside the file, else the model
        the file names or describes.
    framework : str, optional
        The format, a key of ``FORMATS``; None: detected from the file (``detect``).

    Returns
    -------
    fields : dict
        The scenario's fields: the model, chip, batch, degrees and switches the file sets.
    read : LaunchFile
        What was read, ignored and approximated.

    Raises
    ------
    InputError
        Naming the key or flag the model cannot read or price, or degrees that do not divide the
        chips (``fields_of``).
    """
    source, entry = _entry(source)
    path = pathlib.Path(source)
    is_file = "\n" not in source and path.suffix != "" and _exists(path)
    text = path.read_text() if is_file else source
    framework = framework or detect(text, path.name if is_file else "")
    beside = path.parent / "config.json" if is_file else None
    if model is None and beside is not None and beside.exists():  # the team's own model
        model = catalog.model_from_json(beside)
    text, missing = with_sourced(text, path.parent) if is_file else (text, [])
    text, not_run = with_called(text, path.parent) if is_file else (text, [])
    takes = inspect.signature(FORMATS[framework].read).parameters
    named = {} if entry is None else {"entry": entry}
    if named and "entry" not in takes:
        raise refuse("config", "FILE alone (FILE:NAME names a torchtitan registry's config)", entry)
    if is_file and "folder" in takes:  # where the file's own relative paths start
        named["folder"] = path.parent
    if "chip" in takes:
        named["chip"] = chip
    read = FORMATS[framework].read(text, chips=chips, model=model, pods=pods, **named)
    unread = tuple(
        f"sourced {name}: not found beside the file, its settings not read" for name in missing
    ) + tuple(f"runs {name}: not found beside the file, its settings not read" for name in not_run)
    read = dataclasses.replace(read, notes=read.notes + unread)
    degrees = read.degrees if pods is None else dataclasses.replace(read.degrees, pods=pods)
    fields = {**fields_of(degrees, chip), **read.extra}
    fields["model"] = read.model
    fields["hardware"] = chip
    return fields, read


def write_config(framework: str, e: Estimate) -> str:
    """The evaluated layout ``e`` as ``framework``'s launch file, headed by comments that say what
    it is for, the knobs chosen for it and what it cannot express (after a script's ``#!``).

    Parameters
    ----------
    framework : str
        The format, a key of ``FORMATS``: "torchtitan", "megatron" or "maxtext".
    e : Estimate
        One evaluated layout.

    Returns
    -------
    text : str
        The launch file's text.

    Raises
    ------
    InputError
        For a framework not in ``FORMATS``, or a layout no framework can run (``degrees_of``).
    """
    if framework not in FORMATS:
        raise refuse("framework", f"one of {', '.join(FORMATS)}", framework)
    d = degrees_of(e)
    model = e.workload.model
    text, chosen, cannot = FORMATS[framework].write(d, model=model, chip=e.chip)
    head = [
        f"Written by scaling-widgets: {model.name} on {d.world:,} {e.chip.name},"
        f" batch {d.global_batch:,} sequences of {d.seq_len}",
        f"Layout: {layout_name(e)}; predicted step {seconds(float(e.step_time))}",
        *(f"Chosen for it: {c}" for c in chosen),
        *(f"Cannot express: {c}" for c in cannot),
    ]
    shebang, text = text.split("\n", 1) if text.startswith("#!") else ("", text)
    comments = [f"{COMMENT} {line}" for line in head]
    return "\n".join([*([shebang] if shebang else []), *comments, "", text])


__all__ = [
    "FORMATS",
    "Degrees",
    "Format",
    "LaunchFile",
    "degrees_of",
    "detect",
    "read_config",
    "write_config",
]


def _entry(source: str) -> tuple[str, str | None]:
    """``FILE:NAME`` as the file and the config it names (a torchtitan registry's function);
    a file, or text, as it is."""
    if "\n" in source or ":" not in source:
        return source, None
    file, name = source.rsplit(":", 1)
    if name.isidentifier() and _exists(pathlib.Path(file)):
        return file, name
    return source, None


def _exists(path: pathlib.Path) -> bool:
    """Whether a file is there; False for text no file could be named (a one-line script of
    flags is longer than a file's name may be)."""
    try:
        return path.exists()
    except OSError:
        return False
