"""Zero-bubble schedules (MODEL.md §B.6): the papers' tables out of the code, the step they
charge, and the planner picking one where it wins."""

import numpy as np
import pytest

from scaling_widgets.cost import estimate, plan
from scaling_widgets.cost.schedules import SCHEDULES, bubble, in_flight_microbatches
from scaling_widgets.presets import HARDWARE, MODELS

# The slots of one microbatch on a stage, as the papers assume: a forward F, a full backward B of
# twice that, and its weights' part W as long as F.
F, B, W = 1.0, 2.0, 1.0


@pytest.mark.parametrize("stages", [2, 4, 8, 16])
@pytest.mark.parametrize("per_stage", [1, 2, 8])
def test_zb_h1_is_deepseek_v3s_zb1p_row_a_third_of_1f1bs_bubble_at_its_memory(stages, per_stage):
    # DeepSeek-V3 Table 2 (and DualPipe's README): 1F1B idles (PP-1)(F+B), ZB1P (PP-1)(F+B-2W),
    # both at 1x the parameters and PP microbatches' activations. Sea AI Lab's comparison at
    # T_F = T_B = T_W: bubble rate (p-1)/m against (p-1)/3m, activation memory 1x.
    m = stages * per_stage
    work = m * (F + B)
    layout = dict(stages=stages, microbatches=m)
    assert float(bubble(schedule="1f1b", **layout)) == pytest.approx((stages - 1) * (F + B) / work)
    assert float(bubble(schedule="zb-h1", **layout)) == pytest.approx(
        (stages - 1) * (F + B - 2 * W) / work
    )
    assert float(bubble(schedule="zb-h1", **layout)) == pytest.approx((stages - 1) / (3 * m))
    for stage in range(stages):
        held = [float(in_flight_microbatches(schedule=s, stage=stage, **layout))
                for s in ("1f1b", "zb-h1")]  # fmt: skip
        assert held[1] == held[0]  # never fewer than 1F1B, and no more
    assert float(in_flight_microbatches(schedule="zb-h1", **layout)) == stages


@pytest.mark.parametrize("m", [1, 2, 3, 7, 8, 64])
def test_with_any_number_of_microbatches_zb_h1_idles_less_than_1f1b(m):
    ours, theirs = (float(bubble(schedule=s, stages=8, microbatches=m)) for s in ("zb-h1", "1f1b"))
    assert 0 < ours < theirs


def test_the_predicted_step_charges_a_third_of_1f1bs_bubble_and_the_same_memory():
    layout = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], batch=2**22, seq_len=8192,
                  slice_shape=(32, 8), x=8, y=8, z=4, microbatches=8)  # fmt: skip
    one_f_one_b, zero_bubble = (estimate(schedule=s, **layout) for s in ("1f1b", "zb-h1"))
    idle = [float(e.step_breakdown["bubble"]) for e in (one_f_one_b, zero_bubble)]
    assert idle[1] == pytest.approx(idle[0] / 3)
    saved = float(one_f_one_b.step_time - zero_bubble.step_time)
    assert saved == pytest.approx(idle[0] - idle[1])
    assert float(zero_bubble.peak.allocated) == float(one_f_one_b.peak.allocated)


def test_the_planner_recommends_a_zero_bubble_schedule_where_it_wins():
    ranked = plan(model=MODELS["llama-3-405b"], chip=HARDWARE["h100"], chips=2048,
                  batch=2**24, seq_len=8192, max_tp=8)  # fmt: skip
    fastest = ranked.order[np.argmin(ranked.step_time[ranked.order])]
    knobs = ranked.knobs(fastest)
    # the zero-bubble family: each splits its backward passes into B and W
    assert knobs["schedule"] in ("zb-h1", "zb-h2", "zbv", "dualpipe", "dualpipev")
    assert knobs["z"] > 1 and ranked.tied[fastest]  # in the tie the table starts with


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_every_schedule_holds_at_least_1f1bs_microbatches_and_idles_nothing_in_the_limit(name):
    for v in SCHEDULES[name].virtual_stages:
        for stages in (2, 4, 8):
            layout = dict(stages=stages, virtual_stages=v)
            for m in (stages, 4 * stages, 16 * stages):
                held = float(in_flight_microbatches(schedule=name, microbatches=m, **layout))
                assert held >= float(
                    in_flight_microbatches(schedule="1f1b", microbatches=m, **layout)
                )
            assert float(bubble(schedule=name, microbatches=10**9, **layout)) < 1e-8
