"""torchtitan's job TOMLs of 2024 and early 2025 ([training] degrees, batch_size, [experimental]
pipelines) read as the last TOML schema says the same job, and a key no release had is still
refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaling_widgets.cost import InputError
from scaling_widgets.launch import read_config
from scaling_widgets.presets import HARDWARE

OLD = Path(__file__).parent.parent / "data" / "shipped" / "torchtitan" / "2024-10_llama2_70b.toml"
H100 = HARDWARE["h100"]


def read(text: str, chips: int = 128):
    return read_config(text, chip=H100, chips=chips, framework="torchtitan")


def test_a_2024_job_reads_as_todays_schema_says_it():
    fields, file = read_config(str(OLD), chip=H100, chips=128)
    today = """[model]\nname = "llama2"\nflavor = "70B"\n[training]\nlocal_batch_size = 16
seq_len = 4096\nsteps = 1000\n[parallelism]\ndata_parallel_shard_degree = -1
tensor_parallel_degree = 8\n[activation_checkpoint]\nmode = "full"\n[optimizer]
implementation = "foreach"\n"""  # its optimizer.fused was False by default then
    assert fields == read(today)[0]
    assert any("older schema" in note for note in file.notes)


def test_an_older_pipelines_microbatch_count_is_their_size():
    text = """[model]\nname = "llama3"\nflavor = "8B"\n[training]\nbatch_size = 16\nseq_len = 2048
[experimental]\npipeline_parallel_degree = 4\npipeline_parallel_microbatches = 8\n"""
    fields, _ = read(text, chips=32)
    assert (fields["z"], fields["microbatches"], fields["batch"]) == (4, 8, 16 * 8 * 2048)


@pytest.mark.parametrize(
    "line, field",
    [("training.batch_siz = 16", "training.batch_siz"),  # a typo: no release had it
     ("training.enable_loss_parallel = false", "training.enable_loss_parallel")],
)  # fmt: skip
def test_an_older_key_no_release_had_or_one_not_priced_is_refused_by_name(line, field):
    section, setting = line.split(".", 1)
    text = f'[model]\nname = "llama3"\nflavor = "8B"\n[{section}]\n{setting}\nbatch_size = 8\n'
    with pytest.raises(InputError) as refused:
        read(text)
    assert refused.value.field == field
