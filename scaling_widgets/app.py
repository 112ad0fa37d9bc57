"""The composed panel: every widget bound to one scenario. ``explore(...)`` builds it."""

from __future__ import annotations

import ipywidgets as w

from .cost.search.plan import chooses_layout, scenario_plan
from .fields.keywords import fields_named
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
from .widgets.recommendations import AS_ROW
from .widgets.scenario import Scenario
from .widgets.theme import Style

# Two columns side by side where they fit, one above the other where they do not.
ROW = {"flex_flow": "row wrap", "align_items": "flex-start", "width": "100%"}


def column(children, grow: int = 1, basis: str = "440px") -> w.VBox:
    """A column of the panel: it takes its share of a row's width, and wraps below the other
    where the row is too narrow.

    Parameters
    ----------
    children : list of ipywidgets.Widget
        The widgets of the column, top to bottom.
    grow : int, default 1
        Its flex-grow: its share of the row's width beyond ``basis``.
    basis : str, default "440px"
        Its flex-basis: the CSS width it starts from.

    Returns
    -------
    column : ipywidgets.VBox
        The column.
    """
    return w.VBox(children, layout=w.Layout(flex=f"{grow} 1 {basis}", min_width="0"))


class Panel(w.VBox):
    """Model, training, mesh and strategy controls; the roofline, the memory bars, the summary.

    ``.scenario`` is the shared state: set it from code and every part follows.

    Parameters
    ----------
    scenario : Scenario
        The scenario every part is bound to.

    Attributes
    ----------
    scenario : Scenario
        The shared state.
    analysis : Analysis
        The scenario's shared analysis.
    model_picker : ModelPicker
        The model.
    training : TrainingControls
        The batch, sequence length, step, precision and stack.
    exactness : ExactnessControls
        The corrections beyond the chapter and the share of HBM a layout may fill.
    run : RunControls
        The whole run: failures, checkpoints, energy and cost.
    mesh_picker : MeshPicker
        The chip, the slice, the pods and the axes' roles.
    strategy_selector : StrategySelector
        The strategy, the split, the pipeline and the groups out of the data axis.
    roofline : RooflinePlot
        Per-layer compute and communication over the global batch.
    roofline_controls : RooflineControls
        The roofline's passes and curves.
    memory_bar : MemoryBar
        Each strategy's peak per chip against HBM.
    step_breakdown : StepBreakdown
        The step, term by term.
    pipeline : PipelinePicture
        The pipeline schedule.
    summary : Summary
        The estimate in words and formulas.
    export : Export
        The scenario as JSON, as a command and as launch files.
    compare : Compare
        Pinned scenarios side by side.
    recommendations : Recommendations
        The planner's best layouts, which pin to ``compare``.
    strategy_map : StrategyMapView
        The best layout at each batch and count of chips.
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
        parts = [title, self._controls(), self._message, self.summary, self._plots()]
        super().__init__([Style(), *parts, *self._sections()])
        self.add_class("sw-panel")

    def _controls(self) -> w.HBox:
        """The choices: model and training (the chapter's model first, what goes beyond it
        folded), then the mesh and the strategy."""
        beyond = w.Accordion([self.exactness, self.run])
        beyond.set_title(0, "Beyond the chapter: exactness and memory headroom")
        beyond.set_title(1, "The whole run: failures, checkpoints, energy and cost")
        beyond.selected_index = None
        return w.HBox(
            [
                column([self.model_picker, self.training, beyond]),
                column([self.mesh_picker, self.strategy_selector]),
            ],
            layout=w.Layout(**ROW),
        )

    def _plots(self) -> w.HBox:
        """The roofline beside the memory, the step and the pipeline."""
        return w.HBox(
            [
                column([self.roofline, self.roofline_controls], grow=3, basis="480px"),
                column(
                    [self.memory_bar, self.step_breakdown, self.pipeline], grow=2, basis="400px"
                ),
            ],
            layout=w.Layout(**ROW),
        )

    def _sections(self) -> list[w.Accordion]:
        """The planner's recommendations (open), then the strategy map, the comparison and the
        export (folded)."""
        titled = (
            (self.recommendations, "Recommendations: the best layouts of this cluster"),
            (self.strategy_map, "Strategy map: which layout wins at each batch and count of chips"),
            (self.compare, "Compare: pinned scenarios side by side"),
            (self.export, "Export: this scenario as JSON, as a command and as launch files"),
        )
        sections = []
        for widget, title in titled:
            section = w.Accordion([widget])
            section.set_title(0, title)
            if widget is not self.recommendations:
                section.selected_index = None
            sections.append(section)
        return sections

    def _on_analysis_error(self, change) -> None:
        if change["new"]:
            self._message.show(change["new"])
        else:
            self._message.clear()


def explore(**scenario) -> Panel:
    """The whole panel for a scenario: ``explore(model="llama-2-13b", hardware="tpu-v5p",
    slice_shape=(16, 16, 16), batch=3e6)``. Keywords are those of ``Scenario``; others raise.
    Given no layout of one's own (``strategy``, a split, ``zero``, ``microbatches``, ...), it opens
    on the plan's first row, as ``scaling-widgets estimate`` and ``scaling_widgets.estimate`` do.

    Parameters
    ----------
    **scenario
        The scenario's fields, in either form ``Scenario`` takes.

    Returns
    -------
    panel : Panel
        The panel, bound to a new ``Scenario`` of those fields.

    Raises
    ------
    ScenarioError
        A value the scenario cannot take.
    TypeError
        A keyword that names no field.
    """
    return Panel(_opened(scenario))


def _opened(scenario: dict) -> Scenario:
    """The scenario of these keywords, on the plan's first row where they choose no layout (the
    defaults' own where none of the plan fits: it shows by how much)."""
    opened = Scenario(**scenario)
    named = fields_named(scenario, opened.state())
    if chooses_layout(named) or "optimal_split" in named:
        return opened
    try:
        ranked = scenario_plan(opened.values(), named)
    except ValueError:
        return opened
    opened.update(**AS_ROW, **ranked.layout(0))
    return opened
