"""The chapter's worked examples and the book's Part 6 through the command line, typed as the book
states them: a batch in tokens, sequences of the book's length or the CLI's default, and no flag
the book does not name. The chapter's arithmetic reads its batches in millions (3M is 3e6 in its
732 tokens a chip), so they are typed as 3e6: the CLI's 3M is 3 x 2**20. Where a data replica
would get less than a whole sequence, the tool splits each sequence over chips (context
parallelism) and says so; the chapter's numbers stand."""

import json

import pytest

from scaling_widgets.cli import main

V5P = ["estimate", "--hardware", "tpu-v5p", "--json"]


def estimate(capsys, *args) -> dict:
    assert main([*V5P, *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_examples_1_and_2_data_parallelism_needs_2550_tokens_a_chip_on_one_axis_850_on_three(
    capsys,
):
    one_axis = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x1x1", "--batch", "1e6",
                        "--strategy", "dp")  # fmt: skip
    assert one_axis["critical_tokens_per_chip"] == 2550
    pod = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x20x28", "--batch", "8e6",
                   "--strategy", "dp")  # fmt: skip
    assert pod["critical_tokens_per_chip"] == 850
    assert pod["critical_tokens_per_chip"] * pod["chips"] == pytest.approx(7.6e6, rel=0.01)


def test_example_11_across_pods_each_pod_needs_73440_tokens(capsys):
    two = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "3e6",
                   "--pods", "2")  # fmt: skip
    assert two["critical_tokens_per_pod"] == 73_440


def test_examples_14_and_15_llama_2_13b_parameters_optimizer_and_checkpoints(capsys):
    dp = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "16e6",
                  "--strategy", "dp", "--mfu", "0.4")  # fmt: skip
    parts = dp["params_by_part"]
    assert parts["mlp"] == pytest.approx(8.5e9, rel=0.01)
    assert parts["attention"] == pytest.approx(4.2e9, rel=0.01)
    assert parts["embeddings"] == pytest.approx(0.33e9, rel=0.01)
    assert dp["params"] == pytest.approx(13.0e9, rel=0.005)
    memory = dp["memory_per_chip_bytes"]
    assert memory["params"] + memory["optimizer"] == pytest.approx(130e9, rel=0.005)
    # 2·L·B·(D + 2F) over all the chips, each holding its share of the batch
    assert memory["activations"] * dp["chips"] == pytest.approx(42e12, rel=0.01)


def test_example_16_llama_2_13b_at_3m_tokens_of_32k_on_4096_chips(capsys):
    # "B = 3M, T = 32k (96 sequences)": 91.6 sequences of 32,768 for 1024 data replicas.
    args = ["--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "3e6", "--seq-len", "32k",
            "--mfu", "0.4", "--strategy", "fsdp+tp"]  # fmt: skip
    e = estimate(capsys, *args)
    assert (e["layout"]["X"], e["layout"]["Y"]) == (1024, 4)
    assert e["seq_len"] == 32768 and e["layout"]["CP"] == 16  # 12 replicas' worth of CP chips
    # 3M tokens are 91.55 sequences: rounded to 92 whole ones, 736 tokens a chip where the
    # chapter, counting tokens, has 3M/4096 = 732 (and its "96 sequences" read 3M as 3·2²⁰).
    assert e["batch_tokens_asked"] == 3e6 and e["sequences"] == 92
    assert e["compute_bound"] is True and e["tokens_per_chip"] == 736
    assert e["tokens_per_chip"] == pytest.approx(732, rel=0.01)
    assert e["step_time_s"] == pytest.approx(0.3, abs=0.015)
    assert e["strategies"]["dp"]["fits"] is False  # 130 GB > 96 GB
    assert e["strategies"]["fsdp"]["compute_bound"] is False  # needs 850·4096 = 3.48M > 3M
    # The report says what it chose, in one line.
    assert main(["estimate", "--hardware", "tpu-v5p", *args]) == 0
    report = capsys.readouterr().out
    assert "each sequence of 32768 split over 16 chips (context parallelism, chosen for you:" in (
        report
    )
    assert "3,014,656 tokens give 0.09 sequences per data replica" in report
    assert "3,000,000 tokens, is 91.55 sequences of 32768: rounded to 92 whole sequences" in report


def test_cp_1_asked_for_keeps_the_refusal_naming_what_would_run(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*V5P, "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "3e6",
              "--seq-len", "32k", "--cp", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--batch must be at least" in err and "--cp" in err


def test_part_6_llama_3_70b_on_a_v5p_pod_and_the_worked_problems(capsys):
    common = ["--model", "llama-3-70b", "--mesh", "16x20x28", "--batch", "4194304", "--mfu",
              "0.4", "--tokens", "15T"]  # fmt: skip
    pod = estimate(capsys, *common)
    # Every compute-bound split takes the same step at a given MFU; the tie goes to the one
    # compute-bound down to the smallest batch (here TP 16 over two axes of the real pod).
    assert pod["compute_bound"] is True and pod["layout"]["X"] * pod["layout"]["Y"] == 8960
    # "a mixture of data parallelism (1024-way), sequence parallelism (2-way), and tensor
    # parallelism (4-way)": on the real pod, TP 4 is 2240 x 4 with each sequence over 4 chips.
    tp4 = estimate(capsys, *common, "--tp", "4")
    assert (tp4["layout"]["X"], tp4["layout"]["CP"], tp4["compute_bound"]) == (2240, 4, True)
    assert tp4["step_time_s"] == pytest.approx(pod["step_time_s"])
    assert pod["training_time_s"] / 86400 == pytest.approx(44, rel=0.02)  # "about 44 days"
    four = estimate(capsys, *common, "--pods", "4")  # Question 1: about 11 days
    assert four["training_time_s"] / 86400 == pytest.approx(11, rel=0.05)
    eight = estimate(capsys, *common, "--model", "llama-3-405b", "--pods", "8")  # the last wins
    assert eight["params"] == pytest.approx(406e9, rel=0.003)  # Question 2
    assert eight["training_time_s"] / 86400 > 32  # 32 days of compute, and the exposed traffic


def _model_file(tmp_path, d_model: int, d_ff: int) -> str:
    """The chapter's generic layer, two matrices of D x F as its examples give them (32 layers;
    the thresholds depend on F alone)."""
    path = tmp_path / f"chapter-{d_model}-{d_ff}.json"
    path.write_text(json.dumps(dict(name=f"D {d_model}, F {d_ff}", layers=32, d_model=d_model,
                                    d_ff=d_ff, heads=64, kv_heads=8, head_dim=128, vocab=32000,
                                    gated=False, tied_embeddings=False)))  # fmt: skip
    return str(path)


def test_example_3_pure_dp_holds_at_most_hbm_over_10_bytes_a_parameter(capsys):
    # 96 GB / 10 B ≈ 9.6e9 parameters: 7B's weights and Adam state fit, 13B's (130 GB) do not.
    for model, fits in (("llama-2-7b", True), ("llama-2-13b", False)):
        e = estimate(capsys, "--model", model, "--mesh", "4x4x4", "--batch", "1e6",
                     "--strategy", "dp", "--mfu", "0.4")  # fmt: skip
        state = e["memory_per_chip_bytes"]["params"] + e["memory_per_chip_bytes"]["optimizer"]
        assert state == pytest.approx(10 * e["params"]) and (state < 96e9 * 2**30 / 1e9) == fits


def test_examples_4_and_5_fsdp_over_a_pod_needs_850_tokens_a_chip(capsys):
    # DeepSeek-V2's 40M tokens over 3-axis FSDP: 40M/850 ≈ 47,000 chips, about 5 pods.
    e = estimate(capsys, "--model", "llama-3-70b", "--mesh", "16x20x28", "--batch", "40e6",
                 "--strategy", "fsdp", "--mfu", "0.5", "--tokens", "15T")  # fmt: skip
    assert e["critical_tokens_per_chip"] == 850
    assert 40e6 / e["critical_tokens_per_chip"] == pytest.approx(47_000, rel=0.01)
    # LLaMA-3 70B: 6·P·15T ≈ 6.3e24 FLOPs; 16M tokens keep 18,823 chips compute-bound.
    assert e["flops_per_token"] * 15e12 == pytest.approx(6.3e24, rel=0.01)
    assert 16e6 / e["critical_tokens_per_chip"] == pytest.approx(18_823, abs=1)


def test_examples_6_and_7_the_tp_limit_is_f_over_2550(capsys, tmp_path):
    l3 = estimate(capsys, "--model", "llama-3-70b", "--mesh", "16x16x16", "--batch", "4e6",
                  "--mfu", "0.4")  # fmt: skip
    # F/2550 (the chapter's F ≈ 30,000 gives 11.8)
    assert l3["tp_limit"] == pytest.approx(28_672 / 2550, abs=0.01)
    # Gemma 7B as the chapter counts it, F = 49,152 (its config's 24,576 gated, times two)
    gemma = _model_file(tmp_path, 3072, 49_152)
    e = estimate(capsys, "--model-file", gemma, "--mesh", "16x16x16", "--batch", "4e6",
                 "--fsdp", "256", "--tp", "16", "--mfu", "0.4")  # fmt: skip
    assert e["layout"]["M_Y"] == 1 and e["tp_limit"] == pytest.approx(19.3, abs=0.05)


def test_examples_8_and_9_x_opt_on_4x4x4_and_99_tokens_a_chip(capsys, tmp_path):
    layer = _model_file(tmp_path, 8192, 32_768)
    # The chapter's split, 16 x 4: X over two axes, Y over one (M_X/M_Y = 2)
    e = estimate(capsys, "--model-file", layer, "--mesh", "4x4x4", "--batch", "48000",
                 "--seq-len", "1", "--fsdp", "16", "--tp", "4", "--mfu", "0.4")  # fmt: skip
    assert (e["layout"]["M_X"], e["layout"]["M_Y"]) == (2, 1)
    assert e["x_opt"] == pytest.approx(13.7, abs=0.05)  # the chapter prints 13.9
    assert e["critical_tokens_per_chip"] == pytest.approx(99, abs=0.5)  # FSDP alone: 850


def test_example_10_every_split_of_16x16x16_is_comm_bound_below_4_06e5(capsys, tmp_path):
    layer = _model_file(tmp_path, 8192, 32_768)
    e = estimate(capsys, "--model-file", layer, "--mesh", "16x16x16", "--batch", "5e5",
                 "--mfu", "0.4", "--strategy", "fsdp+tp")  # fmt: skip
    assert (e["layout"]["X"], e["layout"]["Y"]) == (512, 8)
    # the first split to cross, above the chapter's bound N·α²/(2F) ≈ 4.06e5
    assert e["crossover_batch_tokens"] == pytest.approx(4.35e5, rel=0.005)


def test_examples_12_and_13_llama_3_70b_at_2m_tokens(capsys):
    # 2M tokens over 3-axis FSDP: about 2,350 chips; FSDP + TP: about 108 tokens a chip.
    fsdp = estimate(capsys, "--model", "llama-3-70b", "--mesh", "16x20x28", "--batch", "2e6",
                    "--strategy", "fsdp", "--mfu", "0.4")  # fmt: skip
    assert 2e6 / fsdp["critical_tokens_per_chip"] == pytest.approx(2_350, rel=0.01)
    # On two pods, 1M tokens a pod, 111 a chip: DCN is fine.
    two = estimate(capsys, "--model", "llama-3-70b", "--mesh", "16x20x28", "--batch", "2e6",
                   "--pods", "2", "--mfu", "0.4")  # fmt: skip
    assert two["tokens_per_chip"] == pytest.approx(111, abs=1)
    assert two["tokens_per_pod"] >= two["critical_tokens_per_pod"]
