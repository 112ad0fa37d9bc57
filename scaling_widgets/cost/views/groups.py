"""Where the groups of one layout sit on its slice, as the mesh picker draws it (MODEL.md §A.1,
§A.7)."""

from __future__ import annotations

import math

from ..evaluation.result import Estimate
from ..ground.records import record
from ..hardware.mesh import axis_rings, role_layout, span_axes
from ..hardware.nodes import node_spans
from ..layout.split import split_candidates
from ..transformer.experts import folds_over_tp


@record(eq=False)
class MeshData:
    """How the current layout sits on the slice (MODEL.md §A.1, §A.7)."""

    slice_shape: tuple
    shares: tuple  # per slice axis, outermost first: its (X, Y, Z) factors
    x: int
    y: int  # a pod's share of the TP group
    z: int  # a pod's stages
    pods: int
    mx: float
    my: float
    wrap_x: bool
    wrap_y: bool
    ep: int  # of X's chips, those that split the experts (of TP x X's, where it folds)
    cp: int  # and those that split each sequence: as asked, or as the sequences need
    splits: tuple  # every legal (X, Y) of one pipeline stage, Y ascending
    gpu: bool  # a GPU cluster: the axes are nodes and GPUs per node
    ep_folded: bool = False  # the EP group takes TP's chips first (expert TP 1, MODEL.md §D.2)
    places: tuple = ()  # where X and Y sit, in words (``text/views.py``)
    stages: int = 1  # the pipeline's, Z in each of the pods it spans (MODEL.md §B.10)

    @property
    def chips(self) -> int:
        return math.prod(self.slice_shape) * self.pods


def mesh(e: Estimate) -> MeshData:
    """Where the groups of one layout sit on its slice: each axis's share of X, Y and Z.

    Parameters
    ----------
    e : Estimate
        One evaluated layout (not an array of them).

    Returns
    -------
    data : MeshData
        The slice, each axis' (X, Y, Z) share, the groups and their spans, and every legal
        (X, Y) split of one pipeline stage.
    """
    chip, shape = e.chip, e.slice_shape
    rings = axis_rings(slice_shape=shape, pod_shape=chip.pod_shape, rule=chip.wraparound)
    x, stages, tp = int(e.x), int(e.z), int(e.y)
    # a pod's: the slice holds X·Y·Z chips, of a pipeline and a TP group across pods
    z, y = stages // int(e.layout.pp_pods), tp // int(e.layout.tp_pods)
    if e.layout.axis_roles is not None:
        span = role_layout(slice_shape=shape, roles=e.layout.axis_roles, rings=rings)[3]
    elif chip.is_gpu:
        span = node_spans(
            slice_shape=shape, x=x, y=y, z=z, nvlink_bw=chip.ici_bw, nic_bw=chip.scaleout_bw
        )
    else:
        span = span_axes(slice_shape=shape, x=x, y=y, z=z, rings=rings)
    X, Y = split_candidates(math.prod(shape) // z)
    return MeshData(
        slice_shape=shape,
        shares=tuple(tuple(int(f) for f in axis) for axis in span.shares),
        x=x,
        y=y,
        z=z,
        stages=stages,
        pods=int(e.cluster.pods),
        mx=float(e.mx),
        my=float(e.my),
        wrap_x=bool(e.wrap_x),
        ep=int(e.layout.ep),
        ep_folded=bool(folds_over_tp(e.layout.etp, tp)) and int(e.layout.ep) > 1,
        cp=int(e.layout.cp) // int(e.layout.cp_pods),  # a pod's share of the group
        wrap_y=bool(e.wrap_y),
        splits=tuple(zip(X.tolist(), Y.tolist())),
        gpu=chip.is_gpu,
    )
