"""Megatron-LM's combined 1F1B, a layout's ``ep_overlap`` (MODEL.md §B.6): one microbatch's forward
run with another's backward, whose compute hides the expert all-to-alls; the pairs it runs, what
hides, the memory it keeps, and the configurations Megatron-LM refuses with it."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate, plan
from scaling_widgets.cost.schedules import bubble, combined_share
from scaling_widgets.cost.step.timeline import timeline
from scaling_widgets.presets import HARDWARE, MODELS
from scaling_widgets.widgets.scenario import Scenario

# Mixtral 8x7B on 64 H100s, EP 8 inside a node, as Megatron-LM runs it
MIXTRAL = dict(model=MODELS["mixtral-8x7b"], chip=HARDWARE["h100"], batch=1024 * 4096,
               seq_len=4096, slice_shape=(8, 8), strategy="dp", y=1, zero=1, ep=8,
               remat="selective", stack="megatron-lm")  # fmt: skip
ONE_STAGE = dict(x=64, z=1, microbatches=16)
FOUR_STAGES = dict(x=16, z=4, microbatches=64, schedule="interleaved", virtual_stages=2)


@settings(max_examples=30, deadline=None)
@given(stages=st.sampled_from([2, 4, 8]), groups=st.integers(1, 4), v=st.sampled_from([2, 3, 4]))
def test_the_pairs_the_first_device_runs_are_the_share_charged(stages, groups, v):
    m = stages * groups
    pictured = timeline(schedule="interleaved", stages=stages, microbatches=m, virtual_stages=v,
                        combined=True)  # fmt: skip
    first = (pictured.device == 0) & (pictured.kind == "F")
    share = float(combined_share(stages=stages, microbatches=m, virtual_stages=v))
    assert share == pytest.approx(pictured.paired[first].mean())
    # pairing leaves the interleaved schedule's bubble as it was
    charged = float(bubble(schedule="interleaved", stages=stages, microbatches=m, virtual_stages=v))
    assert pictured.bubble == pytest.approx(charged)


def test_one_stage_pairs_all_but_the_first_forward():
    # combined_1f1b_schedule_for_no_pipelining: the first forward alone, then m - 1 pairs
    assert combined_share(stages=1, microbatches=[1, 2, 16]).tolist() == [0.0, 0.5, 15 / 16]


@pytest.mark.parametrize("layout", [ONE_STAGE, FOUR_STAGES], ids=["one stage", "interleaved"])
def test_what_hides_comes_off_the_all_to_all_and_the_memory_stays(layout):
    plain = estimate(**MIXTRAL, **layout)
    paired = estimate(**MIXTRAL, **layout, ep_overlap=True)
    traffic = float(plain.step_breakdown["ep_exposed"])
    hidden, left = float(paired.hidden["ep"]), float(paired.step_breakdown["ep_exposed"])
    assert float(plain.hidden["ep"]) == 0
    assert hidden + left == pytest.approx(traffic)
    # in a node the all-to-alls are shorter than the other pass's compute: the pairs hide all
    share = float(combined_share(stages=layout["z"], microbatches=layout["microbatches"],
                                 virtual_stages=layout.get("virtual_stages", 1)))  # fmt: skip
    assert hidden == pytest.approx(share * traffic)
    assert float(paired.step_time) == pytest.approx(float(plain.step_time) - hidden)
    # forward layer i runs beside backward layer n - 1 - i: the activations held stay level
    assert float(paired.peak.reserved) == float(plain.peak.reserved)


def test_the_context_parallel_exchange_is_not_paired():
    # the all-gather never hides under the attention: all of its exchange is there to pair
    e = estimate(**{**MIXTRAL, "batch": 256 * 4096}, **ONE_STAGE | {"microbatches": 4}, cp=2,
                 cp_kind="all-gather", ep_overlap=True)  # fmt: skip
    assert float(e.hidden["ep"]) > 0
    assert float(e.hidden["cp"]) == 0 and float(e.step_breakdown["cp_exposed"]) > 0


@pytest.mark.parametrize(
    "change, field, named",
    [
        (dict(stack="fsdp2"), "ep_overlap", "megatron-lm"),
        (dict(model=MODELS["llama-3-8b"], ep=1), "ep_overlap", "dense"),
        (dict(ep=1), "ep", "above 1"),
        (dict(remat="full"), "remat", "'selective'"),
        (dict(schedule="1f1b", virtual_stages=1), "schedule", "'interleaved'"),
        (dict(virtual_stages=1), "virtual_stages", "2 or more"),
    ],
)
def test_what_megatron_lm_refuses_with_it_is_refused_by_name(change, field, named):
    with pytest.raises(ValueError, match=rf"^{field} must .*{named}"):
        estimate(**{**MIXTRAL, **FOUR_STAGES, **change}, ep_overlap=True)


def test_the_planner_keeps_to_its_rules():
    keywords = dict(model=MODELS["mixtral-8x7b"], chip=HARDWARE["h100"], batch=2**22,
                    seq_len=4096, chips=256, stack="megatron-lm")  # fmt: skip
    paired, plain = plan(**keywords, ep_overlap=True), plan(**keywords)
    rows = [paired.layout(rank) for rank in range(len(paired))]
    assert rows and all(r["ep"] > 1 and r["remat"] != "full" for r in rows)
    assert all(r["schedule"] == "interleaved" and r["virtual_stages"] > 1
               for r in rows if r["z"] > 1)  # fmt: skip
    # its best runs faster paired than the same layout unpaired
    cluster, workload, layout, options = paired.values(0)
    assert layout.ep_overlap
    unpaired = evaluate(cluster, workload, dataclasses.replace(layout, ep_overlap=False), options)
    assert float(paired.step_time[paired.order[0]]) < float(unpaired.step_time)
    assert float(paired.step_time[paired.order[0]]) < float(plain.step_time[plain.order[0]])


def test_a_scenario_keeps_it_only_where_it_runs():
    s = Scenario(model="mixtral-8x7b", hardware="h100", batch=2**24, stack="megatron-lm", ep=8,
                 ep_overlap=True)  # fmt: skip
    assert Scenario.from_json(s.to_json()).ep_overlap is True
    s.update(stack="fsdp2")
    assert s.ep_overlap is False
    s.update(stack="megatron-lm", ep_overlap=True)
    s.update(model="llama-3-8b")  # a dense model: no experts, nothing to pair
    assert (s.ep, s.ep_overlap) == (1, False)


def test_the_command_line_says_what_its_pairs_hide(capsys):
    flags = ["--model", "mixtral-8x7b", "--hardware", "h100", "--chips", "64", "--batch", "4M",
             "--seq-len", "4096", "--stack", "megatron-lm", "--ep", "8", "--strategy", "dp",
             "--zero", "1", "--remat", "selective"]  # fmt: skip
    assert main(["estimate", *flags, "--ep-overlap"]) == 0
    out = capsys.readouterr().out
    assert "all-to-alls paired (combined 1F1B)" in out
    assert "combined 1F1B (ep_overlap)'s paired passes hide" in out
    with pytest.raises(SystemExit) as refused:
        main(["estimate", *flags, "--ep-overlap", "--pp", "4"])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--schedule must be 'interleaved'" in err
