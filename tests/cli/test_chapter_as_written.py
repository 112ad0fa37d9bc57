"""The chapter's worked examples and the book's Part 6 through the command line, typed as the book
states them: a batch in tokens, sequences of the book's length or the CLI's default, and no flag
the book does not name. Where a data replica would get less than a whole sequence, the tool splits
each sequence over chips (context parallelism) and says so; the chapter's numbers stand."""

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
    one_axis = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x1x1", "--batch", "1M",
                        "--strategy", "dp")  # fmt: skip
    assert one_axis["critical_tokens_per_chip"] == 2550
    pod = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x20x28", "--batch", "8M",
                   "--strategy", "dp")  # fmt: skip
    assert pod["critical_tokens_per_chip"] == 850
    assert pod["critical_tokens_per_chip"] * pod["chips"] == pytest.approx(7.6e6, rel=0.01)


def test_example_11_across_pods_each_pod_needs_73440_tokens(capsys):
    two = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "3M",
                   "--pods", "2")  # fmt: skip
    assert two["critical_tokens_per_pod"] == 73_440


def test_examples_14_and_15_llama_2_13b_parameters_optimizer_and_checkpoints(capsys):
    dp = estimate(capsys, "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "16M",
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
    args = ["--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "3M", "--seq-len", "32k",
            "--mfu", "0.4"]  # fmt: skip
    e = estimate(capsys, *args)
    assert (e["layout"]["X"], e["layout"]["Y"]) == (1024, 4)
    assert e["seq_len"] == 32768 and e["layout"]["CP"] == 16  # 12 replicas' worth of CP chips
    assert e["compute_bound"] is True and e["tokens_per_chip"] == pytest.approx(732, abs=0.5)
    assert e["step_time_s"] == pytest.approx(0.3, abs=0.015)
    assert e["strategies"]["dp"]["fits"] is False  # 130 GB > 96 GB
    assert e["strategies"]["fsdp"]["compute_bound"] is False  # needs 850·4096 = 3.48M > 3M
    # The report says what it chose, in one line.
    assert main(["estimate", "--hardware", "tpu-v5p", *args]) == 0
    report = capsys.readouterr().out
    assert "each sequence of 32768 split over 16 chips (context parallelism, chosen for you:" in (
        report
    )
    assert "3M tokens give 0.089 sequences per data replica" in report


def test_cp_1_asked_for_keeps_the_refusal_naming_what_would_run(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*V5P, "--model", "llama-2-13b", "--mesh", "16x16x16", "--batch", "3M",
              "--seq-len", "32k", "--cp", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--batch must be at least" in err and "--cp" in err


def test_part_6_llama_3_70b_on_a_v5p_pod_and_the_worked_problems(capsys):
    common = ["--model", "llama-3-70b", "--mesh", "16x20x28", "--batch", "4194304", "--mfu",
              "0.4", "--tokens", "15T"]  # fmt: skip
    pod = estimate(capsys, *common)
    # "a mixture of data parallelism (1024-way), sequence parallelism (2-way), and tensor
    # parallelism (4-way)": on the real pod, 2240 x TP 4 with each sequence over 4 chips.
    assert (pod["layout"]["Y"], pod["layout"]["CP"]) == (4, 4)
    assert pod["training_time_s"] / 86400 == pytest.approx(44, rel=0.02)  # "about 44 days"
    four = estimate(capsys, *common, "--pods", "4")  # Question 1: about 11 days
    assert four["training_time_s"] / 86400 == pytest.approx(11, rel=0.05)
    eight = estimate(capsys, *common, "--model", "llama-3-405b", "--pods", "8")  # the last wins
    assert eight["params"] == pytest.approx(406e9, rel=0.003)  # Question 2
    assert eight["training_time_s"] / 86400 > 32  # 32 days of compute, and the exposed traffic
