"""RooflinePlot: per-layer compute and communication over the global batch, log-log (MODEL.md
§A.3)."""

from __future__ import annotations

import bqplot as bq
import ipywidgets as w
import numpy as np
from traitlets import Enum, Instance, Tuple, dlink, observe

from ..cost.views import CURVES, RooflineData
from ..text.units import batch
from ..text.views import curve_names
from ._base import check_kwargs, vertical_axis
from .analysis import Analysis
from .scenario import Scenario
from .theme import color

COLORS = {
    "dp": "purple",
    "fsdp": "blue",
    "tp": "orange",
    "fsdp+tp": "red",
    "optimal": "green",
    "dcn": "brown",
}
TOGGLE_NAMES = curve_names()
SAME_LABEL_DECADES = 0.3  # crossings this close (in log10 of the batch) would overlap: one label
LEGEND_BAND = 0.32  # the top of the plot, in log units, that no line reaches: the legend sits there
TIME_TOOLTIP = dict(
    fields=["x", "y"], labels=["batch (tokens)", "time per layer (s)"], formats=[".3s", ".3s"]
)


class RooflinePlot(bq.Figure):
    """Compute line (dashed) and each strategy's communication line over the global batch.

    Above the compute line a strategy is communication-bound; the current strategy's
    comm-bound region is shaded, the current batch marked, and each crossover labelled with
    its critical batch. ``passes``: "both" (forward + backward, each line scaled from the pass
    that binds) or "fwd"; ``shown``: the curves to draw. ``data`` comes from ``Analysis``.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario whose ``Analysis`` the plot follows; None: none, ``data`` is set by hand.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    data : RooflineData or None
        Per-layer compute and communication times over a grid of global batches [s].
    passes : str
        "both" (forward + backward) or "fwd" (the forward pass); default "both".
    shown : tuple of str
        The curves drawn, of ``CURVES``: a strategy's, "optimal" and "dcn"; default all.
    """

    data = Instance(RooflineData, allow_none=True)
    passes = Enum(("both", "fwd"), default_value="both")
    shown = Tuple(default_value=CURVES)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("RooflinePlot", kwargs)
        sx, sy = bq.LogScale(), bq.LogScale()
        scales = {"x": sx, "y": sy}
        self._region, self._compute, self._lines = _time_lines(scales)
        self._crossings, self._labels, self._labels_end, self._now = _markers(scales)
        axes = [
            bq.Axis(scale=sx, label="global batch (tokens)", tick_format=".0s"),
            vertical_axis(sy, label="time per layer (s)", tick_format=".0e", label_offset="52px"),
        ]
        marks = [
            self._region,
            self._compute,
            *self._lines.values(),
            self._crossings,
            self._labels,
            self._labels_end,
            self._now,
        ]
        super().__init__(
            marks=marks,
            axes=axes,
            legend_location="top-left",
            title="Per layer, per chip",
            fig_margin=dict(top=40, bottom=50, left=76, right=30),
            layout=w.Layout(width="100%", min_width="320px", height="420px"),
        )
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
        self._fit_scale(d, p)
        self._draw_region(d, p)
        self._draw_crossings(d, p)
        compute_now, comm_now = d.current[p]
        with self._now.hold_sync():
            self._now.x, self._now.y = (
                [d.current_batch],
                [max(compute_now, comm_now if np.isfinite(comm_now) else 0)],
            )

    def _fit_scale(self, d: RooflineData, p: str) -> None:
        """The y range of the lines drawn, stretched at the top by the legend's band."""
        drawn = [d.compute[p], *(line.y for line in self._lines.values() if line.visible)]
        values = np.concatenate([np.asarray(y, dtype=float).ravel() for y in drawn])
        values = values[np.isfinite(values) & (values > 0)]
        low, high = float(values.min()), float(values.max())
        top = low * (high / low) ** (1 / (1 - LEGEND_BAND))
        with self.marks[0].scales["y"].hold_sync():
            self.marks[0].scales["y"].min, self.marks[0].scales["y"].max = low, top
        self.axes[0].tick_values = _decades(d.batch[0], d.batch[-1])
        self.axes[1].tick_values = _decades(low, top)

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
        """A dot where each curve meets the compute line, and one label per cluster of dots, in
        the first curve's colour: left of the dots in the plot's right half, so none runs off."""
        names = sorted(
            (
                n
                for n in d.crossover
                if n in self.shown
                and np.isfinite(d.comm[n][p]).any()
                and d.batch[0] <= d.crossover[n] <= d.batch[-1]
            ),
            key=d.crossover.get,
        )
        clusters: list[list[str]] = []  # crossings closer than a label's height share one label
        for n in names:
            if (
                clusters
                and np.log10(d.crossover[n] / d.crossover[clusters[-1][0]]) < SAME_LABEL_DECADES
            ):
                clusters[-1].append(n)
            else:
                clusters.append([n])
        x = np.array([d.crossover[c[0]] for c in clusters])
        right = np.log(x / d.batch[0]) > 0.5 * np.log(d.batch[-1] / d.batch[0])
        with self._crossings.hold_sync():
            self._crossings.x, self._crossings.y = x, d.compute_at(x, p)
            self._crossings.names = [", ".join(d.labels[n] for n in c) for c in clusters]
        for label, side in ((self._labels, ~right), (self._labels_end, right)):
            with label.hold_sync():
                label.x, label.y = x[side], d.compute_at(x[side], p)
                label.text = [_crossing_text(d, c) for c, on in zip(clusters, side) if on]
                label.colors = [
                    color(COLORS.get(c[0], "grey")) for c, on in zip(clusters, side) if on
                ] or [color("ink")]


def _decades(low: float, high: float):
    """Ticks at the powers of ten in [low, high] (labels that never crowd), or d3's own if fewer
    than two."""
    powers = 10.0 ** np.arange(np.ceil(np.log10(low) - 1e-9), np.floor(np.log10(high) + 1e-9) + 1)
    return powers if len(powers) >= 2 else None


def _crossing_text(d: RooflineData, cluster: list[str]) -> str:
    """ "FSDP: 3.48M", or "DP, FSDP: 3.48M; TP: 4M" for crossings close together; past two
    curves, "DP and 4 more: 1.21M", which would otherwise run off the figure (the dot's tooltip
    names them all)."""
    if len(cluster) > 2:
        where = "; ".join(dict.fromkeys(batch(d.crossover[n]) for n in cluster))
        return f"{d.labels[cluster[0]]} and {len(cluster) - 1} more: {where}"
    at: dict[str, list[str]] = {}
    for n in cluster:
        at.setdefault(batch(d.crossover[n]), []).append(d.labels[n])
    return "; ".join(f"{', '.join(labels)}: {where}" for where, labels in at.items())


class RooflineControls(w.HBox):
    """Which passes and which curves a ``RooflinePlot`` draws.

    Parameters
    ----------
    plot : RooflinePlot
        The plot whose ``passes`` and ``shown`` the controls set.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    plot : RooflinePlot
        The plot the controls set.
    """

    def __init__(self, plot: RooflinePlot, **kwargs):
        check_kwargs("RooflineControls", kwargs)
        self.plot = plot
        self._passes = w.ToggleButtons(
            options=[("fwd + bwd", "both"), ("forward only", "fwd")], value=plot.passes
        )
        self._passes.style.button_width = "95px"
        self._curves = {
            name: w.ToggleButton(
                value=name in plot.shown,
                description=TOGGLE_NAMES[name],
                layout=w.Layout(width="auto"),
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


def _time_lines(scales: dict) -> tuple:
    """The shaded comm-bound region, the compute line (dashed) and each curve's communication
    line."""
    region = bq.Lines(
        x=[],
        y=[],
        scales=scales,
        fill="between",
        fill_colors=[color("red")],
        fill_opacities=[0.12],
        colors=[color("red")],
        opacities=[0.0],
        stroke_width=0,
    )
    compute = bq.Lines(
        x=[],
        y=[],
        scales=scales,
        colors=[color("ink")],
        line_style="dashed",
        labels=["compute"],
        display_legend=True,
        tooltip=bq.Tooltip(**TIME_TOOLTIP),
    )
    # DP's line is drawn first and wide: where FSDP's (the same time per layer, MODEL.md §A.3)
    # lies on it, DP shows as a band around it rather than vanishing underneath.
    lines = {
        name: bq.Lines(
            x=[],
            y=[],
            scales=scales,
            colors=[color(COLORS.get(name, "grey"))],
            labels=[TOGGLE_NAMES[name]],
            display_legend=True,
            stroke_width=6 if name == "dp" else 2,
            tooltip=bq.Tooltip(**TIME_TOOLTIP),
        )
        for name in CURVES
    }
    return region, compute, lines


def _markers(scales: dict) -> tuple:
    """The crossovers, their labels (to the right, or to the left near the plot's end) and the
    current batch."""
    crossings = bq.Scatter(
        x=[],
        y=[],
        scales=scales,
        colors=[color("ink")],
        default_size=24,
        display_names=False,  # the names are the tooltip's, not text beside each dot
        tooltip=bq.Tooltip(fields=["name"], show_labels=False),
    )
    labels = bq.Label(x=[], y=[], scales=scales, text=[], default_size=11, x_offset=6, y_offset=-6)
    labels_end = bq.Label(
        x=[],
        y=[],
        scales=scales,
        text=[],
        default_size=11,
        x_offset=-8,
        y_offset=-6,
        align="end",
    )
    now = bq.Scatter(
        x=[],
        y=[],
        scales=scales,
        marker="diamond",
        colors=[color("ink")],
        default_size=90,
        tooltip=bq.Tooltip(**TIME_TOOLTIP),
    )
    return crossings, labels, labels_end, now
