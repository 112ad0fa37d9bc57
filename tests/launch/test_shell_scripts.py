"""Megatron-LM's and MaxText's scripts read as the shell reads them, nothing run: the files they
source from beside them, variables expanded as the shell expands them, quotes open across lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaling_widgets import catalog
from scaling_widgets import fields as fieldset
from scaling_widgets.cost import InputError, evaluate
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.launch.shell import launch_args
from scaling_widgets.presets import HARDWARE

H100 = HARDWARE["h100"]
SHAPE = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --vocab-size 32000"
RUN = "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64"


def test_a_script_reads_the_files_it_sources_from_its_folder(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "model.sh").write_text(f'MODEL_ARGS="{SHAPE}"\n')
    (tmp_path / "common.sh").write_text(
        'source "${SCRIPT_DIR}/conf/model.sh"\nPARALLEL="--tensor-model-parallel-size $TP"\n'
    )
    script = tmp_path / "train.sh"
    script.write_text(
        "TP=${TP:-2}\nSCRIPT_PATH=${BASH_SOURCE[0]}\nsource $(dirname $SCRIPT_PATH)/common.sh\n"
        f"torchrun --nproc_per_node 8 pretrain_gpt.py $MODEL_ARGS $PARALLEL {RUN}\n"
    )
    fields, file = read_config(str(script), chip=H100)
    assert (fields["model"].layers, fields["model"].d_model, fields["y"]) == (32, 4096, 2)
    assert file.notes == ()


def test_a_sourced_file_not_beside_the_script_is_said(tmp_path):
    script = tmp_path / "train.sh"
    launch = f"torchrun --nproc_per_node 8 pretrain_gpt.py {SHAPE} {RUN}"
    script.write_text(f"source ${{SANDBOX_ENV_SETUP}}\n{launch}\n")
    _, file = read_config(str(script), chip=H100)
    assert file.notes == ("sourced ${SANDBOX_ENV_SETUP}: not found beside the file, its settings"
                          " not read",)  # fmt: skip


def test_variables_expand_as_the_shell_expands_them():
    script = (
        "ONE='a b'\nARR=(\"--x 1\" --y)\nE=\n"
        'run pretrain_gpt.py $ONE "$ONE" \'$ONE\' ${ARR[@]} $E "${MISSING:-"d e"}"\n'
    )
    _, after = launch_args(script, r"pretrain_gpt\.py")
    # unquoted: split at blanks, an empty one gone; in double quotes: one word; in single: as is
    assert after == ["a", "b", "a b", "$ONE", "--x", "1", "--y", "d e"]


def test_arithmetic_with_blanks_inside_its_brackets_is_counted_as_the_shell_counts_it():
    # Megatron-DeepSpeed's long-sequence example: seq_len=$(( 1024 * $n_k )) read as 0 before
    script = (
        "n_k=2\nseq_len=$(( 1024 * $n_k ))\nrun pretrain_gpt.py --seq-length $seq_len $((2*3))\n"
    )
    _, after = launch_args(script, r"pretrain_gpt\.py")
    assert after == ["--seq-length", "2048", "6"]


def test_a_quote_open_across_lines_is_one_word_as_the_shell_reads_it():
    args = f'ARGS="\n  {SHAPE} \\\n  --ffn-hidden-size 11008\n"'
    fields, _ = read_config(f"{args}\ntorchrun pretrain_gpt.py $ARGS {RUN}\n", chip=H100, chips=8)
    model = catalog.model(fields["model"])
    assert (model.layers, model.d_ff) == (32, 11008)


def test_an_if_chain_runs_its_first_branch_that_holds_and_says_which():
    script = (
        'MODE=b\nif [[ "$MODE" == "a" ]]; then\n  X=1\nelif [[ "$MODE" == "b" ]]; then\n  X=2\n'
        'elif [[ "$MODE" == "b" ]]; then\n  X=3\nelse\n  X=4\nfi\n'
        'if [[ "$MODE" == "b" ]]; then\n  Y=5\nelif [ -f /x ]; then\n  Y=6\nelse\n  Y=7\nfi\n'
        "run pretrain_gpt.py $X $Y\n"
    )
    said: list = []
    _, after = launch_args(script, r"pretrain_gpt\.py", said)
    assert after == ["2", "5"]  # neither a later branch nor the else runs once one has
    assert said == [
        'config line 4: took \'elif [[ "$MODE" == "b" ]]\'',
        'config line 11: took \'if [[ "$MODE" == "b" ]]\'',
    ]


def test_a_test_the_reader_cannot_evaluate_is_taken_and_said(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(
        f"if [ -f /etc/cluster ]; then\n  TP=4\nfi\ntorchrun --nproc_per_node 8 pretrain_gpt.py"
        f" {SHAPE} {RUN} --tensor-model-parallel-size $TP\n"
    )
    fields, file = read_config(str(script), chip=H100)
    assert fields["y"] == 4
    assert file.notes == ("config line 1: took 'if [ -f /etc/cluster ]', its test taken to hold",)


def test_an_sbatch_script_whose_launch_line_is_a_string_srun_runs_reads():
    # Megatron-LM's Megatron-FSDP DeepSeek-V3 example: PRETRAIN_ARGS in an array, the launch line
    # in TRAINING_CMD, run by `srun ... bash -x -c "${TRAINING_CMD}"` inside `sbatch <<EOF`
    script = Path(__file__).parent.parent / "data" / "models" / "sbatch_mfsdp_deepseek_v3.sh"
    fields, file = read_config(str(script), chip=H100, chips=256)
    model = catalog.model(fields["model"])
    assert (model.layers, model.mtp_layers, model.moe.experts) == (61, 1, 256)
    assert (fields["ep"], fields["zero"], fields["batch"]) == (8, 3, 2048 * 4096)
    assert "config line 138: took 'if [ \"${USE_MEGATRON_FSDP}\" = 1 ]'" in file.notes


def test_a_megatron_yaml_config_reads_its_model_args():
    # the form of Megatron-LM's functional-test and release configs (model_config.yaml)
    text = (
        "ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nTEST_TYPE: release\nMODEL_ARGS:\n"
        "  --tensor-model-parallel-size: 4\n  --use-distributed-optimizer: true\n"
        "  --sequence-parallel: true\n  --overlap-grad-reduce: false\n  --num-layers: 32\n"
        "  --hidden-size: 4096\n  --num-attention-heads: 32\n  --vocab-size: 32000\n"
        "  --seq-length: 4096\n  --max-position-embeddings: 4096\n  --micro-batch-size: 2\n"
        "  --global-batch-size: 64\n  --data-path: $DATA_BLEND\n"
    )
    fields, _ = read_config(text, chip=H100, chips=16)
    assert (fields["y"], fields["zero"], fields["sequence_parallel"]) == (4, 1, True)
    assert fields["batch"] == 64 * 4096 and catalog.model(fields["model"]).layers == 32


def test_a_flag_the_cost_needs_that_holds_an_unset_variable_is_refused_naming_it(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(
        'EXTRA=""\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers $NUM_LAYERS'
        f" --hidden-size 4096 --num-attention-heads 32 --vocab-size 32000 {RUN} $EXTRA\n"
    )
    with pytest.raises(InputError) as refused:
        read_config(str(script), chip=H100)
    assert refused.value.field == "--num-layers"
    assert "the script using $NUM_LAYERS (config line 2) unset" in str(refused.value)


def test_a_megatron_deepspeed_script_reads_its_own_flags_and_runs_deepspeed():
    # microsoft/Megatron-DeepSpeed's 125M example: TP 2, PP 2, ZeRO-1, --checkpoint-activations,
    # its own flags (--lr-decay-tokens, --zero-stage) beside Megatron-LM's
    script = Path(__file__).parent.parent / "data" / "shipped" / "deepspeed"
    fields, _ = read_config(str(script / "ds_pretrain_gpt_125M_flashattn.sh"), chip=H100, chips=8)
    assert (fields["y"], fields["z"], fields["zero"], fields["remat"]) == (2, 2, 1, "full")
    assert fields["stack"] == "deepspeed"
    # no tokenizer named: pretrain_gpt.py's GPT2BPETokenizer, 50,257 tokens
    assert catalog.model(fields["model"]).vocab == 50257


DS_LAUNCH = f"deepspeed pretrain_gpt.py {SHAPE} {RUN} --zero-stage 1 --deepspeed"


@pytest.mark.parametrize("value, features", [("true", "overlap_comm"), ("false", "none")])
def test_a_deepspeed_config_written_by_the_script_sets_overlap_comm(tmp_path, value, features):
    config = f'{{"zero_optimization": {{"stage": 1, "overlap_comm": {value}}}}}'
    script = tmp_path / "train.sh"
    heredoc = f"cat > ds.json << EOF\n{config}\nEOF\n"
    script.write_text(f"{heredoc}{DS_LAUNCH} --deepspeed_config ds.json\n")
    fields, _ = read_config(str(script), chip=H100, chips=8)
    assert fields["stack"] == "deepspeed" and fields["features"] == features


def test_a_deepspeed_config_beside_the_script_is_read_and_none_leaves_the_default(tmp_path):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"overlap_comm": true}}')
    script = tmp_path / "train.sh"
    script.write_text(f"{DS_LAUNCH} --deepspeed_config=ds.json\n")
    assert read_config(str(script), chip=H100, chips=8)[0]["features"] == "overlap_comm"
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 1}}')
    assert read_config(str(script), chip=H100, chips=8)[0]["features"] is None


def test_deepspeeds_overlap_comm_hides_the_reduction_holds_a_bucket_more_and_is_said_on_export(
    tmp_path,
):
    script = tmp_path / "train.sh"
    script.write_text(f"{DS_LAUNCH} --deepspeed_config ds.json\n")
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"overlap_comm": true}}')
    fields, _ = read_config(str(script), chip=H100, chips=64)
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"overlap_comm": false}}')
    off, _ = read_config(str(script), chip=H100, chips=64)
    on_, off_ = (evaluate(*fieldset.values(fieldset.checked({**fieldset.defaults(), **f},
                 tuple(f)))) for f in (fields, off))  # fmt: skip
    assert on_.step_breakdown["dp_exposed"] < off_.step_breakdown["dp_exposed"]
    assert float(on_.peak.buffers) - float(off_.peak.buffers) == pytest.approx(1e9)
    for framework, name in (("megatron", "Megatron-LM"), ("torchtitan", "torchtitan")):
        said = f"the features overlap_comm: another stack's, {name}'s defaults kept"
        assert said in write_config(framework, on_)


def test_a_megatron_lm_flag_megatron_deepspeed_alone_has_is_refused_outside_it():
    with pytest.raises(InputError, match="--zero-stage must be a key of megatron"):
        read_config(f"torchrun pretrain_gpt.py {SHAPE} {RUN} --zero-stage 2", chip=H100, chips=8)
