"""PipelinePicture: the layout's pipeline schedule, pass by pass on each stage, the bubble as the
gaps (MODEL.md §A.6, §B.6). Drawn from ``cost.timeline``, whose bubble equals the estimate's."""

from __future__ import annotations

import bqplot as bq
import numpy as np
from traitlets import Instance, observe

from ..cost import Estimate
from ..cost.schedules import SCHEDULES, runs
from ..cost.step.timeline import timeline
from ._base import EstimateFigure, check_kwargs, vertical_axis
from .scenario import Scenario
from .theme import color

FORWARD, BACKWARD, WEIGHTS, PAIRED = color("blue"), color("orange"), color("green"), color("grey")
COLORS = {"F": FORWARD, "B": BACKWARD, "W": WEIGHTS}
MOST_MICROBATCHES = 32  # beyond this a picture shows nothing more: the pattern repeats


class PipelinePicture(EstimateFigure):
    """Forward (blue) and backward (orange) passes of each stage over one step, in slots; a
    zero-bubble schedule's weight-gradient passes in green; a forward and a backward run as a
    pair (DualPipe's) underlined in grey.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario whose ``Analysis`` the figure follows; None: none, ``data`` is set by hand.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    data : Estimate or None
        The estimate whose schedule is drawn: its stages Z, microbatches and schedule.
    """

    data = Instance(Estimate, allow_none=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("PipelinePicture", kwargs)
        sx, sy = bq.LinearScale(min=0), bq.LinearScale(reverse=True)
        self._passes = bq.Lines(
            x=[[0, 0]], y=[[0, 0]], scales={"x": sx, "y": sy}, stroke_width=10, colors=[FORWARD]
        )
        # a pair's two passes share their time: a thin line under the two, as DualPipe draws it
        self._pairs = bq.Lines(
            x=[[0, 0]], y=[[0, 0]], scales={"x": sx, "y": sy}, stroke_width=3, colors=[PAIRED]
        )
        # a tick on each stage: between them the integer format repeats its neighbours' labels
        self._stages = vertical_axis(sy, label="stage", tick_format="d", tick_values=[0])
        axes = [bq.Axis(scale=sx, label="time in forward slots of one microbatch"), self._stages]
        super().__init__(
            scenario,
            "sw-pipeline-picture",
            [self._passes, self._pairs],
            axes,
            "Pipeline schedule",
            "200px",
        )

    @observe("data")
    def _redraw(self, change=None) -> None:
        e = self.data
        if e is None:
            return
        Z, m, v = int(e.z), int(e.microbatches), int(e.virtual_stages)
        # A schedule in chunks runs its microbatches in groups of Z: show whole groups.
        groups = Z if SCHEDULES[e.schedule].takes_virtual_stages else 1
        shown = min(m, MOST_MICROBATCHES // groups * groups or groups)
        if not runs(schedule=e.schedule, stages=Z, microbatches=shown):
            shown = m  # fewer would not run (DualPipe's m ≥ 2Z): all of them
        try:
            t = timeline(
                schedule=e.schedule,
                stages=Z,
                microbatches=shown,
                virtual_stages=v,
                combined=e.layout.ep_overlap,
            )
        except ValueError as err:  # e.g. interleaving in groups of Z microbatches: this m has none
            self._passes.x, self._passes.y = [[0, 0]], [[0, 0]]
            self._pairs.x, self._pairs.y = [[0, 0]], [[0, 0]]
            self.title = f"{e.schedule}, {Z} stages x {m} microbatches: no picture ({err})"
            return
        self._stages.tick_values = np.arange(Z)
        with self._passes.hold_sync():
            self._passes.x = np.column_stack([t.start, t.end])
            self._passes.y = np.column_stack([t.device, t.device])
            self._passes.colors = [COLORS[k] for k in t.kind]
        under = t.device[t.paired] + 0.3  # below the bar of its stage
        with self._pairs.hold_sync():
            self._pairs.x = (
                np.column_stack([t.start[t.paired], t.end[t.paired]]) if len(under) else [[0, 0]]
            )
            self._pairs.y = np.column_stack([under, under]) if len(under) else [[0, 0]]
        more = f" (the first {shown} of {m} microbatches)" if shown < m else ""
        self.title = (
            f"{e.schedule}{' combined' * e.layout.ep_overlap}, {Z} stages x {m} microbatches"
            f"{more}: bubble {t.bubble:.0%}"
            if Z > 1
            else "No pipeline: one stage"
        )
