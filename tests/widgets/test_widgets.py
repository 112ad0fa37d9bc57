"""Each widget on its own and in the panel: set a control, and the scenario and the marks follow."""

import ipywidgets as ipw
import numpy as np
import pytest

import scaling_widgets as sw
from scaling_widgets.cost import Model, compare_strategies
from scaling_widgets.presets import HARDWARE
from scaling_widgets.text.units import nbytes
from scaling_widgets.widgets import (
    MemoryBar,
    MeshPicker,
    ModelPicker,
    RooflineControls,
    RooflinePlot,
    StrategySelector,
    Summary,
    TrainingControls,
)
from scaling_widgets.widgets.analysis import Analysis
from scaling_widgets.widgets.scenario import Scenario
from scaling_widgets.widgets.theme import color

from .examples import EXAMPLE_16


def test_switching_the_chip_to_v5e_moves_the_compute_line():
    s = Scenario(**EXAMPLE_16)
    picker, plot = MeshPicker(s), RooflinePlot(s)
    before = np.array(plot._compute.y)
    picker._hardware.value = "tpu-v5e"
    assert s.hardware.name == "TPU v5e" and s.slice_shape == (16, 16)
    assert picker.value["hardware"] == "TPU v5e" and picker.value["x"] * picker.value["y"] == 256
    after = np.array(plot._compute.y)
    # fewer, slower chips: more time per layer
    assert after.shape == before.shape and np.all(after > before)


def test_a_bad_axis_length_shows_a_message_and_keeps_the_last_valid_state():
    s = Scenario(**EXAMPLE_16)
    picker, plot = MeshPicker(s), RooflinePlot(s)
    data = plot.data
    picker._axes.children[0].value = 99
    assert "a slice that fits in the chip's pod of 16x20x28" in picker._message.text
    assert s.slice_shape == (16, 16, 16) and picker._axes.children[0].value == 16
    assert plot.data is data  # the figures keep their last valid state


def test_axis_roles_by_hand():
    s = Scenario(**EXAMPLE_16)
    picker = MeshPicker(s)
    picker._by_hand.value = (
        True  # TP takes the innermost axis: 16 does not divide LLaMA-2 13B's 40 heads
    )
    assert "y must be a TP degree dividing the model's 40 attention heads" in picker._message.text
    assert s.axis_roles == ()
    s = Scenario(**{**EXAMPLE_16, "model": "llama-3-70b"})  # 64 heads: TP 16 can run
    picker = MeshPicker(s)
    picker._by_hand.value = True
    assert s.axis_roles == ("x", "x", "y") and picker.value["y"] == 16 and picker.value["mx"] == 2
    picker._roles.children[0].value = "z"
    assert picker.value["z"] == 16 and picker.value["x"] == 16


def test_two_pickers_share_one_scenario():
    s = Scenario(**EXAMPLE_16)
    a, b = MeshPicker(s), MeshPicker(s)
    a._pods.value = 2
    assert s.pods == 2 and b._pods.value == 2 and b.value["pods"] == 2


def test_strategy_selector_sets_a_split_by_hand():
    s = Scenario(**EXAMPLE_16)
    selector = StrategySelector(s)
    assert selector.value["x"] == 1024 and selector.value["y"] == 4 and selector._split.disabled
    selector._optimal.value = False
    selector._split.value = (512, 8)
    assert (s.optimal_split, s.x, s.y) == (False, 512, 8)
    assert "FSDP X=512 with CP 8 (ring) x TP Y=8" in selector._implied.value
    selector._strategy.value = "fsdp"
    assert s.strategy == "fsdp" and selector.value["x"] == 4096 and selector._optimal.disabled


def test_pipeline_stages_must_divide_the_chips():
    s = Scenario(**EXAMPLE_16)
    selector = StrategySelector(s)
    selector._stages.value = 3
    assert "dividing the slice's 4096 chips" in selector._message.text and s.z == 1
    selector._stages.value = 4
    assert s.z == 4 and selector.value["z"] == 4 and "bubble" in selector._implied.value


def test_roofline_reproduces_the_books_16x16x16_figure_with_the_best_split():
    figure = Model(
        "the chapter's example 10",
        layers=80,
        d_model=8192,
        d_ff=32768,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
    )
    # 512-token sequences: 1953, enough for FSDP 512 (4096-token ones, 244, would force FSDP 128 x
    # TP 32).
    s = Scenario(model=figure, hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=1e6, seq_len=512,
                 mfu=0.4)  # fmt: skip
    plot = RooflinePlot(s)
    d = plot.data
    assert d.labels["fsdp+tp"] == "FSDP X=512 x TP Y=8"
    assert d.crossover["optimal"] == pytest.approx(4.35e5, rel=0.005)
    assert any(
        # 4.35e5 tokens, written as a batch is typed: K is 1,024
        "FSDP+TP, book split" in label and label.endswith(": 425K")
        for label in plot._labels.text
    )
    below = d.batch < 4.06e5  # every strategy is comm-bound below the chapter's bound
    assert "tp" not in d.comm  # pure TP over 4096 chips cannot split 64 heads: no curve
    for name in ("dp", "fsdp", "optimal"):
        comm = d.comm[name]["both"][below]
        assert np.all(comm[np.isfinite(comm)] > d.compute["both"][below])


def test_roofline_controls_toggle_curves_and_passes():
    s = Scenario(**EXAMPLE_16, pods=2)
    plot = RooflinePlot(s)
    controls = RooflineControls(plot)
    assert plot._lines["dcn"].visible
    # Pure TP over 4096 chips cannot split 40 heads: it has no curve.
    assert (
        "tp" not in plot.data.comm
        and not plot._lines["tp"].visible
        and len(plot._lines["tp"].y) == 0
    )
    assert plot._lines["optimal"].visible
    controls._curves["optimal"].value = False
    assert not plot._lines["optimal"].visible and len(plot._lines["optimal"].y) == 0
    both = np.array(plot._lines["fsdp"].y)
    controls._passes.value = "fwd"
    assert not plot._lines["dp"].visible and not plot._lines["dcn"].visible  # no forward traffic
    assert np.allclose(np.array(plot._lines["fsdp"].y), both / 3)  # FSDP: forward is 4 of 12 DF/W


def test_the_shaded_region_and_marker_follow_the_batch():
    s = Scenario(**{**EXAMPLE_16, "strategy": "fsdp"})
    plot = RooflinePlot(s)
    assert plot._region.x.max() < 3.5e6  # FSDP is comm-bound up to 850·4096 = 3.48M
    assert list(plot._now.x) == [92 * 32768]  # the batch as run: 3M in whole sequences
    s.batch = 5e6
    assert list(plot._now.x) == [153 * 32768]


def test_memory_bar_dp_does_not_fit_and_tp_shrinks_the_weights():
    s = Scenario(**EXAMPLE_16)
    bar = MemoryBar(s)
    assert bar.data.strategies == ("dp", "fsdp", "tp", "fsdp+tp")
    # Each bar is the busiest chip's peak (MODEL.md §E): DP's copy of the model does not fit, FSDP's
    # shards do.
    peaks = {
        n: e.peak.reserved
        for n, e in compare_strategies(*s.values()).items()
        if not isinstance(e, Exception)
    }
    # past the HBM a program may use, even at the low end of its uncertainty
    assert bar._totals.text[0].startswith(nbytes(peaks["dp"]) + " too big") and bar._totals.text[
        1
    ] == nbytes(peaks["fsdp"])
    assert bar._totals.colors[:2] == [color("error"), color("green")] and bar._totals.colors[
        3
    ] == color("green")
    usable = HARDWARE["tpu-v5p"].usable_hbm / 1e9  # the HBM XLA lets a program allocate
    assert bar._hbm.y[0] == pytest.approx(usable)
    # TP over 4096 chips cannot split the 40 heads: an empty bar labelled so.
    assert bar.data.labels[2] == "TP: cannot run" and np.all(np.asarray(bar._bars.y)[:, 2] == 0)
    assert bar._totals.text[2] == "cannot run" and bar._bars.x[2] == "TP"
    s.update(slice_shape=(2, 2, 2))  # TP 8 divides 40 heads
    weights_tp = bar.data.parts[0][2]
    assert weights_tp > 0 and bar.data.labels[2] == "TP Y=8"  # each bar is named by its layout
    # DP's copy of the model and the batch's activations on 8 chips: far above HBM, clipped at the
    # top of the scale (twice HBM) so the others stay readable; its label gives the whole value.
    assert np.asarray(bar._bars.y)[:, 0].sum() == pytest.approx(2 * usable) and bar._totals.text[
        0
    ].endswith("▲")
    assert str(bar._bars.x[3]).startswith("● ")  # the layout in use
    s.update(slice_shape=(2, 2, 1))  # TP over 4 chips instead of 8
    assert bar.data.parts[0][2] == pytest.approx(2 * weights_tp)
    s.update(slice_shape=(2, 2, 2), strategy="tp")
    assert bar.data.parts[0][2] == pytest.approx(weights_tp) and str(bar._bars.x[2]).startswith(
        "● "
    )
    # hovering a piece names it
    bar._on_bars_hover(bar._bars, {"data": {"index": 2, "sub_index": 3}})
    assert bar._bars.tooltip.value.startswith("TP Y=8: activations ")


def test_training_controls_accept_3m_and_reject_nonsense():
    s = Scenario(**EXAMPLE_16)
    controls = TrainingControls(s)
    controls._batch._text.value = "1.5M"  # M is 2**20 in a batch
    assert s.batch == 1.5 * 2**20 and controls._batch._slider.value == pytest.approx(1.5 * 2**20)
    controls._batch._text.value = "lots"
    assert "batch must be a number > 0" in controls._message.text
    # The scenario keeps its batch; the text stays as typed, to mend, and a valid one clears it.
    assert s.batch == 1.5 * 2**20 and controls._batch._text.value == "lots"
    controls._batch._text.value = "1.5M"
    assert controls._message.text == "" and s.batch == 1.5 * 2**20


def test_model_picker_custom_dimensions():
    s = Scenario(**EXAMPLE_16)
    picker = ModelPicker(s)
    picker._preset.value = "custom"
    picker._dims["layers"].value = 20
    assert s.model.layers == 20 and s.model.d_model == 5120
    picker._dims["d_ff"].value = 0
    assert (
        "d_ff must be a whole number from 1 to 2**31" in picker._message.text
        and s.model.d_ff == 13824
    )


def test_explore_shows_example_16():
    panel = sw.explore(**EXAMPLE_16)
    text = panel.summary.value
    assert "roofline): compute-bound" in text and "in use: X=1024, Y=4" in text and "313 ms" in text
    assert panel.scenario.batch == 3e6
    panel.scenario.batch = 5e5  # set from code: every part follows
    assert (
        "roofline): communication-bound" in panel.summary.value
        and panel.training._batch._text.value == "488K"  # 5e5 tokens, K being 1,024
    )


@pytest.mark.parametrize(
    "widget",
    [MeshPicker, StrategySelector, RooflinePlot, MemoryBar, ModelPicker, TrainingControls, Summary],
)
def test_unknown_constructor_keywords_raise(widget):
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        widget(Scenario(), colour="red")


def test_explore_rejects_unknown_keywords():
    with pytest.raises(TypeError, match="unexpected keyword 'colour'"):
        sw.explore(colour="red")


def test_zero_stage_from_the_selector_shrinks_the_memory():
    s = Scenario(**{**EXAMPLE_16, "strategy": "dp"}, precision="mixed-adam")
    selector = StrategySelector(s)
    analysis = selector.analysis
    before = float(analysis.estimate.memory.total)
    selector._zero.value = 1
    assert s.zero == 1 and float(analysis.estimate.memory.total) < before / 3
    selector._strategy.value = (
        "tp"  # TP over 4096 chips cannot split 40 heads: refused, nothing changes
    )
    assert "y must be a TP degree" in selector._message.text and (s.strategy, s.zero) == ("dp", 1)
    s.update(slice_shape=(2, 2, 2))  # TP 8 can
    selector._strategy.value = "tp"  # ZeRO stages shard over the data axis, which TP has not
    assert s.zero is None and selector._zero.disabled


def test_a_measured_step_time_calibrates_the_mfu_in_the_panel():
    panel = sw.explore(**EXAMPLE_16)
    panel.training._measured.value = "0.5"
    e = panel.analysis.estimate
    assert panel.scenario.measured_step_time == 0.5 and e.calibrated and float(e.step_time) == 0.5
    # 3M rounded to 92 whole sequences of 32K: 3,014,656 tokens
    assert abs(float(e.mfu) - 0.2504) < 0.0001
    assert r"\cdot 0.5} = 25.0\%" in panel.summary.value  # η = B·f/(N·C·t) = 25.0%, in LaTeX
    assert panel.training._step._mfu.disabled
    panel.training._remat.value = "full"
    assert (
        abs(float(panel.analysis.estimate.hfu) / float(panel.analysis.estimate.mfu) - 4 / 3) < 1e-3
    )
    panel.training._measured.value = "soon"
    assert "measured_step_time must be a number" in panel.training._message.text
    panel.training._measured.value = ""
    assert panel.scenario.measured_step_time is None and not panel.analysis.estimate.calibrated


def test_exactness_controls_reach_the_cost_model_and_the_memory_bar():
    panel = sw.explore(**{**EXAMPLE_16, "slice_shape": (2, 16, 16), "strategy": "fsdp"})
    before = float(panel.analysis.estimate.layer.t_comms)
    panel.exactness._halve.value = True  # 2x16x16 is no torus: half the bandwidth
    assert float(panel.analysis.estimate.layer.t_comms) > 1.5 * before
    bar = panel.memory_bar
    before = bar.data.parts[5][0]
    panel.exactness._overhead.value = "8"
    # with the buffers
    assert bar.data.parts.shape[0] == 7 and bar.data.parts[5][0] == pytest.approx(before + 8e9)
    panel.exactness._fits_below.value = 0.9
    usable = HARDWARE["tpu-v5p"].usable_hbm
    assert bar._limit.visible and bar._limit.y[0] == pytest.approx(0.9 * usable / 1e9)
    panel.exactness._latency.value = "fast"
    assert (
        "latency must be a number" in panel.exactness._message.text and panel.scenario.latency == 0
    )


def test_the_selector_offers_pipeline_schedules_and_the_panel_shows_the_bubble():
    panel = sw.explore(
        model="llama-3-70b",
        hardware="h100",
        slice_shape=(512, 8),
        # 3906 sequences: 30 for each of 128 replicas, enough for 16 microbatches (4M, 976, were
        # not)
        batch=16e6,
        seq_len=4096,
        strategy="fsdp+tp",
        zero=1,
        optimal_split=False,
        x=128,
        y=8,
        z=4,
        microbatches=16,
        mfu=0.4,  # the chapter's step: the bubble stretches it
    )
    selector = panel.strategy_selector
    # torchtitan (the H100's stack) always runs TP with sequence parallelism
    assert "1f1b, 16 microbatches, sequence parallel, bubble 19%" in selector._implied.value
    selector._schedule.value = "interleaved"
    selector._virtual.value = 4
    assert panel.scenario.virtual_stages == 4 and "bubble 5%" in selector._implied.value
    assert "the pipeline bubble adds 5%" in panel.summary.value
    selector._schedule.value = "gpipe"  # virtual stages belong to the interleaved schedule
    assert panel.scenario.virtual_stages == 1 and selector._virtual.disabled


def test_with_axes_given_by_hand_the_current_point_sits_on_its_own_curve():
    # TP on the first axis, FSDP on the other two: the curve must be placed by those roles,
    # not by the automatic rule, or its crossover would not be the layout's.
    roles = ("y", "x", "x")
    s = Scenario(
        model="llama-3-70b",
        hardware="tpu-v5p",
        slice_shape=(16, 16, 16),
        batch=16e6,
        axis_roles=roles,
    )
    e, d = Analysis.of(s).estimate, Analysis.of(s).roofline
    assert (int(e.x), int(e.y)) == (256, 16)
    assert d.crossover[d.current_curve] == pytest.approx(float(e.crossover_batch))


def test_predicting_the_step_shows_its_breakdown_and_a_measured_step_calibrates_every_what_if():
    panel = sw.explore(**EXAMPLE_16)
    training, bar = panel.training, panel.step_breakdown
    assert "at the given MFU" in bar.title and panel.analysis.estimate.step_breakdown is None
    training._step._predict.value = True
    e = panel.analysis.estimate
    assert panel.scenario.mfu is None and training._step._mfu.disabled
    assert (
        np.asarray(bar._bars.y).sum() == pytest.approx(float(e.step_time))
        and "Predicted step" in bar.title
    )
    assert "Predicted step" in panel.summary.value
    training._measured.value = "2.5"  # calibrates the profile: this layout now takes 2.5 s
    assert panel.scenario.profile is not None and panel.scenario.measured_step_time is None
    assert float(panel.analysis.estimate.step_time) == pytest.approx(2.5)
    # a what-if: the calibrated profile predicts it
    panel.scenario.update(batch=panel.scenario.batch * 2)
    assert float(panel.analysis.estimate.step_time) > 2.5
    assert "calibrated" in panel.export.value  # the profile is saved with the scenario
    training._forget.click()
    assert panel.scenario.profile is None


def test_the_stack_menu_and_a_measured_peak_set_the_memory_bar():
    panel = sw.explore(
        model="llama-3-70b",
        hardware="h100",
        slice_shape=(8, 8),
        batch=64 * 8192,
        seq_len=8192,
        strategy="fsdp",
        remat="full",
    )
    training, bar = panel.training, panel.memory_bar
    fsdp = bar.data.strategies.index("fsdp")
    weights_fsdp2 = bar.data.parts[0][fsdp]  # the H100's own stack, torchtitan: fp32 weights
    training._stack.value = "megatron-lm"
    assert panel.scenario.stack == "megatron-lm" and bar.data.parts[0][fsdp] == pytest.approx(
        weights_fsdp2 / 2
    )
    training._measured_peak.value = "50"  # GB, allocated as Megatron-LM reports it
    assert (
        panel.scenario.profile.name.endswith("megatron-lm (peak calibrated)")
        and panel.scenario.stack is None
    )
    assert float(panel.analysis.estimate.peak.allocated) == pytest.approx(50e9)
    assert "(peak calibrated)" in panel.export.value  # saved with the scenario
    before = panel.scenario.profile
    training._measured_peak.value = "1"  # below the weights alone: refused inline, nothing changes
    assert (
        "measured_peak must be above" in training._message.text and panel.scenario.profile is before
    )


def test_every_dropdown_shows_a_value_that_ipywidgets_8_can_display():
    panel = sw.explore(**EXAMPLE_16)
    dropdowns = [w for w in _children(panel) if isinstance(w, ipw.Dropdown)]
    assert dropdowns and all(d.value is not None and d.label for d in dropdowns)
    assert panel.strategy_selector._zero.label == "strategy's own"


def _children(widget):
    for child in getattr(widget, "children", ()):
        yield child
        yield from _children(child)


def test_switching_to_a_gpu_gives_a_cluster_a_gpu_engineer_would_pick_with_tp_inside_a_node():
    panel = sw.explore(
        model="llama-3-70b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=16e6
    )
    panel.mesh_picker._hardware.value = "h100"
    s, e = panel.scenario, panel.analysis.estimate
    # the same 4,096 chips, as GPUs in nodes of 8; TP in the NVLink domain
    assert s.slice_shape == (512, 8) and int(e.y) <= 8
    assert "the same 4,096 chips" in panel.mesh_picker._moved.value
    assert (
        "keeps TP inside a node of 8" in panel.summary.value
        and "in units of NVLink" in panel.summary.value
    )


@pytest.mark.parametrize("batch", [16e6, 4 * 2**20, 1e6])
def test_a_change_of_chip_never_strands_the_scenario(batch):
    # v5e -> v5p -> H100 -> v5e at the default batch and others: each switch lands on a slice of
    # the new chip that runs the scenario, the same chips where it can, and says what it changed.
    panel = sw.explore(hardware="tpu-v5e", batch=batch)
    for chip in ("tpu-v5p", "h100", "gb200-nvl72", "tpu-v5e"):
        panel.mesh_picker._hardware.value = chip
        s = panel.scenario
        assert s.hardware.name == panel.mesh_picker._hardware.label, chip
        assert panel.mesh_picker._message.text == "" and "From " in panel.mesh_picker._moved.value
        assert float(panel.analysis.estimate.step_time) > 0


def test_interleaving_starts_at_two_virtual_stages():
    panel = sw.explore(
        model="llama-3-70b",
        slice_shape=(16, 16, 16),
        batch=16e6,
        strategy="fsdp+tp",
        optimal_split=False,
        x=128,
        y=8,
        z=4,
        zero=1,
    )
    panel.strategy_selector._schedule.value = "interleaved"
    assert (panel.scenario.schedule, panel.scenario.virtual_stages) == ("interleaved", 2)


def test_the_headline_of_a_layout_that_does_not_fit_says_so_first():
    panel = sw.explore(
        **{
            **EXAMPLE_16,
            "strategy": "fsdp+tp",
            "optimal_split": False,
            "x": 4096,
            "y": 1,
            "zero": 0,
        }
    )
    assert not panel.analysis.estimate.fits
    assert panel.summary.value.startswith("<b>Does not fit:") and "if it fit" in panel.summary.value
    step = next(line for line in panel.summary.value.split("<br>") if line.startswith("Step time"))
    assert step.count(" ms") == 1 or "→" in step  # "436 ms → 436 ms" is gone


def test_the_mesh_picture_shows_the_pods_over_dcn():
    picker = MeshPicker(Scenario(model="llama-3-70b", slice_shape=(16, 16, 16), batch=16e6, pods=4))
    bars = picker._picture._bars
    labels = list(bars.x)
    pods = labels.index("pods over DCN (4)")
    assert np.asarray(bars.y)[0, pods] == pytest.approx(2)  # log2 4, data


def test_fsdp_across_pods_is_offered_with_pods_and_kept_runnable_when_they_change():
    s = Scenario(model="llama-2-13b", hardware="tpu-v5e", slice_shape=(4, 4), pods=2,
                 batch=2**16, seq_len=2048, strategy="fsdp", remat="full")  # fmt: skip
    picker = MeshPicker(s)
    control = picker._spans["fsdp_pods"]
    assert control.layout.display == ""
    control.value = 2
    assert s.fsdp_pods == 2 and picker.value["fsdp_pods"] == 2
    control.value = 3  # does not divide 2 pods: refused inline, the scenario kept
    assert s.fsdp_pods == 2 and "got 3" in picker._message.value
    s.pods = 3  # FSDP across 2 of 3 pods cannot run: the most that divides them
    assert s.fsdp_pods == 1
    s.pods = 1
    assert control.layout.display == "none"


# Each group that may span pods (MODEL.md §B.10 to §B.13): a scenario that has one, the row of
# the mesh picture it takes on the pods' axis, its words, and its knobs as the API's keywords
ACROSS_PODS = {
    "pp_pods": (dict(model="llama-3-70b", pods=4, batch=2**23, seq_len=8192, strategy="fsdp", z=2),
                2, "each pipeline", dict(pp=2)),
    "tp_pods": (dict(model="llama-3-70b", pods=4, batch=2**23, seq_len=8192, strategy="fsdp+tp",
                     optimal_split=False, x=64, y=4, remat="full"),
                1, "each TP group", dict(fsdp=64, tp=4, remat="full")),
    "ep_pods": (dict(model="mixtral-8x7b", pods=8, batch=2**23, seq_len=4096, strategy="fsdp",
                     ep=4), 3, "each EP group", dict(ep=4)),
    "cp_pods": (dict(model="llama-3-8b", pods=8, batch=2**26, seq_len=2**17, strategy="fsdp",
                     cp=4), 4, "each CP group", dict(cp=4)),
}  # fmt: skip


@pytest.mark.parametrize("name", ACROSS_PODS)
def test_the_mesh_picker_offers_each_group_across_pods_and_the_panel_prices_it(name):
    knobs, row, words, api = ACROSS_PODS[name]
    s = Scenario(hardware="tpu-v5p", slice_shape=(4, 8, 8), **knobs)
    picker = MeshPicker(s)
    control = picker._spans[name]
    assert control.layout.display == ""
    control.value = 2
    assert getattr(s, name) == 2 and picker.value[name] == 2
    assert f"{words} across 2 of them" in picker._info.value
    bars = picker._picture._bars  # the pods' axis: the group's 2 pods, and the replicas of them
    pods = list(bars.x).index(f"pods over DCN ({s.pods})")
    assert np.asarray(bars.y)[[0, row], pods].tolist() == [np.log2(s.pods // 2), 1.0]
    where = {k: knobs[k] for k in ("model", "pods", "batch", "seq_len", "strategy")}
    e = sw.estimate(mesh="v5p-512", **where, **api, **{name: 2})
    assert float(s.estimate().step_time) == pytest.approx(float(e.step_time))  # one answer
    control.value = 3  # divides neither 4 nor 8 pods: refused inline, the scenario kept
    assert getattr(s, name) == 2 and "got 3" in picker._message.value


def test_a_change_that_leaves_a_group_across_pods_impossible_mends_it():
    pipeline = Scenario(hardware="tpu-v5p", slice_shape=(4, 8, 8), **ACROSS_PODS["pp_pods"][0])
    pipeline.pp_pods = 2
    pipeline.pods = 3  # a pipeline across 2 of 3 pods cannot run: the most that divides them
    assert pipeline.pp_pods == 1
    tensor = Scenario(hardware="tpu-v5p", slice_shape=(4, 8, 8), **ACROSS_PODS["tp_pods"][0])
    tensor.tp_pods = 2
    tensor.strategy = "fsdp"  # no TP group left to span pods: inside each pod again
    assert tensor.tp_pods == 1
    experts = Scenario(hardware="tpu-v5p", slice_shape=(4, 8, 8), **ACROSS_PODS["ep_pods"][0])
    picker = MeshPicker(experts)
    experts.ep_pods = 2
    experts.model = "llama-3-8b"  # a dense model: no experts to split, over pods or not
    assert (experts.ep, experts.ep_pods) == (1, 1)
    assert picker._spans["ep_pods"].layout.display == "none"


def test_the_strategy_selector_shows_a_pods_stages_and_splits_under_a_pipeline_across_pods():
    s = Scenario(model="llama-3-70b", hardware="tpu-v5p", slice_shape=(4, 8, 8), pods=4,
                 batch=2**23, seq_len=8192, strategy="fsdp+tp", optimal_split=False, x=32, y=4,
                 z=2, pp_pods=2)  # fmt: skip
    selector = StrategySelector(s)
    assert selector._stages.value == 2  # a pod's stages: 4 in all, over 2 pods
    assert selector.value["z"] == 2 and s.z == 2
    assert selector._split.value == (32, 4)  # the split in use is one of a stage's


def test_the_pipeline_picture_draws_every_pass_and_names_the_bubble():
    panel = sw.explore(
        model="llama-3-70b",
        slice_shape=(16, 16, 16),
        batch=2**23,
        strategy="fsdp+tp",
        optimal_split=False,
        x=128,
        y=8,
        z=4,
        zero=1,
        microbatches=16,
    )
    picture = panel.pipeline
    # (Z - 1)/m = 3/16
    assert len(picture._passes.x) == 2 * 4 * 16 and "bubble 19%" in picture.title
    assert list(picture._stages.tick_values) == [0, 1, 2, 3]  # each stage named once
    panel.strategy_selector._schedule.value = "interleaved"  # two virtual stages: half the bubble
    assert len(picture._passes.x) == 2 * 4 * 2 * 16 and "bubble 9%" in picture.title
    panel.strategy_selector._schedule.value = "zb-h1"  # a third of 1F1B's, W passes in green
    assert len(picture._passes.x) == 3 * 4 * 16 and "bubble 6%" in picture.title
    assert len(set(picture._passes.colors)) == 3


def test_the_pipeline_picture_says_why_when_a_schedule_cannot_be_drawn():
    panel = sw.explore(
        model="llama-3-70b",
        slice_shape=(16, 16, 16),
        batch=6 * 256 * 4096,  # 6 sequences a replica: 3 whole microbatches
        strategy="fsdp+tp",
        optimal_split=False,
        x=256,
        y=8,
        z=2,
        zero=1,
        microbatches=3,
        schedule="interleaved",
        virtual_stages=2,
    )
    assert (
        "no picture" in panel.pipeline.title and "multiple of the 2 stages" in panel.pipeline.title
    )


def test_the_ep_overlap_box_pairs_the_pipeline_and_says_what_hides():
    panel = sw.explore(
        model="mixtral-8x7b",
        hardware="h100",
        slice_shape=(8, 8),
        batch=512 * 4096,
        strategy="dp",
        zero=1,
        z=4,
        ep=8,
        microbatches=8,
        schedule="interleaved",
        virtual_stages=2,
        remat="selective",
        stack="megatron-lm",
    )
    selector, picture = panel.strategy_selector, panel.pipeline
    assert np.asarray(picture._pairs.x).max() == 0  # no pair drawn
    assert "pairs hide" not in panel.step_breakdown.title
    selector._ep_overlap.value = True
    assert panel.scenario.ep_overlap and selector._message.text == ""
    e = panel.scenario.estimate()
    assert float(e.hidden["ep"]) > 0 and "pairs hide" in panel.step_breakdown.title
    assert np.asarray(picture._pairs.x).max() > 0 and "interleaved combined" in picture.title
    # a stack without it: the box goes back off, the scenario still runs
    panel.scenario.update(stack="fsdp2")
    assert not selector._ep_overlap.value and panel.analysis.error == ""
    # a dense model: nothing to pair, the box greyed
    panel.scenario.update(model="llama-3-8b")
    assert selector._ep_overlap.disabled


def test_a_selector_on_a_scenario_never_evaluated_shows_why():
    s = Scenario(model="llama-2-13b", slice_shape=(16, 16, 16), batch=3e6)
    analysis = Analysis.of(s)
    with analysis.hold_trait_notifications():  # as when the first evaluation failed
        analysis.estimate, analysis.mesh, analysis.error = None, None, "Could not evaluate: x"
    selector = StrategySelector(s)
    assert selector._message.text == "Could not evaluate: x"
    selector._schedule.value = "interleaved"  # the controls still write to the scenario
    assert s.schedule == "interleaved"


def test_the_run_controls_set_what_the_summarys_time_to_train_says():
    panel = sw.explore(
        model="llama-3-70b", hardware="h100", batch=2**24, seq_len=8192, tokens=15e12
    )
    boxes = panel.run._boxes
    assert boxes["failure_rate"].value == "1.97328e-05" and boxes["price_per_chip_hour"].value == ""
    assert "goodput" in panel.summary.value and "a chip-hour," not in panel.summary.value
    boxes["price_per_chip_hour"].value = "2"
    assert panel.scenario.price_per_chip_hour == 2 and "at 2 a chip-hour" in panel.summary.value
    boxes["checkpoint_bw"].value = "1"  # GB/s
    assert panel.scenario.checkpoint_bw == 1e9
    boxes["failure_rate"].value = "often"  # refused inline, the last valid state kept
    assert "Failures/chip-h must be a number" in panel.run._message.text
    assert panel.scenario.failure_rate == pytest.approx(1.97328e-05, rel=1e-5)
    boxes["price_per_chip_hour"].value = ""  # empty: no price again
    assert panel.scenario.price_per_chip_hour is None


def test_the_export_makes_the_steps_trace_when_asked_and_forgets_it_on_a_change():
    import base64
    import json

    panel = sw.explore(model="llama-3-70b", hardware="h100", slice_shape=(32, 8), batch=2**22,
                       seq_len=8192, optimal_split=False, x=8, y=8, z=4, zero=1)  # fmt: skip
    export = panel.export
    assert export._trace.value == ""
    export._make_trace.click()
    link = export._trace.value
    assert 'download="trace.json"' in link
    data = json.loads(base64.b64decode(link.split("base64,")[1].split('"')[0]))
    stages = {e["pid"] for e in data["traceEvents"] if e["ph"] == "X"}
    assert stages == {0, 1, 2, 3}
    panel.scenario.update(batch=2**23)
    assert export._trace.value == ""


def test_the_batch_input_shows_one_value_in_its_slider_and_its_field():
    from scaling_widgets.widgets import BatchInput

    M = 2**20  # a batch's M, as frameworks' scripts count it
    batch = BatchInput(value=3 * M)
    assert batch._text.value == "3M" and batch._slider.value == pytest.approx(3 * M)
    batch._text.value = "8M"  # typed: the value, and the slider, follow
    assert (
        batch.value == 8 * M and batch._slider.value == pytest.approx(8 * M) and batch.error == ""
    )
    batch._slider.value = 8.01 * M  # the browser rounding 8M to its step: not a move
    assert batch.value == 8 * M
    batch._slider.value = 20 * M  # a move
    assert batch.value == 20 * M and batch._text.value == "20M"
    batch._text.value = "lots"  # unreadable: said, the value kept
    assert batch.value == 20 * M and "batch must be" in batch.error
    batch._text.value = "20M"  # the same value again, read: the error goes
    assert batch.error == ""


def test_the_step_input_is_an_mfu_given_or_none_when_predicted():
    from scaling_widgets.widgets import StepInput

    step = StepInput()
    assert step.value is None and step._predict.value and step._mfu.disabled
    # the page's first render sends the greyed slider's value back, rounded to its steps (the
    # demo opened on "40% MFU given" while it counted): the step stays predicted
    step._mfu.value = 0.39999999999999997
    assert step.value is None and step._predict.value
    step._predict.value = False  # the slider's 40 %, the chapter's
    assert step.value == pytest.approx(0.4) and not step._mfu.disabled
    step._mfu.value = 0.55
    assert step.value == pytest.approx(0.55)
    step.locked = True  # a measured step sets the utilisation
    assert step._mfu.disabled and step.value == pytest.approx(0.55)
    step.value = None
    assert step._predict.value and step._mfu.value == pytest.approx(0.55)


def test_on_a_gpu_the_memory_bar_names_cuda_and_nccl_beside_its_hbm_line():
    # what a process holds beside PyTorch's allocator is named where a bar is read, not hidden
    s = Scenario(**EXAMPLE_16)
    s.update(hardware=HARDWARE["h100"], slice_shape=None)
    bar, h100 = MemoryBar(s), HARDWARE["h100"]
    assert h100.usable_hbm == pytest.approx((79.11 - 1.2) * 2**30)
    assert bar._hbm.y[0] == pytest.approx(h100.usable_hbm / 1e9)
    assert bar._hbm.labels == [f"HBM {nbytes(h100.usable_hbm)}"]
    bar._on_bars_hover(bar._bars, {"data": {"index": 1, "sub_index": 0}})
    tip = bar._bars.tooltip.value
    assert tip.endswith(f"against HBM's usable {nbytes(h100.usable_hbm)}; CUDA's context and NCCL"
                        " hold 1.29 GB more")  # fmt: skip
