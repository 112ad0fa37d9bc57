"""torchtitan's Python config registries (its main branch since early 2026): each function that
builds a ``Trainer.Config`` is a scenario, picked as ``--config FILE:NAME`` and read from its
syntax tree without running it. The same job reads the same as the TOML it replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaling_widgets.cli import main
from scaling_widgets.cost import InputError
from scaling_widgets.launch import read_config
from scaling_widgets.presets import HARDWARE

DATA = Path(__file__).parent.parent / "data"
LLAMA3 = DATA / "shipped" / "torchtitan" / "llama3_config_registry.py"
H100 = HARDWARE["h100"]


def read(source: str, chips: int = 64) -> dict:
    return read_config(source, chip=H100, chips=chips)[0]


@pytest.mark.parametrize("name", ["llama3_8b", "llama3_70b"])
def test_a_registry_config_reads_as_the_job_toml_it_replaced(name):
    toml = DATA / "configs" / f"torchtitan_{name}.toml"  # at 238fa99, the last TOMLs
    assert read(f"{LLAMA3}:{name}") == read(str(toml))


def test_the_405b_config_reads_its_fp8_compile_and_async_tp():
    fields, file = read_config(f"{LLAMA3}:llama3_405b", chip=H100, chips=128)
    assert (fields["y"], fields["seq_len"], fields["remat"]) == (8, 8192, "full")
    assert fields["batch"] == 2 * 8192 * 16  # 2 sequences a data rank, 16 data ranks
    assert fields["matmul_dtype"] == "fp8" and fields["torch_compile"]
    assert fields["features"] == "async_tp"  # its TP collectives under the matmuls they feed


def test_a_config_built_from_another_takes_its_changes():
    # llama3_8b_mxfp8 is llama3_8b with MXFP8 converters: mx formats are not priced
    with pytest.raises(InputError) as refused:
        read(f"{LLAMA3}:llama3_8b_mxfp8")
    assert refused.value.field == "model.converters" and "'mx'" in str(refused.value)


def test_without_a_name_the_refusal_lists_the_files_configs(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", "--config", str(LLAMA3), "--hardware", "h100", "--chips", "64"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert "FILE:NAME" in err and "llama3_8b, " in err and "llama3_405b" in err


def test_a_misspelt_name_is_refused_with_the_nearest():
    with pytest.raises(InputError, match="did you mean llama3_70b"):
        read(f"{LLAMA3}:llama3_70")


REGISTRY = """
raise SystemExit("a registry is read, never run")

def base() -> Trainer.Config:
    return Trainer.Config(
        model_spec=model_registry("8B"),
        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=2 * 4096,
                                max_context_length=4096, num_tokens_per_train_step=4096 * 128),
        parallelism=ParallelismConfig(tensor_parallel_degree=2),
        activation_checkpoint=FullAC.Config(),
    )

def llama3_pipelined() -> Trainer.Config:
    config = base()
    config.parallelism.pipeline_parallel_degree = 4
    config.parallelism.num_pp_microbatches = 8
    config.activation_checkpoint = None
    return config

def llama3_computed() -> Trainer.Config:
    config = base()
    config.training.max_context_length = len(SOMETHING)
    return config
"""


def test_a_registry_is_read_without_running_it_and_follows_what_its_functions_change(tmp_path):
    file = tmp_path / "config_registry.py"
    file.write_text(REGISTRY)  # its first line would exit if it ran
    fields = read(f"{file}:llama3_pipelined")
    assert (fields["y"], fields["z"], fields["remat"], fields["seq_len"]) == (2, 4, "none", 4096)
    # 128 sequences: 8 microbatches of 2 on each of the 8 data ranks (64 chips over TP 2 x PP 4)
    assert fields["batch"] == 4096 * 128 and fields["microbatches"] == 8
    with pytest.raises(InputError) as refused:
        read(f"{file}:llama3_computed")
    assert refused.value.field == "training.max_context_length" and "len(SOMETHING)" in str(
        refused.value
    )
