"""plan → export → launch from the command line, a config read with --config, and bad files
refused in one line that names the key."""

import json
import tomllib
from pathlib import Path

import pytest

from scaling_widgets.cli import main

CONFIGS = Path(__file__).parent.parent / "data" / "configs"
LLAMA_70B = str(CONFIGS / "torchtitan_llama3_70b.toml")


def run(argv, capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_exports_a_row_that_estimate_reads_back_to_the_same_numbers(capsys, tmp_path):
    flags = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "256", "--batch", "4194304",
             "--seq-len", "8192"]  # fmt: skip
    code, table, _ = run(["plan", *flags, "--json"], capsys)
    # the best row past the first that torchtitan can express whole (a row it cannot, the
    # export says so: "# Cannot express: ZeRO-1 ...")
    for rank in range(2, 12):
        code, text, _ = run(["plan", *flags, "--export-to", "torchtitan", "--rank", str(rank)],
                            capsys)  # fmt: skip
        if "# Cannot express" not in text:
            break
    else:
        pytest.fail("none of the plan's rows 2 to 11 is one torchtitan expresses whole")
    row = json.loads(table)["layouts"][rank - 1]
    layout = row["layout"]
    assert code == 0 and tomllib.loads(text)["parallelism"]["tensor_parallel_degree"] == layout["Y"]
    path = tmp_path / "job.toml"
    path.write_text(text)
    code, out, _ = run(["estimate", "--config", str(path), "--hardware", "h100", "--chips", "256",
                        "--json"], capsys)  # fmt: skip
    back = json.loads(out)
    assert back["layout"] == layout
    assert back["step_time_s"] == pytest.approx(row["step_time_s"], rel=1e-9)
    for key in ("schedule", "virtual_stages", "remat", "zero_stage"):
        assert back[key] == row[key], key


def test_export_writes_each_framework_from_estimates_flags(capsys, tmp_path):
    flags = ["--model", "mixtral-8x7b", "--hardware", "h100", "--chips", "64", "--batch", "2097152",
             "--seq-len", "4096", "--ep", "8", "--stack", "megatron-lm"]  # fmt: skip
    code, text, _ = run(["export", "--to", "megatron", *flags], capsys)
    assert code == 0 and "pretrain_gpt.py" in text and "--expert-model-parallel-size 8" in text
    out = tmp_path / "run.sh"
    code, _, _ = run(["export", "--to", "torchtitan", "--output", str(out), *flags], capsys)
    assert "# Cannot express: the model mixtral-8x7b" in out.read_text()


def test_a_config_with_flags_on_top_answers_what_if(capsys):
    code, out, err = run(["estimate", "--config", LLAMA_70B, "--hardware", "a100", "--chips", "64",
                          "--batch", "1M", "--json"], capsys)  # fmt: skip
    assert code == 0 and json.loads(out)["batch_tokens"] == 128 * 8192  # 1M = 2**20: 128 of 8K
    code, out, err = run(["estimate", "--config", LLAMA_70B, "--hardware", "a100", "--chips", "64",
                          "--verbose"], capsys)  # fmt: skip
    assert "ignored (no cost): " in err and "optimizer.lr" in err


@pytest.mark.parametrize(
    "change, named",
    [
        (("[parallelism]", "[parallelism]\ntensor_paralel_degree = 2"),
         "parallelism.tensor_paralel_degree must be a key of torchtitan's configuration (did you"
         " mean parallelism.tensor_parallel_degree?); got unknown"),
        (("tensor_parallel_degree = 8", "tensor_parallel_degree = 3"),
         "parallelism.tensor_parallel_degree must be a degree dividing the 64 GPUs; got 3"),
        (("[training]", "[training]\nenable_cpu_offload = true"),
         "training.enable_cpu_offload must be off (left out): it is not priced; got True"),
        (('mode = "full"', 'mode = "memory_budget"'),
         "activation_checkpoint.mode must be 'none', 'selective' or 'full' (memory_budget is not"
         " priced); got memory_budget"),
        (("[optimizer]", '[optimizer]\nimplementation = "adam8bit"'),
         "optimizer.implementation must be 'fused', 'foreach', 'for-loop' or"
         " 'fused_opt_states_bf16'; got adam8bit"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_in_one_line_naming_the_key(change, named, capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(Path(LLAMA_70B).read_text().replace(*change, 1))
    code, out, err = run(["estimate", "--config", str(path), "--hardware", "a100", "--chips",
                          "64"], capsys)  # fmt: skip
    assert code == 2 and err.strip() == f"scaling-widgets estimate: error: {named}"


def test_a_config_needs_the_chips_it_runs_on(capsys):
    code, _, err = run(["estimate", "--config", LLAMA_70B, "--chips", "64"], capsys)
    assert code == 2 and "hardware must be given with --config" in err
    code, _, err = run(["estimate", "--config", LLAMA_70B, "--hardware", "a100"], capsys)
    assert code == 2 and "chips must be given: a torchtitan job file does not say" in err


def test_a_row_no_framework_can_run_names_the_nearest_batch_that_would(capsys):
    # 4e6 tokens are 488 sequences of 8,192: not the same whole count on each of 16 data ranks
    flags = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "256", "--batch", "4e6",
             "--seq-len", "8192", "--tp", "8", "--pp", "2"]  # fmt: skip
    code, _, err = run(["export", "--to", "megatron", *flags], capsys)
    assert code == 2 and "batch must be the same whole sequences for each of the 16" in err
    assert "e.g. 3,932,160 or 4,063,232 tokens (480 or 496 sequences); got 488 sequences" in err


def test_a_plan_for_a_framework_ranks_what_it_runs(capsys):
    # Megatron-LM pipelines with 1F1B or interleaved 1F1B: the row it gets is one of those
    flags = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "512", "--batch",
             "8388608", "--seq-len", "8192", "--max-tp", "4",
             "--export-to", "megatron"]  # fmt: skip
    for rank in ("1", "2", "3"):
        code, text, err = run(["plan", *flags, "--rank", rank], capsys)
        assert code == 0 and "# Cannot express: the schedule" not in text


def test_a_torchtitan_file_whose_degrees_do_not_fill_the_gpus_names_the_key(capsys, tmp_path):
    path = tmp_path / "job.toml"
    shard = ("data_parallel_shard_degree = -1", "data_parallel_shard_degree = 4")
    path.write_text(Path(LLAMA_70B).read_text().replace(*shard))
    code, _, err = run(["estimate", "--config", str(path), "--hardware", "a100", "--chips", "64"],
                       capsys)  # fmt: skip
    assert code == 2 and err.strip() == (
        "scaling-widgets estimate: error: parallelism.data_parallel_shard_degree must be 8 to fill"
        " the 64 GPUs with the other degrees (or -1); got 4"
    )


def notes(err: str) -> str:
    """What stderr says beside the one note naming the keys that change no cost."""
    return "".join(line + "\n" for line in err.splitlines() if not line.startswith("ignored"))


def test_a_flag_over_a_config_mends_what_it_leaves_impossible_and_says_so(capsys, tmp_path):
    """``--config`` with flags on top mends as the panel does (``fields.mended``): a stack that
    does not pair passes turns the file's pairing of the expert all-to-alls off, and says so."""
    script = (CONFIGS / "megatron_mixtral_8x7b.sh").read_text()
    paired = (
        "--expert-model-parallel-size 8\n    --overlap-moe-expert-parallel-comm\n"
        "    --num-virtual-stages-per-pipeline-rank 2"
    )
    path = tmp_path / "paired.sh"
    path.write_text(script.replace("--expert-model-parallel-size 8", paired))
    where = ["--config", str(path), "--hardware", "h100", "--chips", "64"]
    code, paired_out, err = run(["estimate", *where, "--json"], capsys)
    assert code == 0 and notes(err) == ""
    code, out, err = run(["estimate", *where, "--stack", "fsdp2", "--json"], capsys)
    assert code == 0 and notes(err) == (
        "note: The overlaps overlap_grad_reduce, overlap_param_gather, overlap_p2p_comm dropped:"
        " fsdp2 has none of them; the expert all-to-alls no longer paired: fsdp2 does not pair"
        " passes.\n"
    )
    assert json.loads(out)["hidden_s"]["ep"] == 0 < json.loads(paired_out)["hidden_s"]["ep"]
    # asked for in the same breath, the pairing is refused by name rather than mended
    code, _, err = run(["estimate", *where, "--stack", "fsdp2", "--ep-overlap"], capsys)
    assert code == 2 and "--ep-overlap must be off with fsdp2" in err


@pytest.mark.parametrize(
    "implementation, read",
    [("foreach", {"optimizer_impl": "foreach", "moment_dtype": None}),
     ("fused", {"optimizer_impl": None, "moment_dtype": None}),
     ("fused_opt_states_bf16", {"optimizer_impl": None, "moment_dtype": "bf16"})],
)  # fmt: skip
def test_torchtitans_optimizer_implementation_is_read_and_written_back(implementation, read):
    from scaling_widgets import fields
    from scaling_widgets.cost import evaluate
    from scaling_widgets.launch import read_config, write_config
    from scaling_widgets.presets import HARDWARE

    text = (
        Path(LLAMA_70B)
        .read_text()
        .replace("[optimizer]", f'[optimizer]\nimplementation = "{implementation}"', 1)
    )
    got, _ = read_config(text, chip=HARDWARE["a100"], chips=64, framework="torchtitan")
    assert {k: got.get(k) for k in read} == read
    e = evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))
    text = write_config("torchtitan", e)
    assert tomllib.loads(text).get("optimizer", {}).get("implementation", "fused") == implementation
    again, _ = read_config(text, chip=HARDWARE["a100"], chips=64, framework="torchtitan")
    assert {k: again.get(k) for k in read} == read  # what was read comes back
    said = "Adam as torch's foreach ops" in write_config("megatron", e)
    assert said == (implementation == "foreach")  # Megatron-LM's Adam is always fused


@pytest.mark.parametrize(
    "components, read, loss_compiled",
    [('["model", "loss"]', {"torch_compile": True, "compile_loss": None}, True),
     ('["loss"]', {"torch_compile": False, "compile_loss": True}, True),
     ('["model"]', {"torch_compile": True, "compile_loss": False}, False)],
)  # fmt: skip
def test_torchtitans_compile_components_are_read_and_written_back(components, read, loss_compiled):
    # DeepSeek-V3 16B's toml compiles the loss alone: 4 bytes a logit, not the eager 12
    from scaling_widgets import fields
    from scaling_widgets.cost import evaluate
    from scaling_widgets.launch import read_config, write_config
    from scaling_widgets.presets import HARDWARE

    text = Path(LLAMA_70B).read_text()
    text = text.replace('enable=false\ncomponents = ["model", "loss"]', "enable=true\n"
                        f"components = {components}")  # fmt: skip
    got, _ = read_config(text, chip=HARDWARE["h100"], chips=64, framework="torchtitan")
    assert {k: got.get(k) for k in read} == read

    def scenario(**more):
        state = {**fields.defaults(), **got, **more}
        return evaluate(*fields.values(fields.checked(state, tuple(got))))

    e, eager = scenario(), scenario(compile_loss=False)
    assert float(eager.peak.logits) > 0  # the output layer's stage is the busiest
    assert float(e.peak.logits) == float(eager.peak.logits) / (3 if loss_compiled else 1)
    again, _ = read_config(write_config("torchtitan", e), chip=HARDWARE["h100"], chips=64,
                           framework="torchtitan")  # fmt: skip
    assert {k: again.get(k) for k in read} == read  # what was read comes back


def test_maxtexts_weight_dtype_keeps_weights_gradients_and_moments_in_it(tmp_path, capsys):
    from scaling_widgets import fields
    from scaling_widgets.cost import evaluate
    from scaling_widgets.launch import read_config, write_config
    from scaling_widgets.presets import HARDWARE

    text = 'model_name: "llama2-7b"\nper_device_batch_size: 4\nweight_dtype: bfloat16\n'
    got, _ = read_config(text, chip=HARDWARE["tpu-v5p"], chips=64, framework="maxtext")
    assert [got[k] for k in ("weight_dtype", "grad_dtype", "moment_dtype")] == ["bf16"] * 3
    e = evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))
    back = write_config("maxtext", e)
    assert "weight_dtype: bfloat16" in back and "# Cannot express" not in back
    assert "the weights in bf16 with no fp32 copy: written as its default" in write_config(
        "megatron", e
    )
    # the first moment alone in another dtype is refused by name, with what would run
    path = tmp_path / "mu.yml"
    path.write_text('model_name: "llama2-7b"\nmu_dtype: bfloat16\n')
    code, _, err = run(["estimate", "--config", str(path), "--hardware", "tpu-v5p", "--mesh",
                        "4x4x4"], capsys)  # fmt: skip
    assert code == 2 and err.strip() == (
        "scaling-widgets estimate: error: mu_dtype must be '' or 'float32', the weights' (one"
        " moment in another dtype: not priced); got bfloat16"
    )


def test_the_keys_that_change_no_cost_are_one_note_even_without_verbose(capsys):
    code, _, err = run(["estimate", "--config", LLAMA_70B, "--hardware", "a100", "--chips", "64"],
                       capsys)  # fmt: skip
    said = [line for line in err.splitlines() if line.startswith("ignored (no cost): ")]
    assert code == 0 and len(said) == 1 and "more" in said[0]
