"""Each shipped config read as its framework runs it: what our readers take from it equals what was
written down from the file and the framework's source at its commit, blind to our readers
(tests/data/shipped/EXPECTED.json): the model's size, the batch, every degree, the ZeRO stage, the
recompute and fp8. A reader that misread a file silently would differ here."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from scaling_widgets import catalog
from scaling_widgets.cost.transformer.counts import param_count
from scaling_widgets.launch import read_config
from scaling_widgets.presets import HARDWARE

from .test_shipped_configs import CHIPS, MANIFEST, NOT_YET, SHIPPED, key, staged, world_unsaid

EXPECTED = json.loads((SHIPPED / "EXPECTED.json").read_text(encoding="utf-8"))["entries"]
DEGREES = ("seq_len", "global_batch_seqs", "dp", "tp", "pp", "cp", "ep", "vpp", "zero", "fp8")
# our name of a recompute policy where the framework's is spelled another way: torchtitan's
# per-op selective is the stack's own "selective"; Megatron's --checkpoint-activations recomputes
# every layer whole (--recompute-method uniform, one layer a chunk), our "full"
SAME_RECOMPUTE = {"selective:op": "selective", "full:uniform:1": "full"}


def reading(entry: dict) -> dict:
    """What our readers take from the config as shipped, on the hardware its source names."""
    chips = world_unsaid(entry)
    chip = HARDWARE[CHIPS[entry["hardware"]["chip"]]]
    with tempfile.TemporaryDirectory() as folder:
        _, read = read_config(staged(entry, Path(folder), ran=False), chip=chip, chips=chips)
    d = read.degrees
    model = catalog.model(read.model) if isinstance(read.model, str) else read.model
    count = param_count(**model.dims())
    return dict(params_b=(float(count.total) + float(count.mtp)) / 1e9, seq_len=d.seq_len,
                global_batch_seqs=d.global_batch, dp=d.dp, tp=d.tp, pp=d.pp, cp=d.cp, ep=d.ep,
                vpp=d.vp, zero=d.zero, fp8=bool(d.fp8), recompute=d.remat)  # fmt: skip


READ = [e for e in MANIFEST if key(e) not in NOT_YET]


def test_every_config_has_its_reading_written_down():
    assert set(EXPECTED) == {key(e) for e in MANIFEST}


@pytest.mark.parametrize("entry", READ, ids=key)
def test_a_shipped_config_reads_as_its_framework_runs_it(entry):
    expected, got = EXPECTED[key(entry)], reading(entry)
    assert {f: got[f] for f in DEGREES} == {f: expected[f] for f in DEGREES}
    assert got["params_b"] == pytest.approx(expected["params_b"], rel=0.02)
    assert got["recompute"] == SAME_RECOMPUTE.get(expected["recompute"], expected["recompute"])
