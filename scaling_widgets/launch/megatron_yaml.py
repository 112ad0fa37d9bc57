"""Megatron-LM's YAML configuration (``--yaml-cfg``, ``training/yaml_arguments.py``) as the flags
it stands for: its top-level keys are the parser's flags' names, ``language_model`` holds
TransformerConfig's fields and ``model_parallel`` ModelParallelConfig's (docs/MODEL.md §G).
Megatron-LM calls it experimental; with it, the line's own flags are ignored."""

from __future__ import annotations

import re

from ..cost.ground.refusals import refuse
from .keys import data_json, schema, yaml_loaded

SECTIONS = ("language_model", "model_parallel")
# fields named otherwise than their flags (arguments.py; yaml_arguments.py reads them as fields)
RENAMED = {
    "num_moe_experts": "num_experts",
    "fp8": "fp8_format",
    "virtual_pipeline_model_parallel_size": "num_virtual_stages_per_pipeline_rank",
}
# what yaml_arguments.py derives from activation_func (core_transformer_config_from_yaml)
ACTIVATIONS = {"swiglu": ["--swiglu"], "squaredrelu": ["--squared-relu"], "gelu": []}


def is_yaml_cfg(text: str) -> bool:
    """A YAML of Megatron-LM's ``--yaml-cfg`` form: top-level ``language_model:`` and
    ``model_parallel:`` sections.

    Parameters
    ----------
    text : str
        A file's text.

    Returns
    -------
    found : bool
        Whether both sections head lines of their own.
    """
    return all(re.search(rf"^{s}:", text, re.MULTILINE) for s in SECTIONS)


def flag_words(text: str) -> tuple[list[str], list[str]]:
    """The flags a ``--yaml-cfg`` YAML stands for, and its fields no flag sets (not priced).

    Parameters
    ----------
    text : str
        The YAML.

    Returns
    -------
    words : list of str
        ``--flag value`` words: ``true`` a switch given, ``false`` and ``null`` left out.
    unpriced : list of str
        The keys that set no flag read here: the sections' fields no flag sets, and top-level
        names the parser has no flag of.

    Raises
    ------
    InputError
        For a section's key that is no field of its config, named.
    """
    table = yaml_loaded(text, "config", "a YAML file of Megatron-LM's --yaml-cfg")
    fields = data_json("megatron_yaml_fields.json")
    flags = schema("megatron")
    words: list[str] = []
    unpriced: list[str] = []
    for section, key, value in _flattened(table):
        if key == "activation_func":
            words += ACTIVATIONS.get(str(value), [f"--{value}"])
            continue
        flag = "--" + RENAMED.get(key, key).replace("_", "-")
        negated = [f for f in ("--no-" + flag[2:], "--disable-" + flag[2:]) if f in flags]
        if flag in flags:
            words += [flag] if value is True else [] if value in (False, None) else [
                flag, *str(value).split()]  # fmt: skip
        elif negated:  # a switch on by default, its flag turns it off (arguments.py's dests)
            words += [negated[0]] * (value is False)
        elif section is None or key in fields[section]:  # a dest or a field no flag sets
            unpriced.append(key)
        else:
            raise refuse(
                f"{section}.{key}", f"a field of Megatron-LM's {section} config", "unknown"
            )
    return words, unpriced


def _flattened(table) -> list[tuple[str | None, str, object]]:
    """The top-level keys (section None) and the sections' fields, one list."""
    if not isinstance(table, dict):
        raise refuse("config", "a mapping of Megatron-LM's configuration", type(table).__name__)
    out = [(None, k, v) for k, v in table.items() if k not in SECTIONS]
    for section in SECTIONS:
        out += [(section, k, v) for k, v in (table.get(section) or {}).items()]
    return out
