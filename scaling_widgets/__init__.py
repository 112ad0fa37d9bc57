"""scaling_widgets: how to spread a transformer's training over many chips, as live panels.

The cost model (``scaling_widgets.cost``) is plain numpy and imports no widget library;
``estimate`` evaluates one layout, or a million at once; ``plan`` ranks every layout of a
cluster; ``explore`` opens the panel.
"""

from .cost import estimate, plan

__version__ = "0.1.0"
__all__ = ["Scenario", "estimate", "explore", "plan", "__version__"]


def __getattr__(name):
    # The widgets load on first use, so the cost layer and the CLI never import ipywidgets.
    if name == "explore":
        from .app import explore

        return explore
    if name == "Scenario":
        from .scenario import Scenario

        return Scenario
    raise AttributeError(f"module 'scaling_widgets' has no attribute {name!r}")
