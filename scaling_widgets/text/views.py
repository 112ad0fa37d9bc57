"""The plots' words: the name of each roofline curve and memory bar, and where the groups sit
(the data itself is ``cost/views/``'s)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..cost import Estimate
from ..cost.strategies import BEST, STRATEGIES
from ..cost.views import MemoryData, MeshData, RooflineData
from .explain import group_places, layout_name


def curve_names() -> dict:
    """Each roofline curve's short name, for its toggle and its legend.

    Returns
    -------
    names : dict of str to str
        By curve: each strategy, FSDP + TP at this split and at the book's split, and DCN.
    """
    names = {name: s.label for name, s in STRATEGIES.items()}
    names.update(
        {
            BEST: f"{STRATEGIES[BEST].label} (this split)",
            # the chapter's split, re-chosen at each batch; the point is the split in use
            "optimal": f"{STRATEGIES[BEST].label} (book split)",
        }
    )
    return {**names, "dcn": "DCN"}


def roofline(data: RooflineData, current: Estimate) -> RooflineData:
    """Each curve's name: a strategy's own, the chapter's split (re-chosen at each batch), the
    split in use, the pods' DCN.

    Parameters
    ----------
    data : RooflineData
        The roofline's curves, as ``cost/views/`` draws them.
    current : Estimate
        The layout in use: FSDP + TP's curve is named by its split.

    Returns
    -------
    data : RooflineData
        The same curves with their labels; the DCN curve's names the pods when there are
        more than one.
    """
    labels = {name: s.label for name, s in STRATEGIES.items() if name != BEST}
    labels["optimal"] = f"{STRATEGIES[BEST].label}, book split"
    if current.strategy == BEST:
        labels[BEST] = short_name(current)
    # replicas of a pipeline or a TP group across pods (MODEL.md §B.10, §B.11)
    if data.pods > 1 and data.spans > 1:
        labels["dcn"] = f"DCN ({data.pods} replicas of {data.spans} pods)"
    elif data.pods > 1:
        labels["dcn"] = f"DCN ({data.pods} pods)"
    elif "dcn" in data.comm:  # TP across every pod: one group, its traffic on DCN (§B.11)
        labels["dcn"] = f"DCN (TP across {data.spans} pods)"
    return dataclasses.replace(data, labels=labels)


def memory(data: MemoryData) -> MemoryData:
    """Each bar's name (its layout, or why it cannot run) and its busiest stage.

    Parameters
    ----------
    data : MemoryData
        The memory bars, one a strategy, as ``cost/views/`` counts them.

    Returns
    -------
    data : MemoryData
        The same bars with their labels and their busiest stages ("" with one stage).
    """
    labels = tuple(
        short_name(e) if isinstance(e, Estimate) else f"{STRATEGIES[name].label}: cannot run"
        for name, e in zip(data.strategies, data.estimates)
    )
    return dataclasses.replace(data, labels=labels, stages=tuple(_stage(e) for e in data.estimates))


def mesh(data: MeshData, current: Estimate) -> MeshData:
    """Where X and Y sit, in words.

    Parameters
    ----------
    data : MeshData
        The mesh picture's groups, as ``cost/views/`` places them.
    current : Estimate
        The layout in use.

    Returns
    -------
    data : MeshData
        The same with ``places``: a phrase for each of X and Y larger than one chip
        (``explain.group_places``).
    """
    return dataclasses.replace(data, places=tuple(group_places(current)))


def short_name(e: Estimate) -> str:
    """The layout's groups alone: "FSDP X=512 x TP Y=8".

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    name : str
        The first part of ``explain.layout_name``.
    """
    return layout_name(e).split(", ")[0]


def _stage(e) -> str:
    """The busiest stage, briefly: "stage 1 of 4"; "" with one stage, or where it cannot run."""
    if not isinstance(e, Estimate) or int(np.max(e.z)) == 1:
        return ""
    return f"stage {int(e.peak.stage) + 1} of {int(np.max(e.z))}"
