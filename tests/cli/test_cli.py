"""The command line: the chapter's examples through `scaling-widgets estimate`, and bad input."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import scaling_widgets as sw
from scaling_widgets.cli import main
from scaling_widgets.presets import HARDWARE, MODELS

EXAMPLE_16 = [
    "estimate",
    "--model",
    "llama-2-13b",
    "--hardware",
    "tpu-v5p",
    "--mesh",
    "16x16x16",
    "--batch",
    "3e6",
    # The chapter's example is token-level; 512-token sequences (5859) give every strategy at least
    # one per data replica, so the chapter's numbers stand. Its 32K sequences (91.6) cannot fill the
    # 512 replicas even TP 8 leaves (see test_bad_input_is_one_line_and_exit_2).
    "--seq-len",
    "512",
    "--strategy",
    "fsdp+tp",
    "--mfu",
    "0.4",
]


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_example_16_report_tells_the_whole_story(capsys):
    code, out, _ = run(EXAMPLE_16, capsys)
    assert code == 0
    assert "FSDP X=1024 x TP Y=4" in out and "roofline): compute-bound:" in out
    assert "312 ms" in out  # 3M is 5,859 sequences of 512 (rounded: 0.006 % fewer tokens)
    rows = {line.split()[0]: line for line in out.splitlines()[-4:]}
    assert " no " in rows["dp"]  # pure DP does not fit
    assert "fsdp (1.16x)" in rows["fsdp"]  # pure FSDP is comm-bound
    assert "cannot run: y must be a TP degree dividing the model's 40 attention heads" in rows["tp"]


def test_example_16_json(capsys):
    code, out, _ = run([*EXAMPLE_16, "--json", "--tokens", "2T"], capsys)
    data = json.loads(out)
    assert code == 0
    assert (data["layout"]["X"], data["layout"]["Y"]) == (1024, 4)
    assert data["compute_bound"] is True and data["bottleneck"] == "compute"
    assert data["step_time_s"] == pytest.approx(0.3, abs=0.015)
    steps = 2e12 / data["batch_tokens"]  # the batch as run: whole sequences
    assert data["training_time_s"] == pytest.approx(steps * data["step_time_s"])
    assert data["strategies"]["dp"]["fits"] is False
    assert data["strategies"]["fsdp"]["compute_bound"] is False
    assert data["tokens_per_chip"] == pytest.approx(732, abs=0.5)
    assert set(data["per_layer"]) >= {
        "t_math_s",
        "t_comms_s",
        "t_comms_x_s",
        "t_comms_y_s",
        "t_comms_dcn_s",
    }
    assert set(data["memory_per_chip_bytes"]) == {
        "params",
        "grads",
        "optimizer",
        "activations",
        "overhead",
        "total",
    }
    for key in (
        "params",
        "chips",
        "critical_tokens_per_chip",
        "tp_limit",
        "critical_tokens_per_pod",
        "x_opt",
        "hbm_bytes",
        "fits",
    ):
        assert data[key] is not None


def test_pure_tp_has_no_critical_batch_and_says_it_exceeds_the_limit(capsys):
    code, out, _ = run(
        [
            "estimate",
            "--model",
            "llama-3-70b",
            "--mesh",
            "16x16x16",
            "--batch",
            "1M",
            "--seq-len",  # 488 sequences: one for each of the 256 data replicas
            "2048",
            "--strategy",
            "fsdp+tp",
            "--fsdp",
            "256",
            "--tp",
            "16",
        ],
        capsys,
    )
    assert code == 0 and "never compute-bound" in out  # MODEL.md §A.9: the chapter's 256 x 16
    # Pure TP over 64 chips (64 heads): a whole pod's 8960 could not split the heads.
    args = [
        "estimate",
        "--model",
        "llama-3-70b",
        "--mesh",
        "4x4x4",
        "--batch",
        "1M",
        "--strategy",
        "tp",
        "--json",
    ]
    code, out, _ = run(args, capsys)
    assert json.loads(out)["critical_tokens_per_chip"] is None


def test_two_pods_over_dcn(capsys):
    # 256-token sequences: 3906 a pod, a whole one for each of the 2240 replicas of FSDP 2240 x TP
    # 4.
    args = [
        "estimate",
        "--model",
        "llama-3-70b",
        "--batch",
        "2e6",
        "--pods",
        "2",
        "--seq-len",
        "256",
        "--json",
    ]
    code, out, _ = run(args, capsys)
    data = json.loads(out)
    assert data["chips"] == 2 * 8960 and data["layout"]["P"] == 2
    assert data["tokens_per_chip"] == pytest.approx(111, abs=1)
    assert data["per_layer"]["t_comms_dcn_s"] > 0


def test_data_parallelism_counted_as_the_frameworks_count_it(capsys):
    # Megatron-LM and torchtitan: DP x CP x TP x PP = GPUs. --dp 16 --cp 16 --tp 8 on 2,048.
    common = ["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "2048",
              "--batch", "16M", "--seq-len", "128k", "--cp", "16", "--tp", "8",
              "--json"]  # fmt: skip
    code, out, _ = run([*common, "--dp", "16"], capsys)
    layout = json.loads(out)["layout"]
    assert code == 0 and (layout["X"], layout["CP"], layout["Y"]) == (256, 16, 8)
    # --fsdp counts the whole data axis; 16 there is refused with the 256 that would run.
    with pytest.raises(SystemExit):
        main([*common, "--fsdp", "16"])
    err = capsys.readouterr().err
    assert "--fsdp must be the whole data axis, its CP and EP chips included" in err
    assert "x = 256 here; got x=16, y=8" in err


def test_names_and_sizes_are_read_as_people_write_them(capsys):
    # "llama3-70b" and "H100" are the presets; a sequence of 8k is 8,192 tokens, 16k GPUs 16,384.
    argv = ["estimate", "--model", "llama3-70b", "--hardware", "H100", "--batch", "16M", "--json"]
    code, out, _ = run([*argv, "--seq-len", "8k", "--chips", "16k"], capsys)
    data = json.loads(out)
    assert code == 0 and data["model"] == "LLaMA-3 70B" and data["hardware"] == "H100"
    assert data["seq_len"] == 8192 and data["chips"] == 16384


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "llama-3-7b"], "unknown model 'llama-3-7b' (did you mean 'llama-3-70b' or"),
        (["--hardware", "tpu-v9"], "argument --hardware: unknown hardware 'tpu-v9'"),
        (["--batch=-3M"], "argument --batch: --batch must be a number > 0"),
        (["--batch", "-4M"], "argument --batch: --batch must be a number > 0"),
        (["--batch", "4m"], "argument --batch: --batch takes the suffixes k, K, M, G"),
        (["--batch", "1e20"], "argument --batch: --batch must be a number > 0 and at most 1e11"),
        (["--batch", "lots"], "argument --batch: --batch must be a number > 0"),
        (["--mesh", "16x0x16"], "argument --mesh: --mesh must be axis lengths >= 1"),
        (["--mesh", "32x32x32"], "--mesh must be a slice that fits in the chip's pod of 16x20x28"),
        (
            ["--fsdp", "512", "--tp", "4"],
            "such that x·y is the 4096 chips of a stage: x = 1024 here; got x=512, y=4",
        ),
        (["--fsdp", "3"], "--fsdp must be a divisor of the 4096 chips of a stage; got 3"),
        (["--pods", "0"], "argument --pods: --pods must be a whole number from 1 to 2**53"),
        (["--pods", "1e30"], "argument --pods: --pods must be a whole number from 1 to 2**53"),
        (["--batch", "1e300"], "argument --batch: --batch must be a number > 0 and at most 1e11"),
        (["--batch=-4M"], "argument --batch: --batch must be a number > 0 and at most 1e11"),
        (["--mfu", "1.5"], "argument --mfu: --mfu must be in (0, 1]"),
        (
            ["--strategy", "fsdp", "--tp", "4"],
            "--tp must be 1 for strategy 'fsdp' (use 'fsdp+tp'); got 4",
        ),
        (
            ["--strategy", "tp", "--tp", "16"],
            "--tp must be the 4096 chips of a stage for strategy 'tp'; got 16",
        ),
        (["--mesh", "²x16"], "argument --mesh: --mesh must be axis lengths"),
        (["--pp", "0"], "argument --pp: --pp must be a whole number from 1"),
        (["--pp", "4096"], "--pp must be such that Z·v is at most the model's 40 layers"),
        (
            ["--pp", "5"],
            "--pp must be a number of pipeline stages dividing the slice's 4096 chips; got 5",
        ),
        # 3M tokens of 32K sequences: 91.6, too few for the 512 data replicas TP 8 (40 heads)
        # leaves.
        (["--seq-len", "32768", "--cp", "1"], "--batch must be at least 16,777,216 tokens"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    # last flag wins
    argv = ["estimate", "--model", "llama-2-13b", "--batch", "3M", "--mesh", "16x16x16", *args]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--chips", "2048", "--fsdp", "100", "--tp", "8"],
            "--fsdp must be a divisor of the 2048 chips of a stage: x = 256 with y = 8; got 100",
        ),
        (["--chips", "1e9"], "--chips must be at most 32,768 GPUs of H100 (4,096 nodes of 8)"),
    ],
)
def test_a_gpu_refusal_names_what_would_run(args, message, capsys):
    argv = ["estimate", "--model", "llama-3-70b", "--batch", "4M", "--hardware", "h100", *args]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_model_file(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(
            {
                "layers": 4,
                "d_model": 512,
                "d_ff": 2048,
                "heads": 8,
                "kv_heads": 8,
                "head_dim": 64,
                "vocab": 32000,
                "gated": False,
                "tied_embeddings": True,
            }
        )
    )
    code, out, _ = run(
        ["estimate", "--model-file", str(path), "--hardware", "tpu-v5e", "--batch", "1M", "--json"],
        capsys,
    )
    assert code == 0 and json.loads(out)["model"] == "custom model"
    path.write_text('{"layers": 4}')
    with pytest.raises(SystemExit):
        main(["estimate", "--model-file", str(path), "--batch", "1M"])
    assert "model key 'd_ff' is missing" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["estimate", "--model-file", "", "--batch", "1M"])
    assert "cannot read ''" in capsys.readouterr().err


def test_console_script_and_module_agree():
    args = [*EXAMPLE_16, "--json"]
    as_module = subprocess.run(
        [sys.executable, "-m", "scaling_widgets", *args], capture_output=True, text=True
    )
    script_path = Path(sys.executable).with_name("scaling-widgets")  # installed beside this Python
    script = subprocess.run([str(script_path), *args], capture_output=True, text=True)
    assert as_module.returncode == 0 and as_module.stdout == script.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "scaling_widgets", "estimate", "--model", "x"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_zero_stage_from_the_command_line(capsys):
    base = [
        "estimate",
        "--model",
        "llama-2-13b",
        "--mesh",
        "16x16x16",
        "--batch",
        "8M",
        "--seq-len",  # 7812 sequences: one for each of the 4096 data replicas
        "1024",
        "--precision",
        "mixed-adam",
        "--strategy",
        "dp",
        "--json",
    ]
    stage0 = json.loads((main(base), capsys.readouterr().out)[1])
    # MaxText (the TPU's stack) keeps fp32 weights and gradients: 8 bytes a parameter unsharded.
    stage2 = json.loads((main([*base, "--zero", "2"]), capsys.readouterr().out)[1])
    assert (stage0["zero_stage"], stage2["zero_stage"]) == (0, 2)
    assert not stage0["fits"] and stage2["fits"]
    with pytest.raises(SystemExit):
        main([*base[:-3], "--strategy", "tp", "--zero", "2"])
    assert (
        "--zero must be 0 for strategy 'tp': a ZeRO stage shards over the data axis"
        in capsys.readouterr().err
    )


def test_a_closed_pipe_ends_quietly():
    # `plan --json | head -c 1`: the reader goes away while the writer still has far more than a
    # pipe holds (100 layouts of JSON), so its next write meets a closed pipe. No traceback follows.
    command = [
        sys.executable,
        "-m",
        "scaling_widgets",
        "plan",
        "--model",
        "llama-2-13b",
        "--mesh",
        "16x16x16",
        "--batch",
        "16M",
        "--top",
        "100",
        "--json",
    ]
    writer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer.stdout.read(1)
    writer.stdout.close()
    stderr = writer.stderr.read().decode()
    writer.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr


def test_without_an_mfu_the_step_is_predicted_and_broken_down(capsys):
    assert (
        main(
            [
                "estimate",
                "--model",
                "llama-2-13b",
                "--mesh",
                "16x16x16",
                "--batch",
                "4194304",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["mfu_given"] is None and out["profile"] == "TPU v5p, maxtext"  # the chip's stack
    assert sum(out["step_breakdown_s"].values()) == pytest.approx(out["step_time_s"])
    # another stack runs the same chip at its own pace
    argv = ["estimate", "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "4194304"]
    assert main([*argv, "--stack", "megatron-lm", "--json"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert other["profile"] == "TPU v5p, megatron-lm" and other["step_time_s"] != out["step_time_s"]
    assert 0 < out["mfu"] <= out["hfu"] <= 1 and "6Ψ" in out["mfu_convention"]
    assert (
        main(
            [
                "estimate",
                "--model",
                "llama-2-13b",
                "--mesh",
                "16x16x16",
                "--batch",
                "4194304",
                "--mfu",
                "0.4",
                "--json",
            ]
        )
        == 0
    )
    given = json.loads(capsys.readouterr().out)
    assert (
        given["step_breakdown_s"] is None
        and given["mfu_given"] == 0.4
        and given["mfu"] == pytest.approx(0.4)
    )


def test_measure_one_layout_save_its_profile_and_predict_another(tmp_path, capsys):
    saved = tmp_path / "my-cluster.json"
    common = [
        "estimate",
        "--model",
        "llama-2-13b",
        "--mesh",
        "16x16x16",
        "--batch",
        "4194304",
        "--strategy",
        "fsdp+tp",
        "--json",
    ]
    assert main([*common, "--measured-step-time", "1.25", "--save-profile", str(saved)]) == 0
    capsys.readouterr()
    assert main([*common, "--profile", str(saved)]) == 0  # the measured layout: its own step back
    assert json.loads(capsys.readouterr().out)["step_time_s"] == pytest.approx(1.25)
    # another layout
    assert main([*common, "--profile", str(saved), "--fsdp", "512", "--tp", "8"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert other["profile"].endswith("(calibrated)") and other["step_time_s"] != pytest.approx(1.25)


def test_save_profile_needs_a_measured_step(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "estimate",
                "--model",
                "llama-2-13b",
                "--mesh",
                "16x16x16",
                "--batch",
                "4M",
                "--save-profile",
                "p.json",
            ]
        )
    assert (
        exit_.value.code == 2
        and "--save-profile needs --measured-step-time" in capsys.readouterr().err
    )


H100_70B = [
    "--model",
    "llama-3-70b",
    "--hardware",
    "h100",
    "--chips",
    "64",
    "--batch",
    "524288",
    "--seq-len",
    "8192",
    "--strategy",
    "fsdp",
    "--remat",
    "full",
]


def test_the_stack_sets_the_peak_and_the_report_names_its_busiest_stage(capsys):
    peaks = {}
    for stack in ("megatron-lm", "fsdp2"):
        assert main(["estimate", *H100_70B, "--stack", stack, "--json"]) == 0
        peaks[stack] = json.loads(capsys.readouterr().out)["peak_memory_bytes"]
    # FSDP2 keeps fp32 weights and reports reserved memory; Megatron-LM bf16 weights, reported
    # allocated.
    assert peaks["fsdp2"]["weights"] == 2 * peaks["megatron-lm"]["weights"]
    assert (peaks["fsdp2"]["measures"], peaks["megatron-lm"]["measures"]) == (
        "reserved",
        "allocated",
    )
    assert (
        peaks["fsdp2"]["stack"] == "H100, fsdp2"
        and peaks["fsdp2"]["reserved"] > peaks["fsdp2"]["allocated"]
    )
    assert (
        main(
            [
                "estimate",
                *H100_70B,
                "--pp",
                "4",
                "--fsdp",
                "16",
                "--microbatches",
                "4",
                "--stack",
                "megatron-lm",
            ]
        )
        == 0
    )
    report = capsys.readouterr().out
    assert "Memory per chip, the chapter's count:" in report
    assert (
        "Peak per chip (stage 1 of 4: the embeddings and the most microbatches in flight; H100, "
        "megatron-lm)" in report
    )
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", *H100_70B, "--stack", "jax"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "--stack: unknown stack 'jax'" in err


def test_a_measured_peak_calibrates_a_saved_profile(tmp_path, capsys):
    saved = tmp_path / "my-stack.json"
    assert (
        main(["estimate", *H100_70B, "--measured-peak-gb", "58", "--save-profile", str(saved)]) == 0
    )
    capsys.readouterr()
    assert main(["estimate", *H100_70B, "--profile", str(saved), "--json"]) == 0
    peak = json.loads(capsys.readouterr().out)["peak_memory_bytes"]
    assert peak["reported"] == pytest.approx(58e9) and peak["stack"].endswith("(peak calibrated)")
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", *H100_70B, "--measured-peak-gb", "1", "--save-profile", str(saved)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert (
        "--measured-peak-gb must be above 27.01 GB, what the weights, gradients, optimizer state"
        in err
    )


def test_the_plan_table_shows_each_rows_peak_and_the_hbm_it_leaves(capsys):
    assert (
        main(
            [
                "plan",
                "--model",
                "llama-3-70b",
                "--hardware",
                "h100",
                "--chips",
                "64",
                "--batch",
                "1M",
                "--seq-len",
                "8192",
                "--stack",
                "megatron-lm",
                "--top",
                "3",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out.splitlines()
    head = next(line for line in table if line.lstrip().startswith("#"))
    assert "peak" in head and "HBM left" in head
    rows = [line for line in table[table.index(head) + 1 :] if line[:3].strip().isdigit()]
    assert len(rows) == 3
    # the "80 GB" H100: CUDA's 79.11 GiB less 1.2 GiB of its context and NCCL, 83.7 GB
    hbm = (79.11 - 1.2) * 2**30 / 1e9
    for line in rows:  # each row's HBM left is 1 - its peak / HBM, and every peak fits
        peak, left = re.search(r"([\d.]+) GB +(\d+)%", line).groups()
        assert float(peak) < hbm and int(left) == pytest.approx(
            100 * (1 - float(peak) / hbm), abs=1
        )


def test_a_measured_peak_alone_calibrates_this_estimate_and_a_saved_step_keeps_the_stack(
    tmp_path, capsys
):
    # As the panel's "Measured peak": without --save-profile it still calibrates what is printed.
    assert main(["estimate", *H100_70B, "--measured-peak-gb", "60", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["peak_memory_bytes"]["reported"] == pytest.approx(
        60e9
    )
    # A step calibrated with a stack and flash attention off saves both into the profile.
    saved = tmp_path / "p.json"
    chosen = ["--stack", "megatron-lm", "--flash-attention", "off"]
    assert (
        main(
            [
                "estimate",
                *H100_70B,
                *chosen,
                "--measured-step-time",
                "30",
                "--save-profile",
                str(saved),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["estimate", *H100_70B, *chosen, "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["estimate", *H100_70B, "--profile", str(saved), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (
        again["step_time_s"] == pytest.approx(30)
        and again["peak_memory_bytes"]["measures"] == "allocated"
    )
    assert again["peak_memory_bytes"]["reserved"] == pytest.approx(
        direct["peak_memory_bytes"]["reserved"]
    )


def test_a_flag_beside_a_saved_scenario_overrides_that_field(tmp_path, capsys):
    from scaling_widgets.widgets.scenario import Scenario

    saved = tmp_path / "s.json"
    saved.write_text(
        Scenario(model="llama-3-70b", batch=16e6, seq_len=4096, mfu=None, tokens=None).to_json()
    )
    same = [
        "--model",
        "llama-3-70b",
        "--batch",
        "16e6",
        "--seq-len",
        "4096",
        "--json",
        "--strategy",
        "fsdp+tp",
    ]  # the saved scenario's own layout: flags alone would plan
    for extra in (
        [],
        ["--pp", "4", "--microbatches", "4"],
        ["--pp", "1"],
        ["--fsdp", "1120", "--tp", "8"],
    ):
        assert main(["estimate", "--scenario", str(saved), "--json", *extra]) == 0
        from_file = json.loads(capsys.readouterr().out)
        assert main(["estimate", *same, *extra]) == 0
        assert from_file == json.loads(capsys.readouterr().out), extra
    assert (from_file["layout"]["X"], from_file["layout"]["Y"]) == (
        1120,
        8,
    )  # the split by hand beside it


def test_a_flag_the_layout_would_not_use_is_refused_by_name(tmp_path, capsys):
    from scaling_widgets.widgets.scenario import Scenario

    saved = tmp_path / "s.json"
    roles = Scenario(model="llama-3-70b", batch=16e6, axis_roles=("y", "x", "x"))
    saved.write_text(roles.to_json())
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", "--scenario", str(saved), "--fsdp", "512"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert "--fsdp 512 is not used: the scenario's axis roles set the groups" in err


@pytest.mark.parametrize(
    "model, chips, flag, slower, faster, at_least",
    [
        ("llama-3-70b", "256", "--matmul-dtype", "bf16", "fp8", 1.1),
        ("llama-3-8b", "64", "--torch-compile", "off", "on", 1.0),  # compiled (MODEL.md §F.5)
    ],
)
def test_the_planner_ranks_fp8_or_compiled_layouts_at_their_own_faster_step(
    capsys, model, chips, flag, slower, faster, at_least
):
    argv = ["plan", "--model", model, "--hardware", "h100", "--chips", chips,
            "--batch", "4M", "--seq-len", "8192", "--top", "1", "--json"]  # fmt: skip
    steps = {}
    for choice in (slower, faster):
        assert main([*argv, flag, choice]) == 0
        steps[choice] = json.loads(capsys.readouterr().out)["layouts"][0]["step_time_s"]
    assert steps[faster] < steps[slower] / at_least


def test_fp8_on_a_chip_without_it_is_one_line_naming_the_flag_and_what_runs(capsys):
    argv = ["estimate", "--model", "llama-3-8b", "--hardware", "a100", "--batch", "4M"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--matmul-dtype", "fp8"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--matmul-dtype must be 'bf16' on the A100" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batches", "8M..1M"], "--batches must be a range LO..HI with LO at most HI"),
        (["--batches", "1M"], "--batches must be two values such as 64K..128M; got '1M'"),
        (["--batches", "1..100"], "--batches must be a range that holds a whole sequence"),
        (["--chip-range", "8192..8192"], "--chip-range must be a range that holds a count of"),
        (["--cells", "100x3"], "--cells must be a whole number from 1 to 64; got 100"),
        (["--cells", "3by3"], "--cells must be two values such as 24x24; got '3by3'"),
        # the map's batches are a range: one batch is read as --batches and refused
        (["--batch", "4M"], "--batches must be two values such as 64K..128M; got '4M'"),
    ],
)
def test_a_map_refusal_names_its_flag(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["map", "--model", "llama-3-8b", "--hardware", "tpu-v5p", *args])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-kernels", "0"], "--max-kernels must be a whole number from 1"),
        (["--max-kernels", "two"], "--max-kernels"),
        (["--port", "0"], "--port must be a whole number from 1"),
        (["--warm", "9"], "argument --warm: invalid choice: 9 (choose from 0, 1,"),
    ],
)
def test_a_demo_refusal_is_one_line_and_exit_2_before_any_server_starts(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--no-browser", *args])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_the_plan_puts_first_the_rows_its_own_error_cannot_rank_the_safest_first(capsys):
    where = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "512", "--batch",
             "4194304", "--seq-len", "8192", "--stack", "megatron-lm"]  # fmt: skip
    code, out, _ = run(["plan", *where, "--top", "10"], capsys)
    assert code == 0 and "80% interval" in out
    rows = [line for line in out.splitlines() if line[:3].strip().isdigit()]
    assert len(rows) == 10 and " tie " not in rows[0]
    marked = [" tie " in row for row in rows[1:]]
    assert any(marked) and "the model cannot order them" in out
    assert marked == sorted(marked, reverse=True)  # the tie is the table's head
    code, text, _ = run(["plan", *where, "--top", "10", "--json"], capsys)
    layouts = json.loads(text)["layouts"]
    assert not layouts[0]["ties_best"] and sum(r["ties_best"] for r in layouts) == sum(marked)
    low, high = layouts[0]["step_interval_s"]
    assert 0 < low < high and low / layouts[0]["step_time_s"] < 1 < high / layouts[0]["step_time_s"]
    # within the tie, the one that keeps more of its headroom first; the fastest is in the tie
    ranked = sw.plan(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], chips=512,
                     batch=4194304, seq_len=8192, stack="megatron-lm")  # fmt: skip
    tied = [ranked.estimate(r) for r in range(ranked.ties)]
    margins = [float(e.margin) for e in tied]
    assert margins == sorted(margins, reverse=True)
    fastest = float(ranked.step_time[ranked.order].min())
    assert min(float(e.step_time) for e in tied) == fastest
    assert all(float(e.step_time) <= ranked.band * fastest for e in tied)


def test_estimate_without_a_layout_is_the_plans_first_row_and_says_so(capsys):
    where = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "512", "--batch", "4M",
             "--seq-len", "8k", "--remat", "full"]  # fmt: skip
    code, text, _ = run(["plan", *where, "--top", "1", "--json"], capsys)
    first = json.loads(text)["layouts"][0]
    code, text, _ = run(["estimate", *where, "--json"], capsys)
    chosen = json.loads(text)
    assert code == 0 and chosen["layout"] == first["layout"] and chosen["remat"] == "full"
    assert chosen["step_time_s"] == first["step_time_s"] and "plan's first" in chosen["layout_from"]
    code, out, _ = run(["estimate", *where], capsys)
    assert out.startswith("Layout: the plan's first of") and "--tp" in out.splitlines()[0]
    # the API takes the same layout; a layout of one's own is evaluated as given
    api = sw.estimate(model="llama-3-70b", hardware="h100", chips=512, batch="4M", seq_len="8k",
                      remat="full")  # fmt: skip
    assert float(api.step_time) == first["step_time_s"]
    code, text, _ = run(["estimate", *where, "--tp", "4", "--json"], capsys)
    assert json.loads(text)["layout"]["Y"] == 4 and "layout_from" not in json.loads(text)
