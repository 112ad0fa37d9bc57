"""ZB-H2, ZBV, DualPipe and DualPipeV (MODEL.md §B.6): the papers' bubble and memory tables out of
the code, the passes each device runs against the formulas the estimate charges, the weights
DualPipe doubles, the expert traffic its pairs hide, and what each schedule needs."""

import itertools
import json

import pytest

from scaling_widgets.cost import estimate, evaluate
from scaling_widgets.cost.schedules import (
    SCHEDULES,
    bubble,
    in_flight_microbatches,
    paired_share,
    weight_copies,
)
from scaling_widgets.cost.step.timeline import timeline
from scaling_widgets.measured import SCHEDULE_RUNS, load_runs
from scaling_widgets.presets import HARDWARE, MODELS

# DeepSeek-V3's notation: a stage's forward F, its full backward B, the weights' part W, and F&B a
# forward and a backward run as a pair, as long as the two.
F, B, W = 1.0, 2.0, 1.0
F_AND_B = F + B
V_SHAPED = {"zbv": 2, "dualpipev": 2}


def held_activations(schedule: str, device: int, stages: int, microbatches: int) -> float:
    """The most microbatches (of the device's layers) whose activations a device holds at once,
    walking its passes: a forward adds a chunk's, its backward (B) frees them, a pair's forward
    before its backward. A W waiting for its turn keeps less, what the weights' gradients need
    (the papers' M_W < M_B), which the counts leave out as the papers do."""
    v = V_SHAPED.get(schedule, 1)
    order = SCHEDULES[schedule].passes(
        device=device, stages=stages, microbatches=microbatches, virtual_stages=v
    )
    held = most = 0.0
    for pair in (p if isinstance(p[0], tuple) else (p,) for p in order):
        held += sum(1 / v for kind, _, _ in pair if kind == "F")
        most = max(most, held)
        held -= sum(1 / v for kind, _, _ in pair if kind == "B")
    return most


@pytest.mark.parametrize("stages", [2, 4, 8])
@pytest.mark.parametrize("per_stage", [2, 4])
def test_deepseek_v3s_table_2_comes_out_of_the_code(stages, per_stage):
    # DeepSeek-V3 Table 2 (and the DualPipe README): bubble, parameters and activations per device
    m = stages * per_stage
    work = m * (F + B)
    rows = {
        "1f1b": ((stages - 1) * (F + B), 1, stages),
        "zb-h1": ((stages - 1) * (F + B - 2 * W), 1, stages),
        "dualpipe": ((stages / 2 - 1) * (F_AND_B + B - 3 * W), 2, stages + 1),
    }
    for name, (idle, parameters, activations) in rows.items():
        layout = dict(schedule=name, stages=stages, microbatches=m)
        assert float(bubble(**layout)) * work == pytest.approx(idle)
        assert timeline(**layout).bubble * work == pytest.approx(idle)  # the picture's too
        assert float(weight_copies(name)) == parameters
        assert float(in_flight_microbatches(**layout)) == activations
        assert held_activations(name, 0, stages, m) == activations


@pytest.mark.parametrize("stages", [2, 4, 8])
def test_dualpipev_is_dualpipe_on_half_the_devices_with_a_stage_of_weights(stages):
    # The DualPipe README's DualPipeV row counts its PP = 2Z chunks on Z devices: a chunk's F and
    # W half a device's forward, B a whole one; 2x the weights of a chunk, PP + 1 chunks' inputs.
    m, chunk = 4 * stages, dict(F=F / 2, B=B / 2, W=W / 2)
    layout = dict(schedule="dualpipev", stages=stages, microbatches=m, virtual_stages=2)
    idle = (2 * stages / 2 - 1) * (chunk["F"] + chunk["B"] + chunk["B"] - 3 * chunk["W"])
    assert float(bubble(**layout)) * m * (F + B) == pytest.approx(idle)
    assert timeline(**layout).bubble * m * (F + B) == pytest.approx(idle)
    chunks_held = (2 * stages + 1) / 2  # PP + 1 chunks, each half the device's layers
    assert float(in_flight_microbatches(**layout)) == chunks_held
    assert held_activations("dualpipev", 0, stages, m) == chunks_held
    assert float(weight_copies("dualpipev")) == 1  # 2 chunks of L/2Z layers: one stage's worth


@pytest.mark.parametrize("stages", [2, 4, 8])
def test_the_zero_bubble_papers_tables_come_out_of_the_code(stages):
    # Qi et al. 2024, Table 1 at T_F = T_B = T_W (their B the input's gradient alone): ZB-H1 idles
    # (p - 1)(T_F + T_B - T_W), ZB-H2 (p - 1)(T_F + T_B - 2T_W) = 0, at p and 2p - 1 microbatches'
    # memory. ZBV ("Pipeline Parallelism with Controllable Memory", V-ZB): zero at 1F1B's memory.
    # The zeros are the steady state of steps that overlap (the papers' post-validation); a step
    # that ends in a sync of every stage idles what its makespan shows.
    m = 3 * stages
    for name, idle, held in [("zb-h1", stages - 1, stages), ("zb-h2", 0, 2 * stages - 1),
                             ("zbv", 0, stages)]:  # fmt: skip
        layout = dict(schedule=name, stages=stages, microbatches=m,
                      virtual_stages=V_SHAPED.get(name, 1))  # fmt: skip
        pictured = timeline(**layout)
        assert pictured.steady_bubble * 3 * m == pytest.approx(idle, abs=1e-9)
        assert pictured.bubble == pytest.approx(float(bubble(**layout)))
        assert (
            float(in_flight_microbatches(**layout)) == held == held_activations(name, 0, stages, m)
        )
    # with the sync, ZB-H2 idles as ZB-H1 and ZBV half that: the last device starts late
    sync = {
        s: float(bubble(schedule=s, stages=stages, microbatches=m))
        for s in ("zb-h1", "zb-h2", "zbv")
    }
    assert (
        sync["zb-h2"] == sync["zb-h1"] == 2 * sync["zbv"] == pytest.approx((stages - 1) / (3 * m))
    )


@pytest.mark.parametrize("name", ["dualpipe", "dualpipev"])
@pytest.mark.parametrize("stages, m", [(2, 4), (4, 8), (4, 12), (8, 16), (8, 40)])
def test_the_paired_share_is_the_pairs_the_first_device_runs(name, stages, m):
    pictured = timeline(schedule=name, stages=stages, microbatches=m,
                        virtual_stages=V_SHAPED.get(name, 1))  # fmt: skip
    first = pictured.device == 0
    forwards = (first & (pictured.kind == "F")).sum()
    paired = (first & (pictured.kind == "F") & pictured.paired).sum()
    assert float(paired_share(schedule=name, stages=stages, microbatches=m)) == paired / forwards


def test_dualpipe_doubles_a_stages_weights_and_dualpipev_does_not():
    layout = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], batch=2**22, seq_len=8192,
                  slice_shape=(32, 8), y=8, z=4, microbatches=16, remat="full")  # fmt: skip
    plain, two_way, v = (
        estimate(schedule=s, virtual_stages=V_SHAPED.get(s, 1), **layout)
        for s in ("1f1b", "dualpipe", "dualpipev")
    )
    assert float(two_way.memory.params) == pytest.approx(2 * float(plain.memory.params))
    assert float(v.memory.params) == pytest.approx(float(plain.memory.params))
    # the first device holds both ends: the embeddings, the output layer and its logits
    assert int(v.peak.stage) == 0 and float(v.peak.logits) > 0
    assert float(v.peak.weights) > float(plain.peak.weights)


DEEPSEEK = dict(model=MODELS["deepseek-v3"], chip=HARDWARE["h100"], slice_shape=(256, 8),
                batch=15_360 * 4096, seq_len=4096, x=128, y=1, z=16, zero=1, remat="full",
                stack="megatron-lm", ep=64)  # fmt: skip


def test_dualpipe_hides_most_of_deepseek_v3s_expert_all_to_all():
    # DeepSeek-V3 trained with EP 64 over 8 nodes and DualPipe, its all-to-all hidden under the
    # paired passes (Technical Report, sec. 3.2.1). Its 120 sequences a replica, one a microbatch.
    plain = estimate(schedule="1f1b", microbatches=120, **DEEPSEEK)
    paired = estimate(schedule="dualpipe", microbatches=120, **DEEPSEEK)
    traffic = float(plain.step_breakdown["ep_exposed"])
    hidden, left = float(paired.hidden["ep"]), float(paired.step_breakdown["ep_exposed"])
    assert hidden + left == pytest.approx(traffic)  # what hides is taken off, nothing more
    assert hidden > 0.5 * traffic
    assert float(plain.hidden["ep"]) == 0  # 1F1B pairs nothing
    # with fewer microbatches fewer passes pair
    fewer = estimate(schedule="dualpipe", microbatches=40, **DEEPSEEK)
    assert 0 < float(fewer.hidden["ep"]) < hidden
    assert float(paired.step_time) < float(plain.step_time)
    # DeepSeek recomputes its RMSNorms and MLA's up-projections, no all-to-all: with a recompute
    # that re-runs none, every paired pass's all-to-alls hide, 81 % of them
    own = estimate(schedule="dualpipe", microbatches=120, **{**DEEPSEEK, "remat": "selective"})
    traffic = float(own.hidden["ep"]) + float(own.step_breakdown["ep_exposed"])
    share = float(paired_share(schedule="dualpipe", stages=16, microbatches=120))
    assert float(own.hidden["ep"]) == pytest.approx(share * traffic)
    assert share > 0.8


def test_a_dense_model_without_context_parallelism_has_nothing_to_hide():
    e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], batch=2**22, seq_len=8192,
                 slice_shape=(32, 8), y=8, z=4, microbatches=16, schedule="dualpipe")  # fmt: skip
    assert float(e.hidden["ep"]) == float(e.hidden["cp"]) == 0


@pytest.mark.parametrize(
    "schedule, z, m, field, named",
    [
        ("dualpipe", 4, 6, "microbatches", "e.g. 8"),
        ("dualpipe", 3, 12, "z", "both even"),
        ("dualpipev", 4, 6, "microbatches", "m ≥ 2Z"),
        ("zbv", 4, 5, "microbatches", "e.g. 8"),
        ("zb-h2", 4, 4, "microbatches", "m ≥ 2Z − 1"),
    ],
)
def test_a_schedule_that_cannot_run_names_what_it_needs(schedule, z, m, field, named):
    with pytest.raises(ValueError) as refused:
        estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], batch=2**23, seq_len=8192,
                 slice_shape=(z * 8, 8), y=8, z=z, microbatches=m, schedule=schedule,
                 virtual_stages=V_SHAPED.get(schedule, 1))  # fmt: skip
    message = str(refused.value)
    assert (
        message.startswith(f"{field} must")
        and named in message
        and f"got {m if field == 'microbatches' else z}" in message
    )


@pytest.mark.parametrize("name", ["zb-h1", "zb-h2", "zbv", "dualpipe", "dualpipev"])
@pytest.mark.parametrize("stages, m", [(2, 4), (4, 8), (4, 12), (8, 16)])
def test_every_device_holds_what_the_estimate_counts(name, stages, m):
    layout = dict(
        schedule=name, stages=stages, microbatches=m, virtual_stages=V_SHAPED.get(name, 1)
    )
    for d in range(stages):
        counted = float(in_flight_microbatches(stage=d, **layout))
        assert held_activations(name, d, stages, m) == counted


def test_the_published_schedule_comparisons_come_out_in_their_measured_order():
    # The zero-bubble paper's Table 4 (1F1B against ZB-1p at three microbatch counts, four GPT
    # models on 8 to 32 A100), held out of every fit: each pair in the order it was measured.
    runs = {r.id: r for r in load_runs(SCHEDULE_RUNS)}
    ours = {i: float(evaluate(*r.values).step_time) for i, r in runs.items()}
    groups = json.loads(SCHEDULE_RUNS.read_text(encoding="utf-8"))["groups"]
    pairs = [pair for g in groups for pair in itertools.combinations(g["members"], 2)]
    assert len(pairs) == 60
    for a, b in pairs:
        assert (ours[a] < ours[b]) == (runs[a].step_time < runs[b].step_time), (a, b)
