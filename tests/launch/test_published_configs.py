"""The frameworks' own published launch files (tests/data/configs, cited there) read into the
layouts they describe, and those layouts evaluated."""

from pathlib import Path

import pytest

from scaling_widgets import fields
from scaling_widgets.cost import Model, evaluate
from scaling_widgets.cost.ground.refusals import InputError
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE

CONFIGS = Path(__file__).parent.parent / "data" / "configs"
# base.yml's model at global_parameter_scale 128: heads and MLP x8, width and layers x4
MAXTEXT_128B = Model("MaxText default x128", layers=64, d_model=8192, d_ff=57344, heads=128,
                     kv_heads=128, head_dim=128, vocab=32000)  # fmt: skip
LAYOUT = ("model", "x", "y", "z", "zero", "microbatches", "batch", "seq_len", "remat", "ep", "cp")


def read(name: str, hardware: str, chips: int | None = None):
    got, file = read_config(str(CONFIGS / name), chip=HARDWARE[hardware], chips=chips)
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    return got, file, evaluate(*fields.values(state))


@pytest.mark.parametrize(
    "name, hardware, chips, layout",
    [
        # 64 A100s, as its note says: FSDP over all of them, one sequence of 8,192 each
        ("torchtitan_llama3_8b.toml", "a100", 64,
         ("llama-3-8b", 64, 1, 1, 3, 1, 64 * 8192, 8192, "selective", 1, 1)),
        # TP 8 inside a node, FSDP over the 8 nodes, 8 sequences each: 64
        ("torchtitan_llama3_70b.toml", "a100", 64,
         ("llama-3-70b", 8, 8, 1, 3, 1, 64 * 8192, 8192, "full", 1, 1)),
        # 128 H100s: TP 8 x FSDP 16, 2 sequences each
        ("torchtitan_llama3_405b.toml", "h100", 128,
         ("llama-3-405b", 16, 8, 1, 3, 1, 32 * 8192, 8192, "full", 1, 1)),
        # TP 8 x PP 16 on 1,024 A100s: DP 8, 1,536 sequences in microbatches of 1, 192 a replica
        ("megatron_gpt3_175b.sh", "a100", 1024,
         ("gpt-3-175b", 8, 8, 16, 0, 192, 1536 * 2048, 2048, "none", 1, 1)),
        # one node of 8 H100s, the world its torchrun line says: DP 8, 128 sequences, 16 each
        ("megatron_llama3_8b_h100_fp8.sh", "h100", None,
         ("llama-3-8b", 8, 1, 1, 1, 16, 128 * 8192, 8192, "none", 1, 1)),
        # PP 4 x EP 8 on 4 nodes: DP 8, EP out of it, 256 sequences of 4,096
        ("megatron_mixtral_8x7b.sh", "h100", 32,
         ("mixtral-8x7b", 8, 1, 4, 1, 32, 256 * 4096, 4096, "none", 8, 1)),
        # FSDP over a 512-chip v5p slice, 4 sequences a chip, MaxText's own recompute policy
        ("maxtext_v5p_llama2_70b.sh", "tpu-v5p", 512,
         ("llama-2-70b", 512, 1, 1, 3, 1, 2048 * 4096, 4096, "save_dot_except_mlpwi", 1, 1)),
        # TP 8 x FSDP 16 (fsdp -1 fills the slice), one sequence of 2,048 a chip
        ("maxtext_v5p_128b.sh", "tpu-v5p", 128,
         (MAXTEXT_128B, 16, 8, 1, 3, 1, 128 * 2048, 2048, "minimal", 1, 1)),
        # v5e-256: 2 sequences a chip; qkv_proj_offloaded keeps Q, K and V in host memory
        ("maxtext_v5e_llama2_70b.sh", "tpu-v5e", 256,
         ("llama-2-70b", 256, 1, 1, 3, 1, 512 * 2048, 2048, "qkv_proj_offloaded", 1, 1)),
    ],
)  # fmt: skip
def test_a_published_file_reads_into_the_layout_it_describes(name, hardware, chips, layout):
    got, file, e = read(name, hardware, chips)
    assert tuple(got[k] for k in LAYOUT) == layout
    assert int(e.x) * int(e.y) * int(e.z) == e.chips and float(e.step_time) > 0


def test_what_each_file_sets_beside_the_layout():
    got, file, e = read("torchtitan_llama3_405b.toml", "h100", 128)
    assert got["matmul_dtype"] == "fp8" and got["torch_compile"] and got["stack"] == "fsdp2"
    assert got["tokens"] == 3000 * 32 * 8192  # training.steps x the global batch
    # async TP is the stack's feature (stacks/fsdp2.py); fp8 all-gathers read as their nearest
    assert got["features"] == "async_tp" and e.options.features == "async_tp"
    assert any("enable_fsdp_float8_all_gather" in note for note in file.notes)
    assert "job.description" in file.ignored and "optimizer.lr" in file.ignored
    got, file, e = read("megatron_llama3_8b_h100_fp8.sh", "h100")
    assert got["matmul_dtype"] == "fp8" and got["stack"] == "megatron-lm"
    assert got["tokens"] == pytest.approx(1_953_125_000 * 8192, rel=1e-3)  # --train-samples
    got, file, e = read("megatron_gpt3_175b.sh", "a100", 1024)
    assert any("step-batch-size-schedule" in note for note in file.notes)  # the batch ramp


def test_a_script_whose_world_cannot_hold_its_degrees_names_the_launchers_flag():
    # its torchrun line runs one node of 8 ("change for multinode"): TP 8 x PP 16 needs more
    with pytest.raises(InputError, match=r"^--nnodes must .* divisible by TP x PP x CP = 128"):
        read("megatron_gpt3_175b.sh", "a100")


def test_maxtexts_scaled_model_is_its_own_rule():
    # v5e 16b.sh: global_parameter_scale 16 doubles heads and MLP twice, width and layers once
    got, file, e = read("maxtext_v5e_16b.sh", "tpu-v5e", 256)
    m = got["model"]
    assert (m.layers, m.d_model, m.d_ff, m.heads) == (32, 4096, 28672, 64)
    assert got["batch"] == 6 * 256 * 2048 and got["stack"] == "maxtext"


def test_a_hugging_face_config_beside_the_file_gives_the_model(tmp_path):
    # Mistral 7B has no preset and no torchtitan flavor: the team's config.json names it
    (tmp_path / "config.json").write_text((CONFIGS.parent / "hf" / "mistral-7b.json").read_text())
    job = tmp_path / "train.toml"
    job.write_text((CONFIGS / "torchtitan_llama3_8b.toml").read_text())
    got, file = read_config(str(job), chip=HARDWARE["h100"], chips=64)
    assert got["model"].d_model == 4096 and got["model"].vocab == 32000
    assert got["x"] == 64 and got["remat"] == "selective"


@pytest.mark.parametrize(
    "name, change, hardware, chips, named",
    [
        ("megatron_mixtral_8x7b.sh", ("--moe-grouped-gemm", "--moe-grouped-gem"), "h100", 32,
         r"^--moe-grouped-gem must be a key of megatron's configuration \(did you mean"),
        ("megatron_mixtral_8x7b.sh", ("--bf16", "--bf16 --recompute-granularity selective"
         " --recompute-modules core_attn attn"), "h100", 32,
         r"^--recompute-modules must be some of core_attn, mlp, moe"),
        # a switch the model cannot price, and a YAML (its settings replace the line's) not found
        ("megatron_mixtral_8x7b.sh", ("--bf16", "--bf16 --cpu-offloading"), "h100", 32,
         r"^--cpu-offloading must be off \(left out\): it is not priced; got True$"),
        ("megatron_mixtral_8x7b.sh", ("--bf16", "--bf16 --yaml-cfg run.yaml"), "h100", 32,
         r"^--yaml-cfg must be a YAML beside the script .*; got run.yaml, not beside it$"),
        ("maxtext_v5p_128b.sh", ("ici_tensor_parallelism=8", "ici_tensor_parallelism=3"),
         "tpu-v5p", 128, r"^ici_fsdp_parallelism must be degrees multiplying to 128; got 3"),
        ("maxtext_v5p_128b.sh", ("remat_policy=minimal", "remat_policy=minimal_offloaded_x"),
         "tpu-v5p", 128, r"^remat_policy must be one of MaxText's: full, minimal"),
    ],
)  # fmt: skip
def test_a_bad_script_is_refused_naming_the_key(name, change, hardware, chips, named):
    text = (CONFIGS / name).read_text().replace(*change, 1)
    with pytest.raises(InputError, match=named):
        read_config(text, chip=HARDWARE[hardware], chips=chips)


SHIPPED_MAXTEXT = Path(__file__).parent.parent / "data" / "shipped" / "maxtext"


def test_a_maxtext_script_over_a_yaml_beside_it_reads_both_the_lines_keys_last(tmp_path):
    # MaxText's A3 recipe: the run's YAML under the line's overrides, on 16 nodes of 8 H100s
    script = tmp_path / "16vm.sh"
    script.write_text((SHIPPED_MAXTEXT / "a3_llama_2_7b_16vm.sh").read_text())
    refusal = r"^config must be a script over base.yml, or over a YAML beside it .*; got a"
    with pytest.raises(InputError, match=refusal + " script over llama2_7b.yml, not beside it$"):
        read_config(str(script), chip=HARDWARE["h100"], chips=128)
    (tmp_path / "llama2_7b.yml").write_text(
        (SHIPPED_MAXTEXT / "gpu_models_llama2_7b.yml").read_text()
    )
    got, read = read_config(str(script), chip=HARDWARE["h100"], chips=128)
    # the YAML's batch of 4 a device, sequence and recompute; the line's 16 nodes of FSDP 8
    assert (got["batch"], got["seq_len"], got["remat"]) == (
        128 * 4 * 4096,
        4096,
        "minimal_with_context",
    )
    assert read.degrees.dp == 128 and read.degrees.pods == 1


def test_maxtexts_fsdp_across_gpu_nodes_is_one_fsdp_axis_and_across_tpu_slices_fsdp_pods():
    line = "python3 -m maxtext.trainers.pre_train.train base.yml model_name=llama2-7b"
    line += " dcn_fsdp_parallelism=4 ici_fsdp_parallelism=8 per_device_batch_size=1"
    _, read = read_config(line + "\n", chip=HARDWARE["h100"], chips=32, framework="maxtext")
    assert (read.degrees.dp, read.degrees.zero, read.degrees.pods) == (32, 3, 1)
    assert "dcn_fsdp x ici_fsdp: one FSDP axis across the GPU nodes" in read.notes
    got, read = read_config(line + " num_slices=4\n", chip=HARDWARE["tpu-v5p"], chips=32,
                            framework="maxtext")  # fmt: skip
    assert (got["x"], got["pods"], got["fsdp_pods"], got["zero"]) == (8, 4, 4, 3)
    transposed = line.replace("dcn_fsdp", "dcn_fsdp_transpose") + " num_slices=4\n"
    got, _ = read_config(transposed, chip=HARDWARE["tpu-v5p"], chips=32, framework="maxtext")
    assert (got["pods"], got["fsdp_pods"]) == (4, 4)  # FSDP's second axis, across slices too
    # TP across slices: a TP group of 4 spans the 4 slices, one chip in each (MODEL.md §B.11)
    got, _ = read_config(line.replace("dcn_fsdp", "dcn_tensor") + " num_slices=4\n",
                         chip=HARDWARE["tpu-v5p"], chips=32, framework="maxtext")  # fmt: skip
    assert (got["x"], got["y"], got["pods"], got["tp_pods"]) == (8, 1, 4, 4)
    with pytest.raises(InputError, match="^dcn_context_usp_ulysses_parallelism must be 1 acr"):
        read_config(line.replace("dcn_fsdp", "dcn_context_usp_ulysses") + " num_slices=4\n",
                    chip=HARDWARE["tpu-v5p"], chips=32, framework="maxtext")  # fmt: skip


@pytest.mark.parametrize("axis, degree, group", [("pipeline", "pp", "z"), ("tensor", "tp", "y")])
def test_maxtexts_other_dcn_axes_across_gpu_nodes_join_their_ici_axis(axis, degree, group):
    # on GPUs a MaxText slice is a node, and the cluster's links across nodes are priced
    line = "python3 -m maxtext.trainers.pre_train.train base.yml model_name=llama2-7b"
    line += f" dcn_{axis}_parallelism=4 ici_fsdp_parallelism=8 per_device_batch_size=1\n"
    got, read = read_config(line, chip=HARDWARE["h100"], chips=32, framework="maxtext")
    assert getattr(read.degrees, degree) == 4 and read.degrees.dp == 8
    assert f"dcn_{axis} x ici_{axis}: one {axis} axis across the GPU nodes" in read.notes
    state = fields.checked({**fields.defaults(), **got}, tuple(got))
    e = evaluate(*fields.values(state))
    assert int(e.x * e.y * e.z) == 32 and int(getattr(e, group)) == 4


def test_a_maxtext_scripts_xla_overlap_flags_are_said_with_those_it_turns_off():
    # MaxText's v5p 32B recipe sets eight overlap flags in LIBTPU_INIT_ARGS, one of them false
    _, read = read_config(str(SHIPPED_MAXTEXT / "v5p_32b.sh"), chip=HARDWARE["tpu-v5p"], chips=64)
    said = [n for n in read.notes if n.startswith("the environment sets")]
    assert said == [
        "the environment sets 8 XLA flags that overlap collectives with compute"
        " (--xla_enable_async_all_gather, ...), 1 of them off"
        " (--xla_tpu_enable_async_collective_fusion_fuse_all_gather): charged as MaxText's"
        " measured overlap"
    ]


GPT_CONFIG = (CONFIGS / "megatron_gpt_config.yaml").read_text()


def test_megatrons_yaml_config_reads_as_the_flags_it_stands_for():
    # its tokenizer is a SentencePiece model not given: the vocabulary is the one thing to add
    with pytest.raises(InputError, match="^--vocab-size must be given"):
        read_config(GPT_CONFIG, chip=HARDWARE["h100"], chips=8)
    text = GPT_CONFIG.replace("vocab_size: null", "vocab_size: 32000")
    got, read = read_config(text, chip=HARDWARE["h100"], chips=8)
    model, d = read.model, read.degrees
    assert (model.layers, model.d_model, model.heads, model.gated) == (24, 1024, 16, True)
    assert not model.tied_embeddings  # untie_embeddings_and_output_weights: True
    assert (d.dp, d.tp, d.pp, d.seq_len, d.global_batch, d.micro_batch) == (8, 1, 1, 4096, 128, 2)
    assert any(n.startswith("--step-batch-size-schedule") for n in read.notes)


def test_a_script_with_yaml_cfg_reads_the_yaml_beside_it_and_not_its_own_flags(tmp_path):
    (tmp_path / "gpt_config.yaml").write_text(
        GPT_CONFIG.replace("vocab_size: null", "vocab_size: 32000")
    )
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64"
                      " --num-attention-heads 2 --yaml-cfg configs/gpt_config.yaml\n")  # fmt: skip
    _, read = read_config(str(script), chip=HARDWARE["h100"])
    assert read.model.layers == 24 and read.degrees.world == 8  # the YAML's model, the line's GPUs
    assert "--yaml-cfg gpt_config.yaml: its settings; the line's flags ignored" in read.notes[0]
    (tmp_path / "gpt_config.yaml").unlink()
    with pytest.raises(InputError, match=r"^--yaml-cfg must be a YAML beside the script .*"
                       r"got configs/gpt_config.yaml, not beside it$"):  # fmt: skip
        read_config(str(script), chip=HARDWARE["h100"])
    bad = GPT_CONFIG.replace("  num_layers: 24", "  num_layer: 24")
    with pytest.raises(InputError, match="^language_model.num_layer must be a field of"):
        read_config(bad, chip=HARDWARE["h100"], chips=8)


def test_a_maxtext_yaml_inherits_its_base_config_beside_it_down_to_base_yml(tmp_path):
    # pyconfig's inheritance: the child's keys over its parent's, over base.yml's
    parent = 'base_config: "base.yml"\nmodel_name: "llama2-7b"\nper_device_batch_size: 2\n'
    (tmp_path / "parent.yml").write_text(parent + 'remat_policy: "full"\n')
    child = tmp_path / "child.yml"
    child.write_text('base_config: "parent.yml"\nper_device_batch_size: 4\n')
    got, read = read_config(str(child), chip=HARDWARE["tpu-v5p"], chips=64)
    assert read.degrees.global_batch == 64 * 4 and read.degrees.remat == "full"
    (tmp_path / "parent.yml").unlink()
    with pytest.raises(InputError, match="^base_config must be base.yml, or a YAML beside the"
                       " file; got parent.yml, not beside it$"):  # fmt: skip
        read_config(str(child), chip=HARDWARE["tpu-v5p"], chips=64)


def test_maxtexts_tensor_sequence_axis_is_tensor_parallelism_and_usp_is_refused():
    # base.yml's rules shard the heads, the MLP and the vocabulary over tensor and tensor_sequence
    line = "python3 -m maxtext.trainers.pre_train.train base.yml model_name=llama2-7b"
    line += " ici_fsdp_parallelism=16 ici_tensor_parallelism=2 per_device_batch_size=4"
    _, read = read_config(line + " ici_tensor_sequence_parallelism=2\n",
                          chip=HARDWARE["tpu-v5p"], chips=64, framework="maxtext")  # fmt: skip
    assert (read.degrees.dp, read.degrees.tp) == (16, 4)
    assert "ici_tensor_sequence_parallelism 2: charged as one TP axis with ici_tensor" in read.notes
    with pytest.raises(
        InputError,
        match="^ici_context_usp_ulysses_parallelism must be 1 unless"
        " context_parallel_strategy is 'usp'; got 2$",
    ):  # as MaxText checks it
        read_config(line + " ici_context_usp_ulysses_parallelism=2\n", chip=HARDWARE["tpu-v5p"],
                    chips=64, framework="maxtext")  # fmt: skip


def _maxtext_line(axes: str) -> str:
    return ("python3 -m maxtext.trainers.pre_train.train base.yml model_name=llama2-7b"
            f" per_device_batch_size=1 max_target_length=32768 {axes}\n")  # fmt: skip


def test_maxtexts_usp_is_read_as_the_share_it_runs_and_refused_nested():
    # context_parallel_strategy usp: a ring over context and Ulysses over context_usp_ulysses
    # (configs/base.yml, ulysses_context_sharding); the model prices either one alone
    def degrees(axes):
        return read_config(_maxtext_line(axes), chip=HARDWARE["tpu-v5p"], chips=64,
                           framework="maxtext")[1].degrees  # fmt: skip

    ulysses = degrees("ici_fsdp_parallelism=16 ici_context_usp_ulysses_parallelism=4"
                      " context_parallel_strategy=usp")  # fmt: skip
    assert (ulysses.cp, ulysses.cp_kind, ulysses.dp) == (4, "ulysses", 16)
    ring = degrees(
        "ici_fsdp_parallelism=16 ici_context_parallelism=4 context_parallel_strategy=usp"
    )
    assert (ring.cp, ring.cp_kind) == (4, "ring")
    with pytest.raises(InputError, match="^ici_context_usp_ulysses_parallelism must be 1 beside"
                       r" ici_context_parallelism 2 \(USP's ring and Ulysses nested are not priced;"
                       r" either alone is\); got 2$"):  # fmt: skip
        degrees(
            "ici_fsdp_parallelism=16 ici_context_parallelism=2"
            " ici_context_usp_ulysses_parallelism=2 context_parallel_strategy=usp"
        )
    with pytest.raises(InputError, match="^context_parallel_strategy must be 'all_gather', 'ring',"
                       " 'ulysses' or 'usp'; got zigzag$"):  # fmt: skip
        degrees(
            "ici_fsdp_parallelism=16 ici_context_parallelism=4 context_parallel_strategy=zigzag"
        )


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("ici_autoregressive_parallelism", "an inference axis"),
        ("dcn_context_autoregressive_parallelism", "an inference axis"),
        ("ici_diloco_parallelism", "DiLoCo's replicas train apart"),
        ("ici_sequence_parallelism", "the legacy sequence axis"),
    ],
)
def test_maxtexts_axes_no_training_step_runs_on_are_refused_with_why(key, why):
    with pytest.raises(InputError, match=f"^{key} must be 1: {why}.*; got 4$"):
        read_config(_maxtext_line(f"ici_fsdp_parallelism=16 {key}=4"), chip=HARDWARE["tpu-v5p"],
                    chips=64, framework="maxtext")  # fmt: skip


def test_torchtitans_async_tp_is_its_feature_read_written_and_refused_uncompiled(tmp_path):
    # parallelism.enable_async_tensor_parallel: the TP collectives under the matmuls they feed
    # (stacks/fsdp2.py); torchtitan runs it only with the model compiled (maybe_enable_async_tp)
    toml = (CONFIGS / "torchtitan_llama3_405b.toml").read_text(encoding="utf-8")
    _, _, e = read("torchtitan_llama3_405b.toml", "h100", 128)
    text = write_config("torchtitan", e)
    assert "enable_async_tensor_parallel = true" in text and "features" not in text
    off = tmp_path / "off.toml"
    off.write_text(toml.replace("enable_async_tensor_parallel = true",
                                "enable_async_tensor_parallel = false"))  # fmt: skip
    assert read_config(str(off), chip=HARDWARE["h100"], chips=128)[0]["features"] == "none"
    eager = tmp_path / "eager.toml"
    eager.write_text(toml.replace("[compile]\nenable=true", "[compile]\nenable=false"))
    refusal = "^parallelism.enable_async_tensor_parallel must be false unless compile.enable"
    with pytest.raises(InputError, match=refusal):
        read_config(str(eager), chip=HARDWARE["h100"], chips=128)
