"""Published layouts typed with the knobs their sources give and nothing more, and the counts
frameworks need: whole sequences in a batch, whole sequences in a microbatch, GPUs in nodes."""

import json
import re

import pytest

from .running import estimate, run

DEEPSEEK_V3 = ["--model", "deepseek-v3", "--hardware", "h100", "--chips", "2048",
               "--batch", "62914560", "--seq-len", "4096", "--pp", "16", "--ep", "64",
               "--zero", "1", "--tp", "1"]  # fmt: skip
LLAMA_3_405B = ["--model", "llama-3-405b", "--hardware", "h100", "--chips", "16k",
                "--batch", "16777216", "--seq-len", "8k", "--tp", "8", "--pp", "16",
                "--dp", "128"]  # fmt: skip

# Megatron-Core folds EP over TP x DP (expert tensor parallelism 1): EP 32 over TP 2 x DP 16.
QWEN3_235B = ["--model", "qwen3-235b-a22b", "--hardware", "h100", "--chips", "256",
              "--batch", "4194304", "--seq-len", "4096", "--tp", "2", "--pp", "8", "--dp", "16",
              "--ep", "32"]  # fmt: skip


def test_deepseek_v3_runs_with_its_sources_knobs_in_whole_microbatches(capsys):
    # 15,360 sequences over 128 data replicas (2,048 GPUs / 16 stages): 120 each.
    e = estimate(capsys, *DEEPSEEK_V3)
    layout = e["layout"]
    assert (layout["X"], layout["Y"], layout["Z"], layout["EP"]) == (128, 1, 16, 64)
    assert 120 % layout["microbatches"] == 0 and layout["microbatches"] >= 16


def test_microbatches_of_part_sequences_are_refused_with_the_counts_that_split_whole(capsys):
    # DeepSeek-V3's 120 sequences a replica in 64 microbatches would be 1.875 sequences each.
    code, out, err = run(capsys, "estimate", *DEEPSEEK_V3, "--microbatches", "64")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--microbatches must be a count that splits each data replica's 120 sequences" in err
    assert "(e.g. 30, 40, 60 microbatches); got 64: 1.875 sequences each" in err
    assert estimate(capsys, *DEEPSEEK_V3, "--microbatches", "60")["layout"]["microbatches"] == 60


def test_llama_3_405b_runs_with_tp_8_pp_16_dp_128(capsys):
    # DP counted as the frameworks count it: DP x TP x PP = 16,384 GPUs; 16M tokens of 8K.
    e = estimate(capsys, *LLAMA_3_405B)
    layout = e["layout"]
    assert (layout["X"], layout["Y"], layout["Z"], e["chips"]) == (128, 8, 16, 16384)
    assert e["sequences"] == 2048 and e["batch_tokens_asked"] is None
    assert 16 % layout["microbatches"] == 0  # 16 sequences a replica, in whole microbatches


def test_a_batch_of_part_sequences_is_rounded_to_whole_ones_with_a_note(capsys):
    cluster = [*LLAMA_3_405B[:6], "--seq-len", "8k"]
    code, out, _ = run(capsys, "estimate", *cluster, "--batch", "16e6")
    assert code == 0
    assert (
        "The batch asked for, 16,000,000 tokens, is 1,953.12 sequences of 8192: rounded to 1,953"
        " whole sequences (15,998,976 tokens)" in out
    )
    e = estimate(capsys, *cluster, "--batch", "16e6")
    assert e["batch_tokens_asked"] == 16e6 and e["batch_tokens"] == 1953 * 8192
    # A batch of whole sequences is as asked, with no note.
    e = estimate(capsys, *cluster, "--batch", "16777216")
    assert e["batch_tokens_asked"] is None and e["batch_tokens"] == 16777216


def test_a_16m_batch_is_metas_2048_sequences_of_8k_said_both_ways(capsys):
    # K, M and G in a batch are powers of two, as MaxText's and Megatron-LM's scripts count
    cluster = ["--model", "llama-3-405b", "--hardware", "h100", "--chips", "2048", "--seq-len",
               "8k", "--strategy", "fsdp"]  # fmt: skip
    e = estimate(capsys, *cluster, "--batch", "16M")
    assert e["batch_tokens"] == 16 * 2**20 and e["sequences"] == 2048
    assert e["batch_tokens_asked"] is None and e["layout"]["CP"] == 1  # no CP chosen for you
    code, out, _ = run(capsys, "estimate", *cluster, "--batch", "16M")
    assert "batch 16M = 16,777,216 tokens (2,048 sequences of 8192)" in out
    assert "rounded" not in out and "context parallelism" not in out


@pytest.mark.parametrize("chips, racks", [(128, 2), (256, 4), (1024, 16), (8192, 128)])
def test_gb200_nvl72_runs_64_gpus_a_rack_as_nvidia_benchmarks_it(capsys, chips, racks):
    e = estimate(capsys, "--hardware", "gb200-nvl72", "--chips", str(chips),
                 "--model", "llama-3-70b", "--batch", "4194304", "--seq-len", "8k")  # fmt: skip
    assert e["chips"] == chips and e["layout"]["slice_shape"] == [racks, 64]


def test_gpus_no_count_of_nodes_holds_evenly_are_refused_with_the_nearest_that_run(capsys):
    code, _, err = run(capsys, "estimate", "--hardware", "h100", "--chips", "100",
                       "--model", "llama-3-8b", "--batch", "1M")  # fmt: skip
    assert code == 2
    assert "--chips must be a count the fewest nodes of 8 hold evenly, such as 96 or 104" in err
    # 12 GPUs are two nodes of 6
    assert estimate(capsys, "--hardware", "h100", "--chips", "12", "--model", "llama-3-8b",
                    "--batch", "1M")["layout"]["slice_shape"] == [2, 6]  # fmt: skip


def test_plan_leaves_a_tenth_of_hbm_by_default_and_takes_another_headroom(capsys):
    args = ["plan", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "512",
            "--batch", "4194304", "--seq-len", "8k", "--json"]  # fmt: skip
    for share in (None, "0.8"):
        code, out, err = run(capsys, *args, *([] if share is None else ["--fits-below", share]))
        assert code == 0, err
        hbm = 81_559 * 2**20
        limit = (0.9 if share is None else 0.8) * hbm
        peaks = [row["peak_memory_bytes"]["reserved"] for row in json.loads(out)["layouts"]]
        assert peaks and max(peaks) <= limit


def test_data_axis_refusals_say_which_convention_they_read(capsys):
    common = ["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "2048",
              "--batch", "16M", "--seq-len", "128k", "--tp", "8"]  # fmt: skip
    # --dp counts as Megatron-LM and torchtitan do: DP x CP x TP x PP = chips
    code, _, err = run(capsys, *common, "--dp", "16", "--cp", "16", "--pp", "2")
    assert code == 2 and err.count("\n") == 1
    assert "--dp must be such that DP x CP x TP x PP is the 2,048 chips of a pod" in err
    assert "DP = 8 here; got DP 16 x CP 16 x TP 8 x PP 2 = 4,096" in err
    # --fsdp is the whole data axis, CP included
    code, _, err = run(capsys, *common, "--fsdp", "16", "--cp", "16")
    assert code == 2 and "--fsdp must be the whole data axis, its CP and EP chips included" in err
    assert "(frameworks' DP x CP)" in err and "x = 256 here" in err
    # and the frameworks' count runs
    assert estimate(capsys, *common[1:], "--dp", "16", "--cp", "16")["layout"]["X"] == 256


def test_qwen3_235b_folds_ep_32_over_tp_2_and_dp_16_with_expert_tp_1(capsys):
    e = estimate(capsys, *QWEN3_235B, "--etp", "1")
    layout = e["layout"]
    assert (layout["X"], layout["Y"], layout["Z"], layout["EP"], layout["ETP"]) == (
        16, 2, 8, 32, 1
    )  # fmt: skip
    assert "EP 32 over TP 2 x 16 of X, whole experts on each chip" in e["layout_name"]
    # Without it the experts would split over TP as the rest, EP out of the 16 of X: one line
    # naming the flag that runs.
    code, out, err = run(capsys, "estimate", *QWEN3_235B)
    assert code == 2 and out == "" and err.count("\n") == 1
    need = "--ep must be an EP degree dividing the model's 128 experts and the data axis X = 16"
    assert need in err
    assert "(or etp 1, whole experts on each chip: EP 32 over TP 2 x 16 of X); got 32" in err


def test_dp_as_the_frameworks_count_it_holds_cp_to_what_was_given(capsys):
    # DP x CP x TP x PP = chips: with --dp 128 and no --cp, CP is 1, not chosen to split
    # sequences (which would leave DP 64). 16e6 tokens give each replica 15.3 sequences.
    layout = [*LLAMA_3_405B[:6], "--tp", "8", "--pp", "16", "--dp", "128", "--seq-len", "8k"]
    code, out, err = run(capsys, "estimate", *layout, "--batch", "16e6", "--microbatches", "16")
    assert code == 2 and out == "" and "--microbatches must be at most the 15.3 sequences" in err
    assert estimate(capsys, *layout, "--batch", "16e6")["layout"]["CP"] == 1


# DeepSeek-V3's report (sec. 3.2-3.3): 2,048 H800s, EP 64, PP 16 with DualPipe, ZeRO-1, no TP;
# fp8 weights, bf16 moments, RMSNorm and MLA up-projections recomputed, the MTP module.
DEEPSEEK_V3_KNOBS = ["--model", "deepseek-v3", "--hardware", "h800", "--chips", "2048",
                     "--batch", "62914560", "--seq-len", "4096", "--pp", "16", "--ep", "64",
                     "--dp", "128", "--zero", "1", "--schedule", "dualpipe",
                     "--microbatches", "120", "--stack", "megatron-lm", "--precision",
                     "mixed-adam", "--matmul-dtype", "fp8", "--fp8-params", "--moment-dtype",
                     "bf16", "--remat", "selective:layernorm,mla_up_proj,moe_act",
                     "--swiglu-input-fp8"]  # fmt: skip


def test_deepseek_v3_fits_on_2048_h800_with_its_published_knobs(capsys):
    # its report (§3.3.2): the SwiGLU's inputs cached in fp8, its output recomputed (moe_act)
    e = estimate(capsys, *DEEPSEEK_V3_KNOBS)
    assert e["params_mtp"] > 11e9 and e["layout"]["EP"] == 64
    assert e["memory_verdict"] in ("fits", "tight")


def test_deepseek_v3s_knobs_each_lower_its_peak(capsys):
    # what each published knob saves is a user's check: fp8 weights, bf16 moments, recompute,
    # the SwiGLU's input in fp8
    def peak(without=None):
        args = list(DEEPSEEK_V3_KNOBS)
        if without in ("--fp8-params", "--swiglu-input-fp8"):
            args.remove(without)
        elif without is not None:  # the default: fp32 moments, nothing recomputed
            args[args.index(without) + 1] = {"--moment-dtype": "fp32", "--remat": "none"}[without]
        return estimate(capsys, *args)["peak_memory_bytes"]

    every = peak()
    for flag, part in (("--fp8-params", "weights"), ("--moment-dtype", "optimizer"),
                       ("--remat", "activations"),
                       ("--swiglu-input-fp8", "activations")):  # fmt: skip
        assert peak(flag)[part] > every[part], flag


def test_rank_of_says_where_llama_3_405bs_layout_ranks_and_which_term_keeps_it_there(capsys):
    # Meta's TP 8 x PP 16 x DP 128, as typed without a schedule: 1F1B, 16 microbatches of one
    # sequence on 16 stages, so the bubble is the term the faster layouts do without.
    where, layout = LLAMA_3_405B[:10], " ".join(LLAMA_3_405B[10:] + ["--zero", "1"])
    code, out, err = run(capsys, "plan", *where, "--stack", "megatron-lm", "--rank-of", layout)
    assert code == 0 and err == ""
    head, rank, *above = out.splitlines()
    assert head.startswith("Your layout: DP X=128 x TP Y=8 x PP Z=16") and "it fits" in head
    place = int(re.search(r"ranks ([\d,]+) of", rank).group(1).replace(",", ""))
    assert place > 10 and len(above) == 3
    assert all("against yours: bubble -" in line for line in above)  # the largest term first


def test_rank_of_agrees_with_the_plans_own_table(capsys):
    where = ["--model", "llama-3-70b", "--hardware", "h100", "--chips", "512", "--batch",
             "4194304", "--seq-len", "8192", "--stack", "megatron-lm"]  # fmt: skip
    code, text, _ = run(capsys, "plan", *where, "--top", "5", "--json")
    fifth = json.loads(text)["layouts"][4]
    k = fifth["layout"]
    flags = (f"--fsdp {k['X']} --tp {k['Y']} --pp {k['Z']} --zero {fifth['zero_stage']}"
             f" --schedule {fifth['schedule']} --virtual-stages {fifth['virtual_stages']}"
             f" --microbatches {k['microbatches']} --remat {fifth['remat']}"
             f" --cp {k['CP']}")  # fmt: skip
    code, out, _ = run(capsys, "plan", *where, "--rank-of", flags)
    place = int(re.search(r"ranks ([\d,]+) of", out).group(1))
    assert code == 0 and place <= 5 and f"{fifth['step_time_s']:.3g}" in out.splitlines()[0]


def test_rank_of_refuses_flags_it_cannot_read_in_one_line(capsys):
    for flags in ("--tp 8 'open", "--tp 8 --pipeline 16", "--tp 8 --batch 1M"):
        code, _, err = run(capsys, "plan", *LLAMA_3_405B[:10], "--rank-of", flags)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--rank-of" in err


def test_deepseek_v3s_published_layout_ties_with_the_fastest_of_its_plan(capsys):
    # the layout's own knobs to --rank-of, the scenario's (chip, precision, stack) to the plan
    layout = ("--pp", "--ep", "--dp", "--zero", "--schedule", "--microbatches", "--remat")
    knobs = DEEPSEEK_V3_KNOBS
    own = [w for i, w in enumerate(knobs) if w in layout or (i and knobs[i - 1] in layout)]
    where = [w for w in knobs if w not in own]
    code, out, err = run(capsys, "plan", *where, "--rank-of", " ".join(own))
    assert code == 0 and err == ""
    head, rank, *above = out.splitlines()
    assert "EP 64 x PP Z=16" in head and "dualpipe" in head
    assert "in the tie with the fastest, which the model cannot order" in rank


# Meta's Llama 3 405B as Megatron-LM runs such a layout: interleaved stages, sequence parallel, a
# layer fewer on the first and last stages for the embedding and the loss, and no activation
# checkpointing at 8K, as the Llama 3 report's text describes its pipeline (§3.3.2).
META_KNOBS = ("--tp 8 --pp 16 --zero 1 --schedule interleaved --virtual-stages 4 --remat none"
              " --sequence-parallel --first-stage-layers 7 --last-stage-layers 7")  # fmt: skip


@pytest.mark.parametrize(
    "chips, seq_len, data",
    [("16k", "8k", "--dp 128"), ("8k", "8k", "--dp 64"), ("16k", "128k", "--dp 8 --cp 16")],
)
def test_metas_405b_layouts_tie_with_the_fastest_of_their_plans(capsys, chips, seq_len, data):
    where = ["--model", "llama-3-405b", "--hardware", "h100", "--chips", chips, "--batch", "16M",
             "--seq-len", seq_len, "--stack", "megatron-lm"]  # fmt: skip
    code, out, err = run(capsys, "plan", *where, "--rank-of", f"{META_KNOBS} {data}")
    assert code == 0 and err == ""
    head, rank, *_ = out.splitlines()
    assert "TP Y=8 x PP Z=16" in head and "interleaved x 4 virtual" in head
    assert "in the tie with the fastest, which the model cannot order" in rank


def test_metas_405b_at_8k_on_16k_gpus_is_not_called_out_of_memory(capsys):
    e = estimate(capsys, *LLAMA_3_405B[:10], "--stack", "megatron-lm", *META_KNOBS.split(),
                 "--dp", "128")  # fmt: skip
    assert e["layout"]["first_stage_layers"] == 7 and e["memory_verdict"] in ("fits", "tight")
