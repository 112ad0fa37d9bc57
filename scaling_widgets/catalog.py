"""Finding presets by name, and reading a user's own model or chip from JSON.

Every failure is a ``ValueError`` that names the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .cost.inputs import Chip, Model, Precision
from .presets import HARDWARE, MODELS, PRECISIONS


def hardware(chip: str | Chip) -> Chip:
    """A chip preset by name, or the ``Chip`` given."""
    return chip if isinstance(chip, Chip) else _lookup("hardware", chip, HARDWARE)


def model(model: str | Model) -> Model:
    """A model preset by name, or the ``Model`` given."""
    return model if isinstance(model, Model) else _lookup("model", model, MODELS)


def precision(policy: str | Precision) -> Precision:
    """A precision policy by name, or the ``Precision`` given."""
    return policy if isinstance(policy, Precision) else _lookup("precision", policy, PRECISIONS)


def model_from_json(source: str | Path | dict) -> Model:
    """A ``Model`` from a JSON file, a JSON string or a dict.

    Keys: layers, d_model, d_ff, heads, kv_heads, head_dim, vocab, gated, tied_embeddings, and
    optionally name. Unknown and missing keys are errors.
    """
    return _from_json(Model, source, optional={"name": "custom model"})


def chip_from_json(source: str | Path | dict) -> Chip:
    """A ``Chip`` from a JSON file, a JSON string or a dict (the fields of ``Chip``; name optional)."""
    optional = {"name": "custom chip", "wraparound": "cube", "node_size": 0, "scaleout_bw": 0.0}
    return _from_json(Chip, source, optional=optional)


def _lookup(kind: str, name, table: dict):
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(table)}")
    return table[name]


def _from_json(cls, source, optional: dict):
    data = _read_json(source)
    fields = {f.name for f in dataclasses.fields(cls)}
    kind = cls.__name__.lower()
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ValueError(f"unknown {kind} key {unknown[0]!r}; allowed: {', '.join(sorted(fields))}")
    missing = sorted(fields - set(data) - set(optional))
    if missing:
        raise ValueError(f"{kind} key {missing[0]!r} is missing; required: {', '.join(sorted(fields - set(optional)))}")
    if "pod_shape" in data and isinstance(data["pod_shape"], list):
        data = {**data, "pod_shape": tuple(data["pod_shape"])}
    return cls(**{**optional, **data})


def _read_json(source) -> dict:
    if isinstance(source, dict):
        return source
    text = str(source)
    if isinstance(source, Path) or not text.lstrip().startswith("{"):
        try:
            text = Path(text).read_text()
        except OSError as err:
            raise ValueError(f"cannot read {source!r}: {err.strerror}") from None
        except UnicodeDecodeError:
            raise ValueError(f"{source} is not a text file of JSON") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{source} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source} must hold a JSON object; got {type(data).__name__}")
    return data
