"""What a MaxText launch says, gathered from its files before its keys are read
(``formats/maxtext.py``): a YAML over the ``base_config`` it inherits, a script's ``key=value``
overrides over the YAML or the script it runs beside it, and its environment's XLA flags
(docs/MODEL.md §G)."""

from __future__ import annotations

import re
from pathlib import Path

from ..cost.ground.refusals import InputError, refuse
from .keys import yaml_loaded
from .shell import launch_args, runs_script

PROGRAM = r"(pre_train\.\w+|train(_compile)?\.py)$"


def overrides(text: str, folder: Path | None = None) -> dict:
    """A YAML file's keys, or a script's ``key=value`` overrides, typed as YAML types them: over
    the keys of the YAML the script names, where it is not ``base.yml`` and lies beside it.

    Parameters
    ----------
    text : str
        A YAML file over ``base.yml``, or a script (or bare words) whose launch line gives
        ``key=value`` overrides.
    folder : Path, optional
        The script's folder, where a YAML it names other than ``base.yml`` is looked for by its
        name; None: such a script is refused.

    Returns
    -------
    table : dict
        Key -> value, ``base_config`` left out.

    Raises
    ------
    InputError
        For text that looks like YAML and is not.
    """
    if "=" not in text or text.lstrip().startswith(("{", "base_config")) or ": " in text:
        try:
            table = yaml_loaded(text, "config", "a YAML file MaxText reads")
        except InputError:
            if not re.search(r"pre_train\.|train(_compile)?\.py", text):  # a script: read below
                raise
            table = None
        if isinstance(table, dict):
            return _inherited(table, folder)
    before, after = launch_args(text, PROGRAM)
    if not before and runs_script(text):  # the run is in a script not read: its keys unknown
        allowed = "a script that runs MaxText's trainer, or runs one beside it"
        raise refuse("config", allowed, f"a script running {runs_script(text)}, not beside it")
    named = [w.rsplit("/", 1)[-1] for w in after if w.endswith((".yml", ".yaml")) and "=" not in w]
    own = [name for name in named if name != "base.yml"]
    under = _beside(own[0], folder) if own else {}
    pairs = dict(word.split("=", 1) for word in after if "=" in word)
    base = pairs.pop("base_config", "base.yml")  # said again on the line
    if base != "base.yml":
        raise refuse("base_config", "base.yml", base)
    return {**under, **{key: _typed(key, value) for key, value in pairs.items()}}


def _beside(name: str, folder: Path | None) -> dict:
    """The keys of the YAML a script runs over, found by its name beside the script, with those
    it inherits; else refused, as its settings would be missed silently."""
    if folder is None or not (folder / name).is_file():
        allowed = (
            "a script over base.yml, or over a YAML beside it (or read the YAML with --config)"
        )
        raise refuse("config", allowed, f"a script over {name}, not beside it")
    return _inherited({"base_config": name}, folder)


def _inherited(table: dict, folder: Path | None, depth: int = 0) -> dict:
    """A YAML's keys over those of the YAML its ``base_config`` names (pyconfig's inheritance),
    down to ``base.yml``, whose values are ``BASE``'s; a base not beside the file is refused."""
    base = str(table.get("base_config", "base.yml")).rsplit("/", 1)[-1]
    keys = {k: v for k, v in table.items() if k != "base_config"}
    if base == "base.yml":
        return keys
    path = None if folder is None else folder / base
    if path is None or not path.is_file() or depth > 8:
        raise refuse("base_config", "base.yml, or a YAML beside the file", f"{base}, not beside it")
    parent = yaml_loaded(path.read_text(encoding="utf-8"), base, "a YAML file MaxText reads")
    if not isinstance(parent, dict):
        raise refuse(base, "a YAML mapping of MaxText's keys", type(parent).__name__)
    return {**_inherited(parent, folder, depth + 1), **keys}


def _typed(key: str, value: str):
    """An override's value as YAML types it ("" for none), refused by its key where it is no
    YAML value."""
    return yaml_loaded(value, key, "a value YAML reads") if value else ""


# XLA's flags that let collectives run under compute (openxla/xla, the TPU and GPU
# latency-hiding schedulers; MaxText's recipes set them in LIBTPU_INIT_ARGS or XLA_FLAGS)
OVERLAP_FLAGS = re.compile(
    r"--xla_(?:tpu_enable_async_collective_fusion\w*|enable_async_\w+|tpu_overlap_compute_"
    r"collective_tc|tpu_enable_data_parallel_all_reduce_opt|tpu_decompose_all_gather_einsum|"
    r"tpu_enable_ag_backward_pipelining|gpu_enable_latency_hiding_scheduler|gpu_pipeline_\w+)"
    r"=(\S+?)(?=[\s\"']|$)"
)


def xla_flags(text: str) -> list[str]:
    """What the script's environment says of overlap, in one note: the XLA flags of
    LIBTPU_INIT_ARGS and XLA_FLAGS that let collectives run under compute. They are charged as
    MaxText's measured behaviour (``stacks/maxtext.py``), fitted on runs that set them, not one
    by one.

    Parameters
    ----------
    text : str
        The script, the scripts it sources and runs in place.

    Returns
    -------
    notes : list of str
        One note, naming the flags turned off; none where it sets no such flag.
    """
    flags = {
        m.group(0).split("=")[0]: m.group(1).strip("'\"").lower()
        for m in OVERLAP_FLAGS.finditer(text)
    }
    if not flags:
        return []
    off = sorted(flag for flag, value in flags.items() if value in ("false", "off", "0"))
    first = sorted(flags)[0]
    turned = f", {len(off)} of them off ({', '.join(off)})" if off else ""
    return [
        f"the environment sets {len(flags)} XLA flags that overlap collectives with compute"
        f" ({first}{', ...' * (len(flags) > 1)}){turned}: charged as MaxText's measured overlap"
    ]
