"""RooflinePlot: per-layer compute and communication over the global batch, log-log (SPEC A.3)."""

from __future__ import annotations

import bqplot as bq
import ipywidgets as w
import numpy as np
from traitlets import Enum, Instance, Tuple, dlink, observe

from ..text.units import tokens
from ._base import check_kwargs, vertical_axis
from .analysis import Analysis, RooflineData
from .scenario import Scenario

CURVES = ("dp", "fsdp", "tp", "fsdp+tp", "optimal", "dcn")
COLORS = {
    "dp": "#9467bd", "fsdp": "#1f77b4", "tp": "#ff7f0e", "fsdp+tp": "#d62728", "optimal": "#2ca02c", "dcn": "#8c564b",
}  # fmt: skip
TOGGLE_NAMES = {"dp": "DP", "fsdp": "FSDP", "tp": "TP", "fsdp+tp": "FSDP+TP (this split)", "optimal": "FSDP+TP (best)",
                "dcn": "DCN"}  # fmt: skip
TIME_TOOLTIP = dict(fields=["x", "y"], labels=["batch (tokens)", "time per layer (s)"], formats=[".3s", ".3s"])


class RooflinePlot(bq.Figure):
    """Compute line (dashed) and each strategy's communication line over the global batch.

    Above the compute line a strategy is communication-bound; the current strategy's
    comm-bound region is shaded, the current batch marked, and each crossover labelled with
    its critical batch. ``passes``: "both" (forward + backward, each line scaled from the pass
    that binds) or "fwd"; ``shown``: the curves to draw. ``data`` comes from ``Analysis``.
    """

    data = Instance(RooflineData, allow_none=True)
    passes = Enum(("both", "fwd"), default_value="both")
    shown = Tuple(default_value=CURVES)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("RooflinePlot", kwargs)
        sx, sy = bq.LogScale(), bq.LogScale()
        scales = {"x": sx, "y": sy}
        self._region = bq.Lines(
            x=[], y=[], scales=scales, fill="between", fill_colors=["#d62728"], fill_opacities=[0.12],
            colors=["#d62728"], opacities=[0.0], stroke_width=0,
        )  # fmt: skip
        self._compute = bq.Lines(
            x=[], y=[], scales=scales, colors=["black"], line_style="dashed", labels=["compute"],
            display_legend=True, tooltip=bq.Tooltip(**TIME_TOOLTIP),
        )  # fmt: skip
        self._lines = {
            name: bq.Lines(
                x=[],
                y=[],
                scales=scales,
                colors=[COLORS[name]],
                labels=[TOGGLE_NAMES[name]],
                display_legend=True,
                stroke_width=2,
                tooltip=bq.Tooltip(**TIME_TOOLTIP),
            )  # fmt: skip
            for name in CURVES
        }
        self._crossings = bq.Scatter(x=[], y=[], scales=scales, colors=["black"], default_size=24)
        self._labels = bq.Label(x=[], y=[], scales=scales, text=[], default_size=11, x_offset=4, y_offset=-6)
        self._now = bq.Scatter(
            x=[], y=[], scales=scales, marker="diamond", colors=["black"], default_size=90,
            tooltip=bq.Tooltip(**TIME_TOOLTIP),
        )  # fmt: skip
        axes = [
            bq.Axis(scale=sx, label="global batch (tokens)", tick_format=".0s"),
            vertical_axis(sy, label="time per layer (s)", tick_format=".0e"),
        ]
        marks = [self._region, self._compute, *self._lines.values(), self._crossings, self._labels, self._now]
        super().__init__(
            marks=marks, axes=axes, legend_location="top-left", title="Per layer, per chip",
            fig_margin=dict(top=40, bottom=50, left=70, right=20), layout=w.Layout(width="620px", height="420px"),
        )  # fmt: skip
        self.add_class("sw-roofline")
        if scenario is not None:
            dlink((Analysis.of(scenario), "roofline"), (self, "data"))

    @observe("data", "passes", "shown")
    def _redraw(self, change=None) -> None:
        d, p = self.data, self.passes
        if d is None:
            return
        with self._compute.hold_sync():
            self._compute.x, self._compute.y = d.batch, d.compute[p]
        for name, line in self._lines.items():
            y = d.comm.get(name, {}).get(p)
            visible = y is not None and name in self.shown and bool(np.isfinite(y).any())
            with line.hold_sync():
                line.x, line.y = (d.batch, y) if visible else ([], [])
                line.labels = [d.labels.get(name, TOGGLE_NAMES[name])]
                line.visible = visible
        self._draw_region(d, p)
        self._draw_crossings(d, p)
        compute_now, comm_now = d.current[p]
        with self._now.hold_sync():
            self._now.x, self._now.y = [d.current_batch], [max(compute_now, comm_now if np.isfinite(comm_now) else 0)]

    def _draw_region(self, d: RooflineData, p: str) -> None:
        comm = d.comm[d.current_curve][p]
        bound = np.isfinite(comm) & (comm > d.compute[p])
        with self._region.hold_sync():
            if bound.any():
                self._region.x = d.batch[bound]
                self._region.y = np.vstack([comm[bound], d.compute[p][bound]])
            else:
                self._region.x, self._region.y = [], []

    def _draw_crossings(self, d: RooflineData, p: str) -> None:
        names = [
            n for n in d.crossover
            if n in self.shown and np.isfinite(d.comm[n][p]).any() and d.batch[0] <= d.crossover[n] <= d.batch[-1]
        ]  # fmt: skip
        at = {}  # curves that cross at the same batch share one label
        for n in names:
            at.setdefault(tokens(d.crossover[n]), []).append(n)
        x = np.array([d.crossover[group[0]] for group in at.values()])
        with self._crossings.hold_sync(), self._labels.hold_sync():
            self._crossings.x, self._crossings.y = x, d.compute_at(x, p)
            self._labels.x, self._labels.y = x, d.compute_at(x, p)
            self._labels.text = [f"{', '.join(d.labels[n] for n in group)}: {where}" for where, group in at.items()]


class RooflineControls(w.HBox):
    """Which passes and which curves a ``RooflinePlot`` draws."""

    def __init__(self, plot: RooflinePlot, **kwargs):
        check_kwargs("RooflineControls", kwargs)
        self.plot = plot
        self._passes = w.ToggleButtons(options=[("fwd + bwd", "both"), ("forward only", "fwd")], value=plot.passes)
        self._passes.style.button_width = "95px"
        self._curves = {
            name: w.ToggleButton(
                value=name in plot.shown, description=TOGGLE_NAMES[name], layout=w.Layout(width="auto")
            )
            for name in CURVES
        }
        self._passes.observe(self._on_passes_change, "value")
        for button in self._curves.values():
            button.observe(self._on_curve_change, "value")
        super().__init__([self._passes, *self._curves.values()], **kwargs)
        self.add_class("sw-roofline-controls")

    def _on_passes_change(self, change) -> None:
        self.plot.passes = change["new"]

    def _on_curve_change(self, change) -> None:
        self.plot.shown = tuple(name for name, button in self._curves.items() if button.value)
