"""TP across pods (MODEL.md §B.11): Y chips of a TP group in each of the T pods it spans, Y·T
in all, its gathers and scatters crossing the data-center network every layer, the P/T groups of
pods replicas; as MaxText's dcn_tensor_parallelism runs it ("never recommended")."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import fields
from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS

# LLaMA-3 70B on four v5p-512 slices (4x8x8, 256 chips each), 8M tokens of 8K
FOUR_SLICES = dict(
    model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], slice_shape=(4, 8, 8), pods=4,
    batch=2**23, seq_len=8192, strategy="fsdp+tp", remat="full",
)  # fmt: skip


def tp(y, tp_pods, **kw):
    return estimate(**{**FOUR_SLICES, **kw}, x=256 // y, y=y, tp_pods=tp_pods)


def test_tp_across_two_pods_holds_what_as_large_a_tp_group_inside_a_pod_holds():
    inside, across = tp(8, 1), tp(4, 2)
    assert int(across.y) == int(inside.y) == 8  # the TP group, in all its pods
    assert int(across.chips) == int(inside.chips) == 1024
    assert int(inside.pods) == 4 and int(across.pods) == 2  # the data replicas over DCN
    # a chip's tokens are the same (B/(X·Y·P) with X = 64, Y = 8, P = 2 against 32, 8, 4); TP 8
    # shards the weights alike, and the FSDP group over X = 64 of a pod shards the states twice
    # as thin as one of X = 32
    assert float(across.tokens_per_chip) == float(inside.tokens_per_chip)
    assert float(across.peak.activations) == pytest.approx(float(inside.peak.activations))
    assert float(across.peak.optimizer) == pytest.approx(float(inside.peak.optimizer) / 2)


def test_tp_traffic_between_pods_rides_each_pods_chips_links_of_the_data_center_network():
    across, chip, model = tp(1, 4), HARDWARE["tpu-v5p"], MODELS["llama-3-70b"]
    # one TP group of 4 chips, one in each pod: nothing on ICI, everything on DCN
    assert float(across.layer.t_comms_y) == 0.0 and int(across.pods) == 1
    # the chapter's TP bytes a chip forward, 4·D·B/X of the one replica's batch, at one chip's
    # W_dcn (no gradients cross: one replica)
    forward = 4 * model.d_model * 2**23 / 256 / chip.dcn_bw
    assert float(across.layer.dcn[0]) == pytest.approx(forward)
    assert str(across.bottleneck) == "dcn"


def test_tp_across_pods_is_slower_than_tp_inside_one_as_maxtext_warns():
    inside, across = tp(8, 1), tp(4, 2)
    assert float(across.step_time) > 2 * float(inside.step_time)
    assert float(across.step_breakdown["tp_exposed"]) > 5 * float(
        inside.step_breakdown["tp_exposed"]
    )
    assert float(across.tp_limit) < float(inside.tp_limit)  # M_Y: the pod's DCN links, not ICI


def test_pods_that_do_not_divide_beside_another_span_or_without_tp_are_refused_by_name():
    with pytest.raises(ValueError, match="tp_pods must be a count of pods dividing the 4 pods"):
        tp(4, 3)
    with pytest.raises(ValueError, match="tp_pods must be 1 with a pipeline across pods"):
        tp(4, 2, z=2, pp_pods=2)
    with pytest.raises(ValueError, match="tp_pods must be 1 for strategy 'fsdp'"):
        estimate(**{**FOUR_SLICES, "strategy": "fsdp"}, tp_pods=2)


def test_the_split_chosen_for_you_counts_the_group_in_all_its_pods():
    e = estimate(**FOUR_SLICES, tp_pods=2)  # no x or y: the fastest legal split, Y in each pod
    assert int(e.x) * int(e.y) == 256 * 2 and int(e.y) % 2 == 0
    assert MODELS["llama-3-70b"].heads % int(e.y) == 0  # the heads divide TP in all its pods


def test_maxtext_reads_and_writes_tp_across_slices():
    e = tp(4, 2)
    text = write_config("maxtext", e)
    assert "dcn_tensor_parallelism: 2" in text and "ici_tensor_parallelism: 4" in text
    assert "dcn_data_parallelism: 2" in text
    got, _ = read_config(text, chip=e.chip, chips=1024, pods=4, framework="maxtext")
    assert (got["y"], got["tp_pods"], got["pods"], got["x"]) == (4, 2, 4, 64)
    back = evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))
    assert int(back.y) == 8 and int(back.chips) == 1024
    assert float(back.step_breakdown["tp_exposed"]) == pytest.approx(
        float(e.step_breakdown["tp_exposed"])
    )
    # TP's second axis across slices is TP's too
    sequence = text.replace("dcn_tensor_parallelism", "dcn_tensor_sequence_parallelism")
    again, _ = read_config(sequence, chip=e.chip, chips=1024, pods=4, framework="maxtext")
    assert (again["y"], again["tp_pods"]) == (4, 2)


def test_the_command_line_takes_the_flag_and_its_json_gives_a_pods_group(capsys):
    args = ["estimate", "--model", "llama-3-70b", "--mesh", "v5p-512", "--pods", "4", "--tp",
            "4", "--batch", "8M", "--seq-len", "8k", "--strategy", "fsdp+tp"]  # fmt: skip
    args += ["--remat", "full"]
    assert main([*args, "--tp-pods", "2"]) == 0
    out = capsys.readouterr().out
    assert "TP across 2 pods over DCN, 4 chips in each" in out
    assert "TP spans 2 pods, 4 chips in each" in out
    assert main([*args, "--tp-pods", "2", "--json"]) == 0
    layout = json.loads(capsys.readouterr().out)["layout"]
    assert (layout["Y"], layout["tp_pods"], layout["P"]) == (4, 2, 4)  # as the flags give them
    with pytest.raises(SystemExit) as stop:
        main([*args, "--tp-pods", "3"])
    assert stop.value.code == 2
    assert "--tp-pods must be a count of pods dividing the 4 pods" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(
    pods=st.sampled_from([1, 2, 3, 4, 8]),
    spans=st.sampled_from([1, 2, 3, 4, 8]),
    y=st.sampled_from([1, 2, 4]),
)
def test_any_tp_group_across_pods_is_priced_whole_or_refused_by_name(pods, spans, y):
    try:
        e = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["tpu-v5e"], slice_shape=(16, 16),
                     pods=pods, x=256 // y, y=y, tp_pods=spans, batch=2**22, seq_len=4096,
                     strategy="fsdp+tp")  # fmt: skip
    except ValueError as refused:
        why = str(refused)
        assert why.startswith("tp_pods must be a count of pods") or why.startswith("y must be")
        return
    assert int(e.chips) == 256 * pods and int(e.pods) == pods // spans and int(e.y) == y * spans
    assert 0 < float(e.step_time) < float("inf") and 0 < float(e.peak.reserved) < float("inf")


def test_the_roofline_draws_tps_traffic_on_dcn_and_the_panels_groups_are_a_pods():
    from scaling_widgets.cost.views.curves import roofline
    from scaling_widgets.cost.views.groups import mesh
    from scaling_widgets.text import views as words

    e = tp(1, 4)  # one group across every pod: no gradients cross, TP's traffic does
    curves = roofline(e)
    assert "dcn" in curves.comm and curves.crossover["dcn"] == float("inf")
    assert words.roofline(curves, e).labels["dcn"] == "DCN (TP across 4 pods)"
    assert curves.crossover["fsdp+tp"] == pytest.approx(float(e.crossover_batch))
    groups = mesh(tp(4, 2))
    assert (groups.x, groups.y, groups.pods, groups.chips) == (64, 4, 4, 1024)
    assert (64, 4) in groups.splits  # the splits of a pod's 256 chips
