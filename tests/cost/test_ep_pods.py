"""EP across pods (MODEL.md §B.12): EP chips of the data axis in each of the E pods an expert
group spans, EP·E in all splitting the routed experts, the copies bound for other pods crossing
the data-center network; every pod still a data replica; as MaxText's dcn_expert_parallelism
runs it."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets import fields
from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate
from scaling_widgets.cost.transformer.experts import all_to_all_seconds
from scaling_widgets.fields.mend import mended
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS

# Mixtral 8x7B on eight v5p-512 slices (4x8x8, 256 chips each), 8M tokens of 4K
EIGHT_SLICES = dict(
    model=MODELS["mixtral-8x7b"], chip=HARDWARE["tpu-v5p"], slice_shape=(4, 8, 8), pods=8,
    batch=2**23, seq_len=4096, strategy="fsdp", zero=1, remat="full",
)  # fmt: skip


def experts(ep, ep_pods, **kw):
    return estimate(**{**EIGHT_SLICES, **kw}, ep=ep, ep_pods=ep_pods)


def test_an_ep_group_across_pods_splits_the_experts_as_one_of_its_size_inside_a_pod():
    inside, across = experts(8, 1), experts(4, 2)
    # ZeRO-1 leaves the weights whole on X: each chip holds one of the 8 experts either way
    assert float(across.peak.weights) == pytest.approx(float(inside.peak.weights))
    assert int(across.pods) == int(inside.pods) == 8  # every pod a replica of the rest
    assert float(across.tokens_per_chip) == float(inside.tokens_per_chip)


def test_the_copies_bound_for_other_pods_leave_on_each_chips_dcn_link():
    chip, model = HARDWARE["tpu-v5p"], MODELS["mixtral-8x7b"]
    k, copy = model.moe.top_k * model.padding, model.d_model * 2.0
    # one chip of the group in each of 8 pods: 7 of every 8 copies cross DCN
    alone = all_to_all_seconds(chip=chip, model=model, ep=8, pods=8)
    assert float(alone) == pytest.approx(k * copy * 7 / 8 / chip.dcn_bw)
    inside, across = experts(8, 1), experts(4, 2)
    assert float(across.step_breakdown["ep_exposed"]) > 10 * float(
        inside.step_breakdown["ep_exposed"]
    )
    assert str(across.bottleneck) == "ep"


def test_refusals_name_the_field_and_what_would_run():
    with pytest.raises(ValueError, match="ep_pods must be 1 for a dense model"):
        estimate(**{**EIGHT_SLICES, "model": MODELS["llama-3-8b"]}, ep_pods=2)
    with pytest.raises(ValueError, match="ep_pods must be a count of pods whose EP groups"):
        experts(4, 4)  # 16 chips for 8 experts
    with pytest.raises(ValueError, match="ep_pods must be a count of pods dividing the 8 pods"):
        experts(2, 3)
    with pytest.raises(ValueError, match="ep_pods must be 1 with TP across pods"):
        experts(2, 2, strategy="fsdp+tp", x=128, y=2, tp_pods=2)
    with pytest.raises(ValueError, match="ep_pods must be 1 with EP folded over TP"):
        experts(2, 2, strategy="fsdp+tp", x=128, y=2, etp=1)


def test_maxtext_reads_and_writes_an_expert_axis_across_slices():
    e = experts(4, 2)
    text = write_config("maxtext", e)
    assert "dcn_expert_parallelism: 2" in text and "ici_expert_parallelism: 4" in text
    assert "dcn_data_parallelism: 4" in text
    got, _ = read_config(text, chip=e.chip, chips=2048, pods=8, framework="maxtext")
    assert (got["ep"], got["ep_pods"], got["pods"]) == (4, 2, 8)
    back = evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))
    assert float(back.step_breakdown["ep_exposed"]) == pytest.approx(
        float(e.step_breakdown["ep_exposed"])
    )
    assert "--expert-model-parallel-size 8" in write_config("megatron", e)  # the whole group


def test_the_command_line_takes_the_flag_and_its_json_gives_a_pods_group(capsys):
    args = ["estimate", "--model", "mixtral-8x7b", "--mesh", "v5p-512", "--pods", "8", "--ep",
            "4", "--batch", "8M", "--seq-len", "4k", "--strategy", "fsdp"]  # fmt: skip
    assert main([*args, "--ep-pods", "2"]) == 0
    out = capsys.readouterr().out
    assert "EP 8 across 2 pods over DCN, 4 chips in each" in out
    assert main([*args, "--ep-pods", "2", "--json"]) == 0
    layout = json.loads(capsys.readouterr().out)["layout"]
    assert (layout["EP"], layout["ep_pods"], layout["P"]) == (4, 2, 8)  # as the flags give them
    with pytest.raises(SystemExit) as stop:
        main([*args, "--ep-pods", "3"])
    assert stop.value.code == 2


def test_a_change_of_model_or_pods_keeps_the_scenario_runnable():
    state = {**fields.defaults(), "model": "mixtral-8x7b", "hardware": "tpu-v5p",
             "slice_shape": (4, 8, 8), "pods": 8, "strategy": "fsdp", "ep": 2, "ep_pods": 4,
             "batch": 2**23, "seq_len": 4096}  # fmt: skip
    changes, said = mended(state, {"pods": 6})
    assert changes["ep_pods"] == 2 and said.startswith("EP across 2 pods, the most up to 4")
    changes, _ = mended(state, {"model": "llama-3-8b"})
    assert (changes["ep"], changes["ep_pods"]) == (1, 1)
    changes, said = mended(state, {"hardware": "h100"})  # no groups across pods on GPUs
    assert changes["ep_pods"] == 1 and "EP inside each cluster" in said


@settings(max_examples=60, deadline=None)
@given(
    pods=st.sampled_from([1, 2, 3, 4, 8]),
    spans=st.sampled_from([1, 2, 3, 4, 8]),
    ep=st.sampled_from([1, 2, 4, 8]),
)
def test_any_ep_group_across_pods_is_priced_whole_or_refused_by_name(pods, spans, ep):
    try:
        e = estimate(model=MODELS["mixtral-8x7b"], chip=HARDWARE["tpu-v5e"], slice_shape=(16, 16),
                     pods=pods, ep=ep, ep_pods=spans, batch=2**22, seq_len=4096,
                     strategy="fsdp")  # fmt: skip
    except ValueError as refused:
        assert str(refused).startswith(("ep_pods must be", "ep must be"))
        return
    assert int(e.chips) == 256 * pods and int(e.pods) == pods
    assert 0 < float(e.step_time) < float("inf") and 0 < float(e.peak.reserved) < float("inf")
