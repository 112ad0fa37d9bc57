"""GPU clusters: NVLink inside a node, one NIC per GPU across nodes (MODEL.md §B.5).

A GPU slice is (nodes, GPUs used in each): whole nodes, or nodes partly used alike (GB200 NVL72
racks run 64 of their 72 GPUs). Groups are placed as on a TPU slice (``span_axes``):
TP innermost, inside a node first, then FSDP/data, then pipeline. Each group's bandwidth is
given as a multiple of the NVLink egress W (the M_X, M_Y of the TPU formulas):

- inside one node, 1: NVLink;
- a group across nodes, X (data/FSDP) or Y (tensor) alike, min(g·W_nic, W)/W, g its GPUs in a
  node: NCCL runs it as g rings (channels) over the node's rails, each entering the node through
  its own GPU's NIC, so each GPU receives its channel's share through its NIC and the rest over
  NVLink, at once. The NICs bound it at g·W_nic, NVLink at W. H100: 8 x 50 GB/s = 400 GB/s, 0.889
  of NVLink, so FSDP across nodes needs C/400 GB/s = 2,475 tokens per GPU, not 2,200; TP 16 over
  two nodes runs at 0.889 too, never faster than TP 8 inside one. (The GPU chapter's rule for TP
  across nodes, F > (C/W_node)·(Y − 8), counts only the share that crosses and reads TP 16 over two
  nodes at 1.78x NVLink: it leaves out the rest, which still crosses NVLink.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..ground.refusals import refuse
from .mesh import MeshSpan, parse_slice, span_axes


def gpu_slice(*, chips: int, node_size: int) -> tuple[int, int]:
    """(nodes, GPUs per node) for ``chips`` GPUs: whole nodes, or the fewest nodes each partly
    used alike, or else nodes of the largest power of two they hold, as NVIDIA runs GB200 NVL72
    racks at 64 GPUs of 72.

    Parameters
    ----------
    chips : int
        The GPUs to place [chips].
    node_size : int
        The GPUs of a node (its NVLink domain; ``Chip.node_size``) [chips].

    Returns
    -------
    nodes : int
        The nodes the GPUs use.
    per_node : int
        The GPUs of each node in use: ``node_size``, or as many in each of the fewest nodes.

    Raises
    ------
    InputError
        Naming ``chips`` when no count of nodes holds them evenly, with the nearest that do.

    Examples
    --------
    >>> gpu_slice(chips=4096, node_size=8), gpu_slice(chips=4, node_size=8)
    ((512, 8), (1, 4))
    >>> gpu_slice(chips=128, node_size=72), gpu_slice(chips=1024, node_size=72)
    ((2, 64), (16, 64))
    """
    if _even(chips, node_size):
        nodes = -(-chips // node_size)
        return (nodes, chips // nodes)
    # Else nodes at a power of two each, as NVIDIA runs its 72-GPU racks at 64 (1,024 GPUs: 16).
    binary = 1 << (node_size.bit_length() - 1)
    if chips % binary == 0:
        return (chips // binary, binary)
    runs = [
        n for n in range(max(chips - node_size, 1), chips + node_size + 1) if _held(n, node_size)
    ]
    lower = max((n for n in runs if n < chips), default=None)
    upper = min(n for n in runs if n > chips)
    nearest = f"{lower:,} or {upper:,}" if lower else f"{upper:,}"
    raise refuse(
        "chips",
        f"a count the fewest nodes of {node_size} hold evenly"
        + (f", or nodes of {binary} hold" if binary != node_size else "")
        + f", such as {nearest}",
        chips,
    )


def _held(chips: int, node_size: int) -> bool:
    """Whether ``gpu_slice`` places ``chips`` GPUs."""
    binary = 1 << (node_size.bit_length() - 1)
    return _even(chips, node_size) or chips % binary == 0


def _even(chips: int, node_size: int) -> bool:
    """Whether the fewest nodes that hold ``chips`` GPUs hold the same number each."""
    return chips % -(-chips // node_size) == 0


def check_gpu_slice(slice_shape: Sequence[int], pod_shape: Sequence[int]) -> tuple[int, int]:
    """The slice if it is (nodes, GPUs used in each) within the cluster, else ``InputError``.

    Parameters
    ----------
    slice_shape : sequence of int
        The slice asked for, (nodes, GPUs per node).
    pod_shape : sequence of int
        The cluster's (nodes, GPUs per node) (``Chip.pod_shape``).

    Returns
    -------
    shape : tuple of (int, int)
        The slice, (nodes, GPUs per node).

    Raises
    ------
    InputError
        Naming ``slice_shape`` when it has more nodes than the cluster, or more GPUs a node.
    """
    shape = parse_slice(slice_shape)
    nodes, per_node = pod_shape
    ok = len(shape) == 2 and shape[0] <= nodes and shape[1] <= per_node
    if not ok:
        raise refuse(
            "slice_shape",
            f"(nodes, GPUs used in each) on a GPU cluster: at most {nodes}x{per_node}",
            "x".join(map(str, shape)),
        )
    return shape


def node_spans(
    *,
    slice_shape: Sequence[int],
    x: ArrayLike,
    y: ArrayLike = 1,
    z: ArrayLike = 1,
    nvlink_bw: ArrayLike,
    nic_bw: ArrayLike,
) -> MeshSpan:
    """Spans of X and Y as multiples of the NVLink egress (rule above).

    Parameters
    ----------
    slice_shape : sequence of int
        The slice, (nodes, GPUs per node).
    x : int or array_like
        X, the data/FSDP group [chips].
    y : int or array_like, default 1
        Y, the tensor group [chips].
    z : int or array_like, default 1
        Z, the pipeline stages [chips].
    nvlink_bw : float or array_like
        W, a GPU's NVLink egress [bytes/s].
    nic_bw : float or array_like
        W_nic, a GPU's NIC [bytes/s].

    Returns
    -------
    span : MeshSpan
        M_X and M_Y as multiples of the NVLink egress (``mx``, ``my``), the pipeline group's
        axes (``mz``), each axis' (X, Y, Z) share; every group counts as a ring.

    References
    ----------
    .. [1] docs/MODEL.md §B.5 (GPU clusters).
    .. [2] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.

    Examples
    --------
    >>> s = node_spans(slice_shape=(512, 8), x=[4096, 512, 256], y=[1, 8, 16], nvlink_bw=4.5e11,
    ...                nic_bw=5e10)
    >>> s.mx.round(3).tolist(), s.my.round(3).tolist()
    ([0.889, 0.111, 0.111], [1.0, 1.0, 0.889])
    """
    placed = span_axes(slice_shape=slice_shape, x=x, y=y, z=z)
    nodes_axis, gpus_axis = placed.shares  # outermost first: (X, Y, Z) shares of each axis
    x_per_node, y_per_node = gpus_axis[0], gpus_axis[1]
    x_across, y_across = nodes_axis[0] > 1, nodes_axis[1] > 1
    mx = np.where(x_across, _rails(x_per_node, nic_bw, nvlink_bw), 1.0)
    my = np.where(y_across, _rails(y_per_node, nic_bw, nvlink_bw), 1.0)
    inside = np.ones(np.shape(mx), dtype=bool)
    return MeshSpan(
        mx=mx,
        my=my,
        mz=placed.mz,
        wrap_x=inside,
        wrap_y=inside,
        shares=placed.shares,
        shared_axes=0,
    )


def _rails(per_node: ArrayLike, nic_bw: ArrayLike, nvlink_bw: ArrayLike) -> np.ndarray:
    """A group across nodes in units of NVLink: its g GPUs of a node each carry one ring through
    their own NIC, g·W_nic together, never above NVLink's W (the module docstring)."""
    return np.minimum(np.asarray(per_node) * nic_bw, nvlink_bw) / nvlink_bw
