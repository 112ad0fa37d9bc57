"""StepBreakdown: where the predicted step goes, term by term, as one stacked bar (MODEL.md §C.5).

The title gives the step and its MFU, short enough for the narrowest panel; each piece of the bar
names its term in a tooltip, and the summary names the largest beside the matmuls.

With an MFU given the step is the chapter's (compute at that utilisation): the bar then shows
it whole as "compute at the given MFU" and says so.
"""

from __future__ import annotations

import bqplot as bq
import numpy as np
from traitlets import Instance, observe

from ..cost import Estimate
from ..cost.evaluation.predict import TERMS
from ..text.step import TERM_NAMES
from ..text.units import seconds
from ._base import EstimateFigure, check_kwargs
from .scenario import Scenario
from .theme import color

# One color per term, in TERMS' order; stacked bars need explicit colors.
TERM_COLORS = [
    color(name)
    for name in (
        "blue",
        "cyan",
        "orange",
        "olive",
        "red",
        "green",
        "pink",
        "purple",
        "indigo",
        "teal",
        "brown",
        "grey",
        "gold",
    )
]


class StepBreakdown(EstimateFigure):
    """The step of the scenario's layout as a horizontal bar of its terms [s].

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario whose ``Analysis`` the figure follows; None: none, ``data`` is set by hand.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    data : Estimate or None
        The estimate whose step is drawn, term by term [s].
    """

    data = Instance(Estimate, allow_none=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("StepBreakdown", kwargs)
        sx, sy = bq.LinearScale(min=0), bq.OrdinalScale()
        self._bars = bq.Bars(
            x=["step"],
            y=np.zeros((len(TERMS), 1)),
            scales={"x": sy, "y": sx},
            orientation="horizontal",
            type="stacked",
            colors=TERM_COLORS,
            labels=[TERM_NAMES[t] for t in TERMS],
            tooltip=bq.Tooltip(fields=["y"], labels=["seconds"], formats=[".3s"]),
        )
        axes = [
            bq.Axis(scale=sx, label="seconds per step", tick_format=".3s"),
            bq.Axis(scale=sy, side="left"),
        ]
        super().__init__(scenario, "sw-step-breakdown", [self._bars], axes, "Step time", "160px")

    @observe("data")
    def _redraw(self, change=None) -> None:
        e = self.data
        if e is None:
            return
        if e.step_breakdown is None:  # the chapter's step: compute at the given (or measured) MFU
            parts = np.zeros(len(TERMS))
            parts[0] = float(e.step_time)
            how = "measured" if e.calibrated else "at the given MFU"
            title = f"Step time {seconds(float(e.step_time))} ({how})"
        else:
            parts = np.array([float(e.step_breakdown[t]) for t in TERMS])
            # short enough for the figure's half of the panel: the report says the rest
            title = f"Predicted step {seconds(float(e.step_time))}, MFU {float(e.mfu):.0%}"
            if e.step_interval is not None:  # where 80% of out-of-sample runs fell (MODEL.md §F.3)
                low, high = (seconds(float(t)) for t in e.step_interval)
                title = title.replace(", MFU", f" ({low}–{high}), MFU", 1)
            hidden = sum(float(v) for v in (e.hidden or {}).values())
            if hidden > 0:  # a schedule's paired passes hid some expert or CP traffic
                title += f"; pairs hide {seconds(hidden)}"
        with self._bars.hold_sync():
            self._bars.y = parts[:, None]
        self.title = title
