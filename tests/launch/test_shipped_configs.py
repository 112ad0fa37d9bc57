"""Configs as frameworks ship them (tests/data/shipped/, MANIFEST.json): each ran on the hardware
its source names, so its verdict is "fits" or "tight" there (docs/MODEL.md §E.5). Those a reader
cannot take yet, or that the memory model still misjudges, are listed with the reason, expected to
fail, strictly: the day one passes, the list must shrink."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from scaling_widgets import fields
from scaling_widgets.cost import evaluate
from scaling_widgets.launch import read_config
from scaling_widgets.presets import HARDWARE

SHIPPED = Path(__file__).parent.parent / "data" / "shipped"
MANIFEST = json.loads((SHIPPED / "MANIFEST.json").read_text(encoding="utf-8"))
# the manifest's chips as our presets
CHIPS = {"a100": "a100", "a100-80gb": "a100", "h100": "h100", "h100-80gb": "h100", "h200": "h200",
         "b200": "b200", "a100-40gb": "a100-40gb", "h100-96gb": "h100-96gb",
         "gb300": "gb300-nvl72", "v100-32gb": "v100",
         **{tpu: tpu for tpu in ("tpu-v5p", "tpu-v5e", "tpu-v6e")}}  # fmt: skip
DEEPSPEED = "a DeepSpeed script and its ds_config are not read"
NO_CHIP = "no preset of its chip"
INT8 = "quantization=int8 (AQT int8 matmuls) is not priced"
# key (file, or file:function) -> why it is expected to fail today
NOT_YET = {
    "deepspeed/dschat_step1_opt_single_node_run_13b.sh": DEEPSPEED,
    "deepspeed/dschat_step1_opt_multi_node_run_66b.sh": DEEPSPEED,
    "maxtext/gpt3_175b_v5p_1024.sh": INT8,
    "maxtext/gpt3_175b_v5p_4096.sh": INT8,
    "maxtext/gpt3_175b_v5p_12288.sh": INT8,
    "deepspeed/finetune_llama-70b_4gpu.sh": NO_CHIP + " (GH200)",
    "deepspeed/finetune_qwen3-30b-a3b_2gpu.sh": NO_CHIP + " (GH200)",
}


def key(entry: dict) -> str:
    return entry["file"] + (f":{entry['function']}" if entry.get("function") else "")


def verdict(entry: dict) -> str:
    """The config read on the hardware its source names, and its memory verdict."""
    hardware = entry["hardware"]
    chip = HARDWARE[CHIPS[hardware["chip"]]]
    chips = world_unsaid(entry)
    with tempfile.TemporaryDirectory() as folder:
        got, _ = read_config(staged(entry, Path(folder)), chip=chip, chips=chips)
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    return str(evaluate(*fields.values(state)).verdict)


def world_unsaid(entry: dict) -> int | None:
    """The chips to give the reader: a Megatron-LM script says its world itself (None); the
    others, Megatron's YAMLs of flags among them, need the hardware's."""
    script = entry["framework"] == "megatron" and entry["file"].endswith(".sh")
    return None if script else entry["hardware"]["chips"]


def staged(entry: dict, folder: Path, ran: bool = True) -> str:
    """The config's path; a script over a YAML it names is first copied into ``folder`` with that
    YAML beside it under the name the script gives (the corpus keeps the file's own path name),
    and, with ``ran``, a YAML with the settings its hardware's source ran (``ran_with``) is
    written there."""
    beside = [f for f in entry.get("support_files", []) if "beside_as" in f]
    if ran and "ran_with" in entry:
        table = yaml.safe_load((SHIPPED / entry["file"]).read_text(encoding="utf-8"))
        path = folder / Path(entry["file"]).name
        path.write_text(yaml.safe_dump({**table, **entry["ran_with"]}), encoding="utf-8")
        return str(path)
    if not beside:
        return str(SHIPPED / key(entry))
    script = folder / Path(entry["file"]).name
    shutil.copy(SHIPPED / entry["file"], script)
    for support in beside:
        shutil.copy(SHIPPED / support["file"], folder / support["beside_as"])
    return str(script)


def _param(entry):
    reason = NOT_YET.get(key(entry))
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(entry, id=key(entry), marks=marks)


def test_the_corpus_is_forty_configs_or_more_each_with_its_source():
    assert len(MANIFEST) >= 40 and len({key(e) for e in MANIFEST}) == len(MANIFEST)
    for entry in MANIFEST:
        assert (SHIPPED / entry["file"]).exists() and len(entry["commit"]) == 40
        assert entry["url"].startswith("https://github.com/") and entry["hardware_source"]
    assert set(NOT_YET) <= {key(e) for e in MANIFEST}


def git_blob(path: Path) -> str:
    """The file's git blob hash, as its repository's tree names it at the commit."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_every_file_is_byte_for_byte_the_one_its_framework_ships():
    # the blobs were read from the frameworks' repositories at each entry's commit
    files = [e for entry in MANIFEST for e in (entry, *entry.get("support_files", []))]
    assert all(git_blob(SHIPPED / f["file"]) == f["blob"] for f in files)


@pytest.mark.parametrize("entry", [_param(e) for e in MANIFEST])
def test_a_shipped_config_fits_where_its_source_runs_it(entry):
    assert verdict(entry) in ("fits", "tight")
