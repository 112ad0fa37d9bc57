"""The measured runs of MODEL.md §C.6 as the cost model's values, and their published outcomes as
seconds.

The conversions follow the file's own ``conventions``; where a source also gives an MFU, the
converted step reproduces it with that source's FLOPs count and our presets' peaks.
"""

import dataclasses
import json
import math

import pytest

from scaling_widgets.cost import (
    Cluster,
    Layout,
    Options,
    Workload,
    evaluate,
    param_count,
    validate,
)
from scaling_widgets.measured import (
    CONVENTIONS,
    DEV_RUNS,
    DEV_RUNS_GPU,
    HELDOUT_RUNS,
    PUBLIC_MEMORY,
    PUBLIC_RUNS,
    SCHEDULE_RUNS,
    chips,
    flops_per_step,
    load_runs,
    read_cases,
    seconds_per_step,
    values_from_case,
)
from scaling_widgets.presets import HARDWARE, PRECISIONS
from scaling_widgets.text.units import parse_count

RUNS = load_runs()
BY_ID = {run.id: run for run in RUNS}
WITH_MFU = [run for run in RUNS if run.published.get("mfu") is not None]


def test_all_41_runs_load_with_a_positive_step_and_unique_ids():
    assert len(RUNS) == 41 and len(BY_ID) == 41
    assert all(run.step_time > 0 for run in RUNS)
    groups = json.loads(DEV_RUNS.read_text())["groups"]
    assert all(member in BY_ID for group in groups for member in group["members"])


def test_every_convention_of_the_files_is_implemented():
    files = (DEV_RUNS, DEV_RUNS_GPU, PUBLIC_RUNS, SCHEDULE_RUNS, HELDOUT_RUNS)
    named = set().union(*(json.loads(f.read_text())["conventions"] for f in files))
    assert set(CONVENTIONS) == named


def test_a_run_holds_the_four_values_built_from_its_case():
    cluster, workload, layout, options = BY_ID["MX-v5p-32B-2xv5p-128"].values
    assert isinstance(cluster, Cluster) and isinstance(workload, Workload)
    assert isinstance(layout, Layout) and isinstance(options, Options)
    assert (
        cluster.chip is HARDWARE["tpu-v5p"]
        and cluster.slice_shape == (4, 4, 4)
        and cluster.pods == 2
    )
    assert workload.batch == 1024 * 2048 and workload.seq_len == 2048
    assert workload.precision is PRECISIONS["mixed-adam"]
    assert (layout.x, layout.y, layout.z, layout.zero, layout.remat) == (16, 4, 1, 3, "selective")
    assert options.mfu is None  # the step is to be predicted (MODEL.md §C)


def test_a_gpu_run_is_whole_nodes_of_eight_on_one_pod():
    cluster, _, layout, _ = BY_ID["M2-529.6B"].values
    assert (
        cluster.chip is HARDWARE["a100"] and cluster.slice_shape == (315, 8) and cluster.pods == 1
    )
    assert (layout.x, layout.y, layout.z) == (9, 8, 35)
    assert (layout.schedule, layout.virtual_stages, layout.microbatches) == ("interleaved", 3, 280)
    # as it ran: no gradient accumulation where the source names none
    assert BY_ID["K3-22B-full"].values[2].microbatches == 1


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.id)
def test_every_run_passes_the_physical_check_as_a_predicted_step(run):
    validate(*run.values)


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.id)
def test_every_run_passes_the_physical_check_with_a_given_mfu(run):
    cluster, workload, layout, options = run.values
    validate(cluster, workload, layout, dataclasses.replace(options, mfu=0.5))


def test_every_layout_uses_every_chip():
    for run in RUNS:
        cluster, _, layout, _ = run.values
        slice_chips = math.prod(cluster.slice_shape)
        assert layout.x * layout.y * layout.z == slice_chips, run.id
        assert slice_chips * cluster.pods == chips(run.case), run.id


# Hand-computed conversions, one per kind of source.


def test_megatron_table_1_tflops_become_seconds_by_eq_3():
    # M2-1.7B: B = 512, s = 2048, l = 24, h = 2304, V = 51200, 32 A100 at 137 TFLOP/s each.
    # 96·B·s·l·h² = 96·512·2048·24·2304² = 1.2824704e16
    # 1 + s/(6h) + V/(16·l·h) = 1 + 2048/13824 + 51200/884736 = 1 + 0.148148 + 0.057870 = 1.2060185
    # F = 1.546683e16 FLOPs; t = F / (32 · 137e12) = 1.546683e16 / 4.384e15 = 3.5280 s
    assert BY_ID["M2-1.7B"].step_time == pytest.approx(3.5280, abs=1e-4)


def test_maxtext_v5p_tflops_become_seconds_by_its_2023_count():
    # MX-v5p-32B-1xv5p-128: L = 32, D = 10240, F = 32768, N_h = 32, H = 256, V = 32768, s = 2048.
    # Ψ = V·D + L·(4·D·N_h·H + 2·D·F + 2·D) + D
    #   = 335,544,320 + 32·(335,544,320 + 671,088,640 + 20,480) + 10,240 = 32,548,464,640
    # per token: 6Ψ + 6·L·N_h·H·s = 195,290,787,840 + 3,221,225,472 = 198,512,013,312
    # tokens per chip: 512·2048 / 64 = 16,384; t = 16,384 · 1.98512e11 / 328e12 = 9.9159 s
    run = BY_ID["MX-v5p-32B-1xv5p-128"]
    assert flops_per_step(run.case, "maxtext_2023") == pytest.approx(512 * 2048 * 198_512_013_312)
    assert run.step_time == pytest.approx(9.9159, abs=1e-4)


def test_torchtitan_tokens_per_gpu_become_seconds():
    # TT-H100-L3-8B-n8: 16 sequences of 8192 = 131,072 tokens; 8 GPUs at 5762 tokens/s each
    # = 46,096 tokens/s; t = 131,072 / 46,096 = 2.8435 s
    assert BY_ID["TT-H100-L3-8B-n8"].step_time == pytest.approx(2.8435, abs=1e-4)


def test_the_maxtext_conventions_differ_by_their_attention_term_only():
    case = BY_ID["MX-v5e-16B-1x"].case
    m, s, B = case["model"], case["seq_len"], case["global_batch_seqs"]
    causal = 6 * m["layers"] * m["heads"] * m["head_dim"] * s * B * s  # 6·L·N_h·H·s per token
    early, mid, oct = (
        flops_per_step(case, c) for c in ("maxtext_early2023", "maxtext_2023", "maxtext_oct2023")
    )
    assert mid - early == pytest.approx(causal) and oct - early == pytest.approx(2 * causal)


def test_llama3_assumed_counts_the_models_parameters_and_causal_attention():
    case = BY_ID["TT-H100-L3-405B-n128"].case
    m, s, B = case["model"], case["seq_len"], case["global_batch_seqs"]
    psi = float(param_count(**{k: v for k, v in m.items() if k != "name"}).total)
    per_token = 6 * psi + 6 * m["layers"] * m["heads"] * m["head_dim"] * s
    assert flops_per_step(case, "llama3_causal_assumed") == pytest.approx(B * s * per_token)


def test_a_rate_for_the_whole_cluster_and_a_time_convert_as_published():
    case = {
        "published": {"kind": "tokens_per_s", "value": 1e6},
        "global_batch_seqs": 1024,
        "seq_len": 4096,
    }
    assert seconds_per_step(case) == pytest.approx(4.194304)
    assert BY_ID["K3-175B-full"].step_time == 18.13


# The published MFU, reproduced from the converted step (within 2 %).


def _source_model_flops(case):
    """FLOPs per step as the source counts them for its MFU."""
    convention = case["published"].get("convention")
    if convention:  # TFLOP/s per chip: the MFU is that count over the chip's peak
        return flops_per_step(case, convention)
    m, s, B = case["model"], case["seq_len"], case["global_batch_seqs"]
    L, D, V = m["layers"], m["d_model"], m["vocab"]
    if case["stack"] == "megatron-lm":  # Korthikanti et al. 2022, model FLOPs: no recompute
        return 72 * B * s * L * D**2 * (1 + s / (6 * D) + V / (12 * L * D))
    if (
        case["stack"] == "torchtitan"
    ):  # torchtitan get_num_flop_per_token: 6·N (no input embedding) + 12·L·N_h·H·s
        n = float(param_count(**{k: v for k, v in m.items() if k != "name"}).total) - V * D
        return B * s * (6 * n + 12 * L * m["heads"] * m["head_dim"] * s)
    raise AssertionError(f"no MFU convention known for {case['id']}")


@pytest.mark.parametrize("run", WITH_MFU, ids=lambda run: run.id)
def test_the_converted_step_reproduces_the_published_mfu(run):
    peak = run.values[0].chip.flops
    mfu = _source_model_flops(run.case) / (chips(run.case) * peak * run.step_time)
    assert mfu == pytest.approx(run.published["mfu"], rel=0.02)


@pytest.mark.parametrize(
    "run", [r for r in WITH_MFU if r.published.get("hfu")], ids=lambda run: run.id
)
def test_korthikanti_hfu_counts_the_recomputed_attention(run):
    # Korthikanti et al. 2022, Appendix: with selective recompute, 72·B·s·l·h²·(1 + s/(3h) +
    # V/(12·l·h)).
    m, s, B = run.case["model"], run.case["seq_len"], run.case["global_batch_seqs"]
    L, D, V = m["layers"], m["d_model"], m["vocab"]
    hardware_flops = 72 * B * s * L * D**2 * (1 + s / (3 * D) + V / (12 * L * D))
    hfu = hardware_flops / (chips(run.case) * run.values[0].chip.flops * run.step_time)
    assert hfu == pytest.approx(run.published["hfu"], rel=0.02)


def test_load_runs_reads_another_file_and_refuses_an_unknown_convention(tmp_path):
    data = json.loads(DEV_RUNS.read_text())
    data["cases"] = data["cases"][:1]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(data))
    assert [run.id for run in load_runs(path)] == ["M2-1.7B"]
    data["cases"][0]["published"]["convention"] = "palm_appendix_b"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="palm_appendix_b"):
        read_cases(path)


def test_calibration_accepts_every_published_step():
    # every measured run is slower than its hardware FLOPs at the chip's peak (MODEL.md §C.3)
    from pathlib import Path

    from scaling_widgets.cost.calibrate import calibrate

    public = Path(__file__).resolve().parents[2] / "scaling_widgets" / "data" / "public_runs.json"
    for run in [*load_runs(), *load_runs(public)]:
        profile = calibrate(*run.values, step_time=run.step_time)
        assert profile.chip == run.values[0].chip.id, run.id


def test_a_case_may_carry_a_mixture_of_experts_and_its_expert_and_context_groups():
    # what the next published MoE and long-context runs need: the model's experts as its JSON
    # gives them, EP out of the data axis, CP over it
    case = json.loads(json.dumps(read_cases()[0]))  # Megatron's 1.7B on 32 A100s: FSDP 32
    case["model"] = {**case["model"], "gated": True,
                     "moe": {"experts": 8, "top_k": 2, "d_ff": case["model"]["d_ff"]}}  # fmt: skip
    case["layout"] = {**case["layout"], "ep": 8, "cp": 2, "cp_kind": "all-gather"}
    cluster, workload, layout, options = values_from_case(case)
    assert workload.model.moe.experts == 8 and (layout.ep, layout.cp) == (8, 2)
    assert float(evaluate(cluster, workload, layout, options).step_breakdown["ep_exposed"]) > 0


def test_megatron_cores_flop_count_gives_the_tflops_nemo_printed():
    # NeMo 24.07 printed tokens/s and model TFLOP/s per GPU side by side: the FLOP count read from
    # the tokens must give the TFLOP/s column, for every model (GPT-3, Llama 2 and 3, Nemotron).
    cases = [c for c in read_cases(DEV_RUNS_GPU) if "tflops_per_chip" in c["published"]]
    assert len(cases) == 12
    for case in cases:
        flops = flops_per_step(case, "megatron_core_2024")
        tflops = flops / (seconds_per_step(case) * chips(case)) / 1e12
        assert tflops == pytest.approx(case["published"]["tflops_per_chip"], rel=2e-3), case["id"]


def test_the_gpu_runs_name_the_overlaps_they_ran():
    runs = load_runs(DEV_RUNS_GPU)
    assert len(runs) == 21 and {r.stack for r in runs} == {"megatron-lm"}
    on = {r.values[3].features for r in runs}
    assert on == {"overlap_grad_reduce,overlap_param_gather,tp_comm_overlap,overlap_p2p_comm"}


def test_the_held_out_nanotron_runs_add_up_as_their_cells_say():
    # each cell's DP x GAS x MBS is the step's 256 sequences, DP x TP x PP its GPUs, and the step
    # its 1M tokens over the throughput the run measured; the groups name runs of the file
    runs = load_runs(HELDOUT_RUNS)
    cases = {c["id"]: c for c in read_cases(HELDOUT_RUNS)}
    assert len(runs) == 26
    for run in runs:
        case, layout = cases[run.id], cases[run.id]["layout"]
        mbs = int(run.id.split("-mbs")[1].split("-")[0])
        assert layout["fsdp"] * layout["microbatches"] * mbs == case["global_batch_seqs"] == 256
        assert layout["fsdp"] * layout["tp"] * layout["pp"] == case["chips"]
        tokens_per_s = case["published"]["value"] * case["chips"]
        assert math.isclose(run.step_time, 256 * 4096 / tokens_per_s)
        assert 0 < case["network"]["all_reduce_busbw_GBps"] < 900  # below NVLink's
    members = {m for g in json.loads(HELDOUT_RUNS.read_text())["groups"] for m in g["members"]}
    assert members == set(cases)


def test_nanotrons_first_stage_holds_the_layers_its_rank_0_counted():
    # nanotron balances its stages by each block's cost (models/base.py, build_model: a layer
    # 4·D² + 3·F·D, the output layer V·D), which gives its first stage more layers than an even
    # split. Each pipelined cell's first stage is the embedding and the layers whose parameters,
    # over TP, make up rank 0's count in its result table ("Local Params", three figures), in
    # both held-out files alike, and read on world rank 0, which writes the table.
    peaks = json.loads(PUBLIC_MEMORY.read_text(encoding="utf-8"))["cases"]
    memory = {c["id"].split("-", 1)[1]: c for c in peaks}
    pipelined = 0
    for case in read_cases(HELDOUT_RUNS):
        model, layout = case["model"], case["layout"]
        twin = memory[case["id"].split("-", 1)[1]]
        assert twin["device"] == "first" and twin["rank0_params"] == case["rank0_params"]
        if layout["pp"] == 1:
            assert "first_stage_layers" not in layout | twin["layout"]
            continue
        pipelined += 1
        D, F, H = model["d_model"], model["d_ff"], model["head_dim"]
        layer = 2 * model["heads"] * H * D + 2 * model["kv_heads"] * H * D + 3 * F * D
        first = layout["first_stage_layers"]
        rank0 = (model["vocab"] * D + first * layer) / layout["tp"]
        assert rank0 == pytest.approx(parse_count(case["rank0_params"]), rel=0.005)
        assert twin["layout"]["first_stage_layers"] == first > model["layers"] / layout["pp"]
    assert pipelined == 16
