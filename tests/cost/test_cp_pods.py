"""CP across pods (MODEL.md §B.13): CP chips of the data axis in each of the C pods a context
group spans, CP·C in all splitting each sequence, the keys and values crossing the data-center
network; every pod still a data replica of the weights; as MaxText's dcn_context_parallelism
runs it (a ring or an all-gather, not Ulysses)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import fields
from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate
from scaling_widgets.cost.transformer.context import cp_bandwidth
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS

# LLaMA-3 8B on eight v5p-512 slices (4x8x8, 256 chips each), 64M tokens of 128K
EIGHT_SLICES = dict(
    model=MODELS["llama-3-8b"], chip=HARDWARE["tpu-v5p"], slice_shape=(4, 8, 8), pods=8,
    batch=2**26, seq_len=2**17, strategy="fsdp", remat="full",
)  # fmt: skip


def context(cp, cp_pods, **kw):
    return estimate(**{**EIGHT_SLICES, **kw}, cp=cp, cp_pods=cp_pods)


def test_a_cp_group_across_pods_splits_each_sequence_as_one_of_its_size_inside_a_pod():
    inside, across = context(8, 1), context(4, 2)
    assert int(across.layout.cp) == int(inside.layout.cp) == 8  # the group, in all its pods
    assert int(across.pods) == int(inside.pods) == 8  # every pod a replica of the weights
    assert float(across.peak.activations) == pytest.approx(float(inside.peak.activations))
    assert float(across.peak.reserved) == pytest.approx(float(inside.peak.reserved))


def test_the_ring_across_pods_steps_at_one_chips_dcn_link_and_the_gather_at_a_pods():
    chip = HARDWARE["tpu-v5p"]
    ring = cp_bandwidth(chip=chip, cp=8, x=256, mx=3, pods=2)
    gather = cp_bandwidth(chip=chip, cp=8, x=256, mx=3, pods=2, kind="all-gather")
    assert (float(ring), float(gather)) == (chip.dcn_bw, 4 * chip.dcn_bw)
    inside, across = context(8, 1), context(4, 2)
    assert float(inside.step_breakdown["cp_exposed"]) == 0.0  # hidden under the attention
    assert float(across.step_breakdown["cp_exposed"]) > 0.3 * float(across.step_time)
    gathered = context(4, 2, cp_kind="all-gather")
    assert float(gathered.step_breakdown["cp_exposed"]) < float(across.step_breakdown["cp_exposed"])


def test_refusals_name_the_field_and_what_would_run():
    with pytest.raises(ValueError, match="cp must be given with cp_pods > 1"):
        estimate(**EIGHT_SLICES, cp_pods=2)
    with pytest.raises(ValueError, match="cp_kind must be 'ring' or 'all-gather' across pods"):
        context(4, 2, cp_kind="ulysses")
    with pytest.raises(ValueError, match="cp_pods must be a count of pods dividing the 8 pods"):
        context(4, 3)
    with pytest.raises(ValueError, match="cp_pods must be 1 with TP across pods"):
        context(4, 2, strategy="fsdp+tp", x=128, y=2, tp_pods=2)
    with pytest.raises(ValueError, match="cp_pods must be 1 on GPUs"):
        estimate(**{**EIGHT_SLICES, "chip": HARDWARE["h100"], "slice_shape": (32, 8)}, cp=4,
                 cp_pods=2)  # fmt: skip


def test_maxtext_reads_and_writes_a_context_axis_across_slices():
    e = context(4, 2)
    text = write_config("maxtext", e)
    assert "dcn_context_parallelism: 2" in text and "ici_context_parallelism: 4" in text
    assert "dcn_data_parallelism: 4" in text
    got, _ = read_config(text, chip=e.chip, chips=2048, pods=8, framework="maxtext")
    assert (got["cp"], got["cp_pods"], got["pods"]) == (4, 2, 8)
    back = evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))
    assert float(back.step_breakdown["cp_exposed"]) == pytest.approx(
        float(e.step_breakdown["cp_exposed"])
    )
    assert "--context-parallel-size 8" in write_config("megatron", e)  # the whole group
    usp = text.replace("dcn_context_parallelism", "dcn_context_usp_ulysses_parallelism")
    with pytest.raises(ValueError, match="^dcn_context_usp_ulysses_parallelism must be 1 across"):
        read_config(usp, chip=e.chip, chips=2048, pods=8, framework="maxtext")


def test_the_command_line_takes_the_flag_and_its_json_gives_a_pods_group(capsys):
    args = ["estimate", "--model", "llama-3-8b", "--mesh", "v5p-512", "--pods", "8", "--cp",
            "4", "--batch", "64M", "--seq-len", "128k", "--strategy", "fsdp"]  # fmt: skip
    assert main([*args, "--cp-pods", "2"]) == 0
    out = capsys.readouterr().out
    assert "CP 8 across 2 pods over DCN, 4 chips in each" in out
    assert "split over 8 chips in 2 pods" in out and "not hidden" in out
    assert main([*args, "--cp-pods", "2", "--json"]) == 0
    layout = json.loads(capsys.readouterr().out)["layout"]
    assert (layout["CP"], layout["cp_pods"], layout["P"]) == (4, 2, 8)  # as the flags give them


@settings(max_examples=60, deadline=None)
@given(
    pods=st.sampled_from([1, 2, 3, 4, 8]),
    spans=st.sampled_from([1, 2, 3, 4, 8]),
    cp=st.sampled_from([1, 2, 4, 8]),
)
def test_any_cp_group_across_pods_is_priced_whole_or_refused_by_name(pods, spans, cp):
    try:
        e = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["tpu-v5e"], slice_shape=(16, 16),
                     pods=pods, cp=cp, cp_pods=spans, batch=2**24, seq_len=2**15,
                     strategy="fsdp")  # fmt: skip
    except ValueError as refused:
        assert str(refused).startswith(("cp_pods must be", "cp must be", "batch must be"))
        return
    assert int(e.chips) == 256 * pods and int(e.pods) == pods and int(e.layout.cp) == cp * spans
    assert 0 < float(e.step_time) < float("inf") and 0 < float(e.peak.reserved) < float("inf")


def test_the_split_chosen_for_you_counts_the_cp_group_in_all_its_pods():
    # 64 sequences of 128K over 8 pods: each group of CP 8 (4 in each of 2 pods) has two
    # sequences at X = 8, which the fastest split takes
    chosen = context(4, 2, strategy="fsdp+tp", batch=2**23, z=2)
    assert (int(chosen.x), int(chosen.y)) == (8, 16)
    by_hand = context(4, 2, strategy="fsdp+tp", batch=2**23, z=2, x=8, y=16)
    assert float(chosen.step_time) == pytest.approx(float(by_hand.step_time))


def test_maxtext_keeps_the_experts_axis_beside_a_context_axis_across_slices():
    e = estimate(model=MODELS["mixtral-8x7b"], chip=HARDWARE["tpu-v5p"], slice_shape=(4, 8, 8),
                 pods=8, batch=2**26, seq_len=2**15, strategy="fsdp+tp", x=16, y=16, ep=8, cp=2,
                 cp_pods=4)  # fmt: skip
    text = write_config("maxtext", e)
    assert "ici_expert_parallelism: 8" in text and "written as EP" not in text
