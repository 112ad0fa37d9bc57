"""The reusable widgets. Each takes an optional ``scenario`` and binds itself to it.

Controls (MeshPicker, StrategySelector, ModelPicker, TrainingControls, RunControls) write to
the scenario; views (RooflinePlot, MemoryBar, StepBreakdown, Summary, Export) follow the
scenario's shared ``Analysis``; Recommendations and StrategyMapView plan when asked.
``scenario.py`` holds the shared state, ``analysis.py`` the one observer that evaluates it.

Tier 8 of the package (``tests/test_tiers.py`` declares the order): it imports from launch/,
fields/, text/, the presets and cost/; app.py composes it.
"""

from .compare import Compare
from .exactness_controls import ExactnessControls
from .export import Export
from .folded import folded
from .inputs import BatchInput, StepInput
from .memory_bar import MemoryBar
from .mesh_picker import MeshPicker
from .model_picker import ModelPicker
from .pipeline_picture import PipelinePicture
from .recommendations import Recommendations
from .roofline import RooflineControls, RooflinePlot
from .run_controls import RunControls
from .step_breakdown import StepBreakdown
from .strategy_map import MapPlot, StrategyMapView
from .strategy_selector import StrategySelector
from .summary import Summary
from .training_controls import TrainingControls

__all__ = [
    "BatchInput",
    "Compare",
    "ExactnessControls",
    "Export",
    "MemoryBar",
    "MeshPicker",
    "ModelPicker",
    "PipelinePicture",
    "Recommendations",
    "RooflineControls",
    "RooflinePlot",
    "RunControls",
    "StepBreakdown",
    "StepInput",
    "MapPlot",
    "StrategyMapView",
    "StrategySelector",
    "Summary",
    "TrainingControls",
    "folded",
]
