"""Finding presets by name, and reading a user's own model or chip from JSON.

Every failure is a ``ValueError`` that names the field, the value and what is allowed. A file is
read only if it is a regular file (not a pipe, a device or a directory) of at most
``LARGEST_FILE`` bytes of UTF-8.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import reprlib
import stat
from typing import TYPE_CHECKING

from .cost.hardware.chip import Chip
from .cost.transformer.shapes import MLA, Model, MoE, Precision
from .hf_config import looks_like_hf, model_from_hf
from .presets import HARDWARE, MODELS, PRECISIONS

if TYPE_CHECKING:
    from pathlib import Path

LARGEST_FILE = 1_000_000  # bytes: a chip or model is under 2 kB, a Hugging Face config a few kB


def hardware(chip: str | Chip) -> Chip:
    """A chip preset by name, or the ``Chip`` given.

    Parameters
    ----------
    chip : str or Chip
        A preset's name (``matching``: "H100" is "h100"), or a ``Chip``.

    Returns
    -------
    chip : Chip
        The preset, or the ``Chip`` given.

    Raises
    ------
    ValueError
        For a name no preset goes by, with the nearest.
    """
    return chip if isinstance(chip, Chip) else _lookup("hardware", chip, HARDWARE)


def model(model: str | dict | Model) -> Model:
    """A model preset by name, the ``Model`` given, or one read from JSON: a dict, or the path of a
    ``.json`` file (a Hugging Face ``config.json`` as published, or our own keys).

    Parameters
    ----------
    model : str or dict or Model
        A preset's name, a ``Model``, a dict of JSON keys, or the path of a ``.json`` file.

    Returns
    -------
    model : Model
        The preset, the ``Model`` given, or the one the JSON describes.

    Raises
    ------
    ValueError
        For a name no preset goes by (with the nearest), or JSON that is not a model.
    """
    if isinstance(model, dict) or (
        isinstance(model, (str, os.PathLike)) and str(model).endswith(".json")
    ):
        return model_from_json(model)
    return model if isinstance(model, Model) else _lookup("model", model, MODELS)


def precision(policy: str | Precision) -> Precision:
    """A precision policy by name, or the ``Precision`` given.

    Parameters
    ----------
    policy : str or Precision
        A policy's name (a key of ``PRECISIONS``), or a ``Precision``.

    Returns
    -------
    policy : Precision
        The policy.

    Raises
    ------
    ValueError
        For a name no policy goes by, with the nearest.
    """
    return policy if isinstance(policy, Precision) else _lookup("precision", policy, PRECISIONS)


def name_of(preset, table: dict) -> str | None:
    """The name a preset goes by in ``table`` (a name given is its own), or None for one of your
    own.

    Parameters
    ----------
    preset : str or object
        A name, or a value such as a ``Model`` or ``Chip``.
    table : dict
        The presets: name -> value (``MODELS``, ``HARDWARE``, ``PRECISIONS``).

    Returns
    -------
    name : str or None
        The name of the first preset equal to ``preset``; ``preset`` itself where it is a name
        in ``table``; None otherwise.
    """
    if isinstance(preset, str):
        return preset if preset in table else None
    return next((name for name, value in table.items() if value == preset), None)


def model_name_of(model) -> str | None:
    """The preset a model is, its multi-token-prediction modules aside (a framework's flavor or
    ``model_name`` is the model without them; MODEL.md §D.1).

    Parameters
    ----------
    model : str or Model
        A preset's name or a ``Model``.

    Returns
    -------
    name : str or None
        The preset's name in ``MODELS``; None for a model of your own.

    Examples
    --------
    >>> import dataclasses
    >>> from scaling_widgets.presets import MODELS
    >>> model_name_of(dataclasses.replace(MODELS["deepseek-v3"], mtp_layers=0))
    'deepseek-v3'
    """
    if isinstance(model, str):
        return name_of(model, MODELS)
    same = (
        n for n, p in MODELS.items() if dataclasses.replace(p, mtp_layers=model.mtp_layers) == model
    )
    return next(same, None)


def preset_with_mtp(name: str, mtp_layers: int) -> str | Model:
    """A preset as a framework's file names it, with the MTP modules the file sets (MODEL.md
    §D.1): the preset's name where it has as many, else the preset with them.

    Parameters
    ----------
    name : str
        The preset's name in ``MODELS``.
    mtp_layers : int
        The multi-token-prediction modules the file sets.

    Returns
    -------
    model : str or Model
        The name, or the preset with ``mtp_layers`` modules.

    Examples
    --------
    >>> preset_with_mtp("deepseek-v3", 1), preset_with_mtp("deepseek-v3", 0).mtp_layers
    ('deepseek-v3', 0)
    """
    preset = MODELS[name]
    if preset.mtp_layers == mtp_layers:
        return name
    return dataclasses.replace(preset, mtp_layers=mtp_layers)


def model_from_json(source: str | Path | dict) -> Model:
    """A ``Model`` from a JSON file, a JSON string or a dict: a Hugging Face ``config.json`` as
    published (``hf_config``), or our own keys.

    Our keys: layers, d_model, d_ff, heads, kv_heads, head_dim, vocab, gated, tied_embeddings, and
    optionally name, causal (false for a model whose attention is not masked; MODEL.md §C.4), moe
    (the keys of ``MoE``), mla (those of ``MLA``), dropout and mtp_layers (multi-token
    prediction modules, MODEL.md §D.1). Unknown and missing keys are errors.

    Parameters
    ----------
    source : str or Path or dict
        A JSON file's path, JSON text (it starts with "{"), or a dict.

    Returns
    -------
    model : Model
        The model the JSON describes.

    Raises
    ------
    ValueError
        For a file that cannot be read, text that is not a JSON object, or an unknown or a
        missing key, naming it.
    """
    data = _read_json(source)
    if looks_like_hf(data):
        return model_from_hf(data)
    parts = {
        key: _from_json(cls, _object(key, data[key]), optional=_defaults(cls))
        for key, cls in (("moe", MoE), ("mla", MLA))
        if data.get(key) is not None
    }
    optional = {
        "name": "custom model",
        "causal": True,
        "moe": None,
        "mla": None,
        "dropout": 0.0,
        "mtp_layers": 0,
    }
    return _from_json(Model, {**data, **parts}, optional=optional)


def _object(key: str, value) -> dict:
    if not isinstance(value, dict):
        raise ValueError(
            f"model key {key!r} must be an object of its own keys; got {_shown(value)}"
        )
    return value


def _defaults(cls) -> dict:
    return {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


def chip_from_json(source: str | Path | dict) -> Chip:
    """A ``Chip`` from a JSON file, a JSON string or a dict (the fields of ``Chip``; name
    optional; ``id`` only to take a preset's measured physics and default stack).

    Parameters
    ----------
    source : str or Path or dict
        A JSON file's path, JSON text (it starts with "{"), or a dict.

    Returns
    -------
    chip : Chip
        The chip the JSON describes.

    Raises
    ------
    ValueError
        For a file that cannot be read, text that is not a JSON object, or an unknown or a
        missing key, naming it.
    """
    optional = {
        "name": "custom chip",
        "wraparound": "cube",
        "node_size": 0,
        "scaleout_bw": 0.0,
        "flops_fp8": 0.0,
        "power": 0.0,  # watts; none published: no energy unless the run is given one
        "id": "",  # your own chip: the datasheet's shares, not a preset's measured physics
        "hbm_limit": 0.0,  # what the runtime lets a program allocate; 0: all of hbm_bytes
        "runtime_bytes": 0.0,  # held outside the framework's allocator (CUDA context, NCCL)
        "blas_workspace": None,  # a cuBLAS handle's workspace; None: PyTorch's default on a GPU
    }
    return _from_json(Chip, source, optional=optional)


def _lookup(kind: str, name, table: dict):
    if not isinstance(name, str):
        raise ValueError(f"unknown {kind} {_shown(name)}; known: {', '.join(table)}")
    return table[matching(name, tuple(table), kind)]


def _plain(name: str) -> str:
    return re.sub(r"[^a-z0-9.+]", "", name.lower())


def matching(name: str, names: tuple, kind: str) -> str:
    """The one of ``names`` that ``name`` means: itself, or the only one that reads the same in
    lower case without dashes ("H100", "llama3-70b"); else a ``ValueError`` with the nearest.

    Parameters
    ----------
    name : str
        The name as given.
    names : tuple
        The names known.
    kind : str
        What the names are ("chip", "model"…), for the error's message.

    Returns
    -------
    name : str
        The one of ``names`` meant.

    Raises
    ------
    ValueError
        For a name that means none of them, or more than one, with the nearest.

    Examples
    --------
    >>> matching("H100", ("a100", "h100"), "chip"), matching("Llama3-70B", ("llama-3-70b",), "")
    ('h100', 'llama-3-70b')
    """
    if name in names:
        return name
    same = [n for n in names if _plain(str(n)) == _plain(name)]
    if len(same) == 1:
        return same[0]
    import difflib  # here: only a refusal suggests, and a start imports none (2 ms)

    near = difflib.get_close_matches(_plain(name), [_plain(str(n)) for n in names], n=3, cutoff=0.5)
    guess = [n for p in near for n in names if _plain(str(n)) == p]
    hint = f" (did you mean {' or '.join(map(repr, guess))}?)" if guess else ""
    raise ValueError(f"unknown {kind} {_shown(name)}{hint}; known: {', '.join(map(str, names))}")


def _from_json(cls, source, optional: dict):
    data = _read_json(source)
    fields = {f.name for f in dataclasses.fields(cls)}
    kind = cls.__name__.lower()
    unknown = sorted(set(data) - fields, key=str)
    if unknown:
        raise ValueError(
            f"unknown {kind} key {_shown(unknown[0])}; allowed: {', '.join(sorted(fields))}"
        )
    missing = sorted(fields - set(data) - set(optional))
    if missing:
        raise ValueError(
            f"{kind} key {missing[0]!r} is missing; required: "
            f"{', '.join(sorted(fields - set(optional)))}"
        )
    if "pod_shape" in data and isinstance(data["pod_shape"], list):
        data = {**data, "pod_shape": tuple(data["pod_shape"])}
    return cls(**{**optional, **data})


def _read_json(source) -> dict:
    """The JSON object in ``source``: a dict, JSON text (it starts with "{") or a file's path."""
    if isinstance(source, dict):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ValueError(
            f"a model or chip must be a JSON file, JSON text or a dict; got {type(source).__name__}"
        )
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return _parse(source, _shown(source))
    return _parse(read_text(source), str(source))


def read_text(path) -> str:
    """The text of ``path``, read only if it is a regular file of at most ``LARGEST_FILE`` bytes.

    The check comes before ``open``: opening a named pipe would wait for a writer, and a device
    such as /dev/urandom never ends.

    Parameters
    ----------
    path : str or os.PathLike
        The file's path.

    Returns
    -------
    text : str
        The file's text, decoded as UTF-8 (a byte-order mark skipped).

    Raises
    ------
    ValueError
        For a path that cannot be read, that is not a regular file, a file of more than
        ``LARGEST_FILE`` bytes, or one that is not UTF-8.
    """
    try:
        info = os.stat(path)
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path
        raise ValueError(
            f"cannot read {_shown(path)}: {getattr(err, 'strerror', None) or err}"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path} is {_file_kind(info.st_mode)}; give a JSON file")
    too_big = f"{path} is over {LARGEST_FILE:,} bytes; a model or chip JSON file is a few kB"
    if info.st_size > LARGEST_FILE:
        raise ValueError(too_big)
    try:
        with open(path, "rb") as f:
            data = f.read(LARGEST_FILE + 1)  # at most: the file may have grown since os.stat
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror}") from None
    if len(data) > LARGEST_FILE:
        raise ValueError(too_big)
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is skipped
    except UnicodeDecodeError as err:
        where = f"byte {err.start} is {data[err.start]:#04x}"
        raise ValueError(f"{path} is not UTF-8 text ({where}); give a JSON file") from None


def _file_kind(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a named pipe (FIFO)",
        stat.S_ISCHR: "a character device",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def _parse(text: str, where: str) -> dict:
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError(
            f"{where} is nested too deeply to read; a model or chip is one flat JSON object"
        ) from None
    except ValueError as err:  # not JSON, or an integer of more than 4300 digits
        raise ValueError(f"{where} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where} must hold a JSON object; got {type(data).__name__}")
    return data


def _shown(value) -> str:
    """``value`` for a message: a long string or list cut short."""
    return _SHORT.repr(value)


_SHORT = reprlib.Repr()
_SHORT.maxstring = 80
