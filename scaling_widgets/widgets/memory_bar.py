"""MemoryBar: the busiest chip's peak of every strategy, stacked by part, against HBM (MODEL.md
§E)."""

from __future__ import annotations

import bqplot as bq
import ipywidgets as w
import numpy as np
from traitlets import Instance, dlink, observe

from ..cost.strategies import STRATEGIES
from ..cost.views import BAR_PARTS, MemoryData
from ..text.units import nbytes
from ._base import check_kwargs, vertical_axis
from .analysis import Analysis
from .scenario import Scenario
from .theme import color

KINDS = tuple(BAR_PARTS)
LEGEND_BAND = 0.42  # the top of the plot, above every bar and label: the legend sits there
# Stacked bars need explicit colors.
KIND_COLORS = [
    color(name) for name in ("blue", "cyan", "orange", "green", "purple", "brown", "grey")
]
GB = 1e9


def clipped_at(data) -> float:
    """The height [GB] above which a bar is cut, its whole value in its label: the tallest bar or
    HBM with room above, at most twice HBM, so that one huge bar leaves the others readable.

    Parameters
    ----------
    data : MemoryData
        The bars: each strategy's peak (``totals``) and the chip's HBM (``hbm_bytes``)
        [bytes].

    Returns
    -------
    top : float
        1.15 times the larger of HBM and the tallest bar, at most twice HBM [GB].
    """
    hbm = data.hbm_bytes / GB
    return min(float(max(hbm, data.totals.max() / GB) * 1.15), 2 * hbm)


# each verdict (MODEL.md §E.5) beside a bar's total, and its colour
SAID = {"fits": "", "tight": " tight", "does not fit": " too big", "": ""}
VERDICT_COLORS = {"fits": "green", "tight": "orange", "does not fit": "error", "": "grey"}


class MemoryBar(bq.Figure):
    """One stacked bar per strategy, side by side, with the chip's HBM as a red line: the busiest
    chip's peak as its stack holds it, reserved by the allocator (MODEL.md §E). With pipelining, the
    title names the busiest stage of the current layout, and the tooltip each bar's.

    A bar that does not fit rises above the line and its label, in red, says "> HBM". A bar far
    above HBM is clipped at the top of the scale, so that the others stay readable, and its label
    gives its whole value with "▲". The current layout's bar is marked "●". Hovering a piece names
    its part. ``data`` comes from ``Analysis``; values are in GB.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario whose ``Analysis`` the figure follows; None: none, ``data`` is set by hand.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    data : MemoryData or None
        Each strategy's peak per chip by part, and the chip's HBM [bytes]; drawn in GB.
    """

    data = Instance(MemoryData, allow_none=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("MemoryBar", kwargs)
        sx, sy = bq.OrdinalScale(), bq.LinearScale(min=0)
        self._bars = bq.Bars(
            x=[],
            y=[],
            scales={"x": sx, "y": sy},
            type="stacked",
            colors=KIND_COLORS,
            labels=list(KINDS),
            display_legend=True,
            padding=0.3,
            tooltip=w.HTML(),
        )
        self._bars.on_hover(self._on_bars_hover)
        self._limit = bq.Lines(
            x=[0, 1],
            y=[0, 0],
            scales={"x": bq.LinearScale(min=0, max=1), "y": sy},
            colors=[color("orange")],
            line_style="dotted",
            labels=["fits below"],
            display_legend=False,
            visible=False,
        )
        self._hbm = bq.Lines(
            x=[0, 1],
            y=[0, 0],
            scales={"x": bq.LinearScale(min=0, max=1), "y": sy},
            colors=[color("error")],
            line_style="dashed",
            labels=["HBM"],
            display_legend=True,
        )
        self._totals = bq.Label(
            x=[],
            y=[],
            scales={"x": sx, "y": sy},
            text=[],
            default_size=12,
            align="middle",
            y_offset=-8,
            colors=[],
        )
        axes = [
            bq.Axis(scale=sx),
            vertical_axis(sy, label="memory per chip (GB)", tick_format=".3r"),
        ]
        super().__init__(
            marks=[self._bars, self._limit, self._hbm, self._totals],
            axes=axes,
            legend_location="top-right",
            title="Peak memory per chip",
            fig_margin=dict(top=40, bottom=40, left=70, right=20),
            layout=w.Layout(width="100%", min_width="300px", height="460px"),
        )
        self.add_class("sw-memory-bar")
        if scenario is not None:
            dlink((Analysis.of(scenario), "memory"), (self, "data"))

    @observe("data")
    def _redraw(self, change=None) -> None:
        d = self.data
        if d is None:
            return
        totals, hbm, limit = d.totals / GB, d.hbm_bytes / GB, d.limit_bytes / GB
        top = clipped_at(d)
        clipped = totals > top
        # its parts in proportion
        shown = d.parts / GB * np.where(clipped, top / np.where(clipped, totals, 1), 1)
        # Short names under the bars, so that they never run into each other; the layout's own
        # name is in the tooltip and the summary.
        labels = [
            ("● " if name == d.current else "") + STRATEGIES[name].label for name in d.strategies
        ]
        with self._bars.hold_sync():
            self._bars.x, self._bars.y = labels, shown
        stage = (
            d.stages[d.strategies.index(d.current)]
            if d.stages and d.current in d.strategies
            else ""
        )
        self.title = "Peak memory per chip" + (f" (busiest: {stage})" if stage else "")
        self.axes[1].scale.max = top / (1 - LEGEND_BAND)
        with self._hbm.hold_sync():
            self._hbm.y = [hbm, hbm]
            self._hbm.labels = [f"HBM {nbytes(d.hbm_bytes)}"]
        with self._limit.hold_sync():
            self._limit.y, self._limit.visible = [limit, limit], bool(limit < hbm)
            self._limit.labels = [f"fits below {limit / hbm:.0%}"]
            self._limit.display_legend = bool(limit < hbm)
        with self._totals.hold_sync():
            self._totals.x, self._totals.y = labels, np.clip(totals, top * 0.04, top * 0.97)
            runs = d.runs or (True,) * len(totals)
            said = d.verdicts or ("fits",) * len(totals)
            self._totals.text = [
                "cannot run" if not run else f"{nbytes(t * GB)}{SAID[v]}{' ▲' if cut else ''}"
                for t, v, run, cut in zip(totals, said, runs, clipped)
            ]
            self._totals.colors = [
                color("grey") if not run else color(VERDICT_COLORS[v]) for v, run in zip(said, runs)
            ]

    def _on_bars_hover(self, mark, event) -> None:
        """The hovered piece: its strategy, its part of memory and its size."""
        data, d = event.get("data", {}), self.data
        index, part = data.get("index"), data.get("sub_index")
        if d is None or index is None or part is None:
            return
        stage = f", {d.stages[index]}" if d.stages and d.stages[index] else ""
        beside = d.runtime_bytes  # held beside the allocator, named (MODEL.md §E.5)
        runtime = f"; CUDA's context and NCCL hold {nbytes(beside)} more" if beside else ""
        self._bars.tooltip.value = (
            f"{d.labels[index]}{stage}: {KINDS[part]} {nbytes(float(d.parts[part, index]))}"
            f" of {nbytes(float(d.totals[index]))}, against HBM's usable"
            f" {nbytes(float(d.hbm_bytes))}{runtime}"
        )
