"""scaling_widgets: how to spread a transformer's training over many chips, as live panels.

The cost model (``scaling_widgets.cost``) is plain numpy and imports no widget library;
``estimate`` evaluates one layout, or a million at once.
"""

from .cost import estimate

__version__ = "0.1.0"
__all__ = ["estimate", "__version__"]
