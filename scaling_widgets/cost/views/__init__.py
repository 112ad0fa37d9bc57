"""What the panel's plots draw, computed from the four values: the roofline over the batch, each
strategy's peak memory by part, and where the groups sit on the slice (MODEL.md §A.3, §A.7, §E.1).

They are here, beside ``evaluate``, so that the API and the CLI reach the same numbers the panel
draws. Their labels are words, which ``text/views.py`` adds (``labels`` and ``places`` are
empty here).

Tier 9 of cost/, the top, beside search/, calibrate.py and compare.py (``tests/test_tiers.py``
declares the order): it imports from evaluation/ and every tier below; only cost/__init__.py sits
above it."""

from .bars import BAR_PARTS, MemoryData, memory_bars
from .curves import CURVES, GRID_POINTS, RooflineData, batch_grid, roofline
from .groups import MeshData, mesh

__all__ = [
    "BAR_PARTS",
    "CURVES",
    "GRID_POINTS",
    "MemoryData",
    "MeshData",
    "RooflineData",
    "batch_grid",
    "memory_bars",
    "mesh",
    "roofline",
]
