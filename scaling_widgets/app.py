"""The composed panel: every widget bound to one scenario. ``explore(...)`` builds it."""

from __future__ import annotations

import ipywidgets as w

from .widgets import (
    Compare,
    ExactnessControls,
    Export,
    MemoryBar,
    MeshPicker,
    ModelPicker,
    PipelinePicture,
    Recommendations,
    RooflineControls,
    RooflinePlot,
    RunControls,
    StepBreakdown,
    StrategyMapView,
    StrategySelector,
    Summary,
    TrainingControls,
)
from .widgets._base import Message
from .widgets.analysis import Analysis
from .widgets.scenario import Scenario
from .widgets.theme import Style

# Two columns side by side where they fit, one above the other where they do not.
ROW = {"flex_flow": "row wrap", "align_items": "flex-start", "width": "100%"}


def column(children, grow: int = 1, basis: str = "440px") -> w.VBox:
    return w.VBox(children, layout=w.Layout(flex=f"{grow} 1 {basis}", min_width="0"))


class Panel(w.VBox):
    """Model, training, mesh and strategy controls; the roofline, the memory bars, the summary.

    ``.scenario`` is the shared state: set it from code and every part follows.
    """

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.analysis = Analysis.of(scenario)
        self.model_picker = ModelPicker(scenario)
        self.training = TrainingControls(scenario)
        self.exactness = ExactnessControls(scenario)
        self.run = RunControls(scenario)
        self.mesh_picker = MeshPicker(scenario)
        self.strategy_selector = StrategySelector(scenario)
        self.roofline = RooflinePlot(scenario)
        self.roofline_controls = RooflineControls(self.roofline)
        self.memory_bar = MemoryBar(scenario)
        self.step_breakdown = StepBreakdown(scenario)
        self.pipeline = PipelinePicture(scenario)
        self.summary = Summary(scenario)
        self.export = Export(scenario)
        self.compare = Compare(scenario)
        self.recommendations = Recommendations(scenario, on_pin=self.compare.pin)
        self.strategy_map = StrategyMapView(scenario)
        self._message = Message()
        self.analysis.observe(self._on_analysis_error, "error")
        title = w.HTML("<h3>How to parallelize this transformer</h3>")
        beyond = w.Accordion([self.exactness, self.run])  # closed: the chapter's model first
        beyond.set_title(0, "Beyond the chapter: exactness and memory headroom")
        beyond.set_title(1, "The whole run: failures, checkpoints, energy and cost")
        beyond.selected_index = None
        controls = w.HBox(
            [
                column([self.model_picker, self.training, beyond]),
                column([self.mesh_picker, self.strategy_selector]),
            ],
            layout=w.Layout(**ROW),
        )
        plots = w.HBox(
            [
                column([self.roofline, self.roofline_controls], grow=3, basis="480px"),
                column(
                    [self.memory_bar, self.step_breakdown, self.pipeline], grow=2, basis="400px"
                ),
            ],
            layout=w.Layout(**ROW),
        )
        planner = w.Accordion([self.recommendations])
        planner.set_title(0, "Recommendations: the best layouts of this cluster")
        landscape = w.Accordion([self.strategy_map])
        landscape.set_title(0, "Strategy map: which layout wins at each batch and count of chips")
        landscape.selected_index = None
        compare = w.Accordion([self.compare])
        compare.set_title(0, "Compare: pinned scenarios side by side")
        compare.selected_index = None
        export = w.Accordion([self.export])
        export.set_title(0, "Export: this scenario as JSON, as a command and as launch files")
        export.selected_index = None
        super().__init__(
            [
                Style(),
                title,
                controls,
                self._message,
                self.summary,
                plots,
                planner,
                landscape,
                compare,
                export,
            ]
        )
        self.add_class("sw-panel")

    def _on_analysis_error(self, change) -> None:
        if change["new"]:
            self._message.show(change["new"])
        else:
            self._message.clear()


def explore(**scenario) -> Panel:
    """The whole panel for a scenario: ``explore(model="llama-2-13b", hardware="tpu-v5p",
    slice_shape=(16, 16, 16), batch=3e6)``. Keywords are those of ``Scenario``; others raise."""
    return Panel(Scenario(**scenario))
