"""A pipeline across pods (MODEL.md §B.10): Z stages in each of the S pods a pipeline spans,
Z·S in all, the activations crossing the data-center network between pods, the P/S groups of
pods replicas; as MaxText's dcn_pipeline_parallelism runs it."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import fields
from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate, plan
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS

# LLaMA-3 70B on four v5p-512 slices (4x8x8, 256 chips each), 8M tokens of 8K
FOUR_SLICES = dict(
    model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], slice_shape=(4, 8, 8), pods=4,
    batch=2**23, seq_len=8192, strategy="fsdp", zero=1, microbatches=8,
)  # fmt: skip


def pipeline(z, pp_pods, **kw):
    return estimate(**{**FOUR_SLICES, **kw}, z=z, pp_pods=pp_pods)


def test_a_pipeline_across_two_pods_holds_what_one_of_as_many_stages_in_a_pod_holds():
    inside, across = pipeline(4, 1), pipeline(2, 2)
    assert int(across.z) == int(inside.z) == 4  # the stages in all
    assert int(across.chips) == int(inside.chips) == 1024
    assert int(inside.pods) == 4 and int(across.pods) == 2  # the data replicas over DCN
    # each chip holds a quarter of the layers either way; a stage has twice the chips across two
    # pods (X = 128, not 64), so ZeRO-1 shards the optimizer's state twice as thin
    for part in ("weights", "grads"):
        assert float(getattr(across.peak, part)) == pytest.approx(float(getattr(inside.peak, part)))
    assert float(across.peak.optimizer) == pytest.approx(float(inside.peak.optimizer) / 2)
    assert float(across.bubble) == pytest.approx(float(inside.bubble))


def test_the_activations_between_pods_cross_the_data_center_network():
    inside, across = pipeline(4, 1), pipeline(2, 2)
    chip, model = HARDWARE["tpu-v5p"], MODELS["llama-3-70b"]
    # a microbatch's [b, D] activations, forward and back, at the slowest link: DCN's, not ICI's
    m, b = 8, 2**23 / (128 * 2 * 8)  # a microbatch's tokens on each of X = 128 of 2 replicas
    sends = 2 * 2 * b * model.d_model / chip.dcn_bw
    assert float(across.step_breakdown["stage_to_stage"]) == pytest.approx(m * sends)
    ratio = float(across.step_breakdown["stage_to_stage"]) / float(
        inside.step_breakdown["stage_to_stage"]
    )
    assert ratio == pytest.approx(chip.ici_bw / chip.dcn_bw)  # the same sends, on DCN's link
    # no gradients cross it when one pipeline spans every pod
    whole = estimate(**{**FOUR_SLICES}, z=1, pp_pods=4)
    assert int(whole.pods) == 1 and float(whole.step_breakdown["dcn_exposed"]) == 0.0


def test_pods_that_do_not_divide_or_beside_fsdp_across_pods_are_refused_by_name():
    with pytest.raises(ValueError, match="pp_pods must be a count of pods dividing the 4 pods"):
        pipeline(2, 3)
    with pytest.raises(ValueError, match="pp_pods must be 1 with FSDP across pods"):
        pipeline(2, 2, zero=3, fsdp_pods=2)


def test_the_plan_searches_pipelines_across_pods_and_its_rows_are_estimates_own():
    where = {k: FOUR_SLICES[k] for k in ("model", "chip", "slice_shape", "pods", "batch")}
    ranked = plan(**where, seq_len=8192)
    spans = [ranked.layout(r)["pp_pods"] for r in range(len(ranked))]
    assert {1, 2, 4} <= set(spans)  # inside a pod, and across 2 or all 4 of them
    rank = spans.index(2)
    row = ranked.layout(rank)
    assert row["fsdp_pods"] == 1  # one of the two spans pods
    knobs = ("x", "y", "z", "zero", "microbatches", "remat", "schedule", "virtual_stages")
    typed = {k: row[k] for k in (*knobs, "pp_pods", "slice_shape")}
    again = estimate(**{**where, **typed}, seq_len=8192)
    assert float(again.step_time) == pytest.approx(float(ranked.estimate(rank).step_time))


def test_maxtext_reads_and_writes_a_pipeline_across_slices():
    e = pipeline(2, 2)
    text = write_config("maxtext", e)
    assert "dcn_pipeline_parallelism: 2" in text and "ici_pipeline_parallelism: 2" in text
    assert "dcn_data_parallelism: 2" in text
    got, _ = read_config(text, chip=e.chip, chips=1024, pods=4, framework="maxtext")
    assert (got["z"], got["pp_pods"], got["pods"], got["x"]) == (2, 2, 4, 128)
    back = evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))
    assert int(back.z) == 4 and int(back.chips) == 1024
    assert float(back.step_breakdown["stage_to_stage"]) == pytest.approx(
        float(e.step_breakdown["stage_to_stage"])
    )


def test_the_command_line_takes_the_flag_and_says_where_the_stages_are(capsys):
    args = ["estimate", "--model", "llama-3-70b", "--mesh", "v5p-512", "--pods", "4", "--pp",
            "2", "--batch", "8M", "--seq-len", "8k", "--strategy", "fsdp"]  # fmt: skip
    assert main([*args, "--pp-pods", "2"]) == 0
    out = capsys.readouterr().out
    assert "x 4 pods = 1,024 chips" in out
    assert "PP across 2 pods over DCN, 2 stages in each" in out
    with pytest.raises(SystemExit) as stop:
        main([*args, "--pp-pods", "3"])
    assert stop.value.code == 2
    assert "--pp-pods must be a count of pods dividing the 4 pods" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(
    pods=st.sampled_from([1, 2, 3, 4, 8]),
    spans=st.sampled_from([1, 2, 3, 4, 8]),
    z=st.sampled_from([1, 2, 4]),
)
def test_any_pipeline_across_pods_is_priced_whole_or_refused_by_name(pods, spans, z):
    try:
        e = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["tpu-v5e"], slice_shape=(16, 16),
                     pods=pods, z=z, pp_pods=spans, batch=2**22, seq_len=4096,
                     strategy="fsdp", zero=1)  # fmt: skip
    except ValueError as refused:
        assert pods % spans and str(refused).startswith("pp_pods must be a count of pods")
        return
    assert int(e.chips) == 256 * pods and int(e.pods) == pods // spans and int(e.z) == z * spans
    assert 0 < float(e.step_time) < float("inf") and 0 < float(e.peak.reserved) < float("inf")


def test_the_exported_maxtext_file_reads_back_on_the_same_pods_however_the_slice_is_given(
    capsys, tmp_path
):
    args = [
        "--model",
        "llama-3-70b",
        "--mesh",
        "v5p-512",
        "--pods",
        "4",
        "--pp",
        "2",
        "--pp-pods",
        "2",
        "--batch",
        "8M",
        "--seq-len",
        "8k",
        "--strategy",
        "fsdp",
        "--remat",
        "minimal",
        "--schedule",
        "gpipe",
    ]  # fmt: skip  (what MaxText writes)
    assert main(["estimate", *args, "--json"]) == 0
    typed = json.loads(capsys.readouterr().out)
    assert main(["export", "--to", "maxtext", *args]) == 0
    path = tmp_path / "train.yml"
    path.write_text(capsys.readouterr().out)
    # a pod's slice by its name (which names the chip), or by its chips: 4 pods of 256 either way
    for where in (["--mesh", "v5p-512"], ["--hardware", "tpu-v5p", "--chips", "256"]):
        assert main(["estimate", "--config", str(path), *where, "--pods", "4", "--json"]) == 0
        read = json.loads(capsys.readouterr().out)
        assert read["chips"] == 1024 and read["layout"]["pp_pods"] == 2
        assert read["step_time_s"] == pytest.approx(typed["step_time_s"], rel=1e-9)


def test_the_roofline_and_the_panels_groups_count_the_replicas_and_a_pods_stages():
    from scaling_widgets.cost.views.curves import roofline
    from scaling_widgets.cost.views.groups import mesh
    from scaling_widgets.text import views as words

    e = pipeline(2, 2, strategy="fsdp+tp", x=32, y=4)
    curves = roofline(e)
    # the current layout's curve crosses where its own estimate turns compute-bound
    assert curves.crossover["fsdp+tp"] == pytest.approx(float(e.crossover_batch))
    assert (
        curves.pods == 2 and words.roofline(curves, e).labels["dcn"] == "DCN (2 replicas of 2 pods)"
    )
    groups = mesh(e)
    assert (groups.z, groups.stages, groups.pods, groups.chips) == (2, 4, 4, 1024)
    assert (32, 4) in groups.splits  # the splits of a stage's 128 chips in a pod


def test_max_pp_caps_the_stages_of_a_pipeline_across_pods_too():
    where = {k: FOUR_SLICES[k] for k in ("model", "chip", "slice_shape", "pods", "batch")}
    ranked = plan(**where, seq_len=8192, max_pp=1)
    rows = [ranked.layout(r) for r in range(len(ranked))]
    assert rows and all(row["z"] * row["pp_pods"] == 1 for row in rows)
