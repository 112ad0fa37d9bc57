"""PipelinePicture: the layout's pipeline schedule, pass by pass on each stage, the bubble as the
gaps (SPEC A.6, B.6). Drawn from ``cost.timeline``, whose bubble equals the estimate's."""

from __future__ import annotations

import bqplot as bq
import ipywidgets as w
import numpy as np
from traitlets import Instance, dlink, observe

from ..cost import Estimate
from ..cost.timeline import timeline
from ._base import check_kwargs, vertical_axis
from .analysis import Analysis
from .scenario import Scenario

FORWARD, BACKWARD = "#1f77b4", "#ff7f0e"
MOST_MICROBATCHES = 32  # beyond this a picture shows nothing more: the pattern repeats


class PipelinePicture(bq.Figure):
    """Forward (blue) and backward (orange) passes of each stage over one step, in slots."""

    data = Instance(Estimate, allow_none=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("PipelinePicture", kwargs)
        sx, sy = bq.LinearScale(min=0), bq.LinearScale(reverse=True)
        self._passes = bq.Lines(x=[[0, 0]], y=[[0, 0]], scales={"x": sx, "y": sy}, stroke_width=10, colors=[FORWARD])
        axes = [bq.Axis(scale=sx, label="time in forward slots of one microbatch"),
                vertical_axis(sy, label="stage", tick_format="d")]  # fmt: skip
        super().__init__(
            marks=[self._passes], axes=axes, title="Pipeline schedule",
            fig_margin=dict(top=40, bottom=40, left=50, right=20), layout=w.Layout(width="520px", height="200px"),
        )  # fmt: skip
        self.add_class("sw-pipeline-picture")
        if scenario is not None:
            dlink((Analysis.of(scenario), "estimate"), (self, "data"))

    @observe("data")
    def _redraw(self, change=None) -> None:
        e = self.data
        if e is None:
            return
        Z, m, v = int(e.z), int(e.microbatches), int(e.virtual_stages)
        shown = min(m, MOST_MICROBATCHES if e.schedule != "interleaved" else MOST_MICROBATCHES // Z * Z or Z)
        t = timeline(schedule=e.schedule, stages=Z, microbatches=shown, virtual_stages=v)
        with self._passes.hold_sync():
            self._passes.x = np.column_stack([t.start, t.end])
            self._passes.y = np.column_stack([t.device, t.device])
            self._passes.colors = [BACKWARD if b else FORWARD for b in t.backward]
        more = f" (the first {shown} of {m} microbatches)" if shown < m else ""
        self.title = (f"{e.schedule}, {Z} stages x {m} microbatches{more}: bubble {t.bubble:.0%}" if Z > 1
                      else "No pipeline: one stage")  # fmt: skip
