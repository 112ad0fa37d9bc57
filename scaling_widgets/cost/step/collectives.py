"""What a collective costs on the tier it crosses (MODEL.md §C.2, §F.1): a ring's bytes at the
achievable share of ICI, NVLink or the NICs, and a ring's steps, each a latency."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..hardware.chip import Chip
from .profiles import Profile


def collective_time(
    *,
    nbytes: float | np.ndarray,
    group: ArrayLike,
    bandwidth: ArrayLike,
    efficiency: ArrayLike,
    latency: float | np.ndarray,
    kind: str = "all-reduce",
    axes: ArrayLike = 1,
    nvls: ArrayLike = 0.0,
) -> np.ndarray:
    """A collective over ``group`` chips [s]: an all-reduce moves 2·(n − 1)/n of the array, an
    all-gather or reduce-scatter (n − 1)/n, at the ring's bandwidth, in 2·(n − 1) or n − 1 steps
    of ``latency`` each (nccl-tests' times on 8 to 1,440 GPUs fit a ring's steps of a few
    microseconds, where a tree's log2(n) could not fit 2 racks and 20 at once, MODEL.md §F.1);
    a group over ``axes`` axes of a TPU torus runs a ring along each, a·(n^(1/a) − 1) steps;
    nothing when the group is one chip. Where the switch reduces in the network (``nvls`` above
    0), an all-reduce may instead send the array once and receive the sum once, V/(W·e_nvls)
    after the ring's latencies, and NCCL runs the faster of the two (MODEL.md §F.1).

    Parameters
    ----------
    nbytes : float or array_like
        V, the array each chip holds, in its gathered form [bytes].
    group : int or array_like
        n, the chips in the group [chips].
    bandwidth : float or array_like
        W, the ring's bandwidth per chip (``group_bandwidth``) [bytes/s].
    efficiency : float or array_like
        e, the share of W the ring achieves (``link_efficiency``).
    latency : float or array_like
        λ, the latency of one step of the ring [s].
    kind : str, default "all-reduce"
        "all-reduce", or any other name for an all-gather or a reduce-scatter.
    axes : int or array_like, default 1
        a, the torus axes the group spans (1 on GPUs: one ring over all of them).
    nvls : float or array_like, default 0
        e_nvls, the share of W an all-reduce through the switch reaches (``nvls_share``); 0:
        the switch has none, or the group leaves it.

    Returns
    -------
    time : np.ndarray
        The collective's time [s]; 0 for a group of one.

    References
    ----------
    .. [1] docs/MODEL.md §C.2 (collectives at ring bandwidth, a latency a step), §A.2 (a
       collective over a ring) and §F.1 (each tier's share and latency, from nccl-tests).

    Examples
    --------
    >>> float(collective_time(nbytes=1e9, group=8, bandwidth=1e11, efficiency=0.5, latency=0.0))
    0.035
    """
    rounds = 2.0 if kind == "all-reduce" else 1.0
    per_byte, per_round = ring_costs(
        group=group, bandwidth=bandwidth, efficiency=efficiency, latency=latency, axes=axes
    )
    ring = rounds * (nbytes * per_byte + per_round)
    if kind != "all-reduce" or not np.any(nvls):
        return ring
    # through the switch: the array out once and the sum back once, after as many steps' latency
    rate = np.asarray(bandwidth, dtype=float) * np.where(np.asarray(nvls) > 0, nvls, 1.0)
    through_switch = np.where(np.asarray(nvls) > 0, nbytes / rate + rounds * per_round, np.inf)
    return np.where(np.asarray(group) > 1, np.minimum(ring, through_switch), ring)


def ring_costs(
    *,
    group: ArrayLike,
    bandwidth: ArrayLike,
    efficiency: ArrayLike,
    latency: float | np.ndarray,
    axes: ArrayLike = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """A ring's two costs a round (``collective_time``): seconds per byte of the array,
    (n − 1)/(n·W·e), and seconds of its steps' latency, a·(n^(1/a) − 1)·λ; both 0 for a group of
    one. Several collectives over one group share them.

    Parameters
    ----------
    group : int or array_like
        n, the chips in the group [chips].
    bandwidth : float or array_like
        W, the ring's bandwidth per chip (``group_bandwidth``) [bytes/s].
    efficiency : float or array_like
        e, the share of W the ring achieves (``link_efficiency``).
    latency : float or array_like
        λ, the latency of one step of the ring [s].
    axes : int or array_like, default 1
        a, the torus axes the group spans (1 on GPUs: one ring over all of them).

    Returns
    -------
    per_byte : np.ndarray
        The seconds a round takes per byte of the array [s/byte].
    per_round : np.ndarray
        The seconds of a round's steps of latency [s].

    References
    ----------
    .. [1] docs/MODEL.md §C.2 (collectives at ring bandwidth, a latency a step).
    """
    n = np.asarray(group, dtype=float)
    alone = n <= 1
    rate = np.asarray(bandwidth, dtype=float) * efficiency
    per_byte = np.where(alone, 0.0, (n - 1) / (n * np.where(alone, 1.0, rate)))
    return per_byte, np.where(alone, 0.0, _ring_steps(n, axes) * latency)


def _ring_steps(n: np.ndarray, axes: ArrayLike) -> np.ndarray:
    """a·(n^(1/a) − 1), a ring along each of a torus's a axes (a square or cube root, cheaper than
    a power; a GPU's one ring is n − 1)."""
    a = np.maximum(np.asarray(axes, dtype=float), 1.0)
    n = np.maximum(n, 1.0)
    if np.all(a == 1):
        return n - 1
    if np.any(a > 3):
        return a * (n ** (1 / a) - 1)
    return a * (np.where(a == 1, n, np.where(a == 2, np.sqrt(n), np.cbrt(n))) - 1)


def group_bandwidth(
    chip: Chip, span: ArrayLike, crosses: ArrayLike = False, per_node: ArrayLike = 1
) -> float | np.ndarray:
    """A group's bandwidth per chip [bytes/s]: on a TPU, the axes it spans times W_ici; on GPUs,
    NVLink inside a node, and across nodes (``crosses``) the NICs of the group's ``per_node``
    GPUs in each node, at most NVLink: a ring crosses each node once per channel, one channel a
    NIC, so a group of whole nodes has every NIC of a node (nccl-tests across DGX nodes reach a
    node's NIC bandwidth as bus bandwidth, MODEL.md §F.1), and a group of one GPU a node one.

    Parameters
    ----------
    chip : Chip
        The chip: a TPU (its W_ici a mesh axis) or a GPU (NVLink, its NIC, its node).
    span : float or array_like
        M, the mesh axes the group spans on a TPU (M_X or M_Y); not read on GPUs.
    crosses : bool or array_like, default False
        Whether the group leaves its NVLink node (``crosses_nodes``); not read on a TPU.
    per_node : int or array_like, default 1
        The group's GPUs in each node, each sending through its own NIC [chips]; not read on a
        TPU.

    Returns
    -------
    bandwidth : float or np.ndarray
        The group's bandwidth per chip [bytes/s].

    References
    ----------
    .. [1] docs/MODEL.md §C.2 (a group across nodes gets the NICs of its GPUs in each node, at
       most NVLink), §B.5 (GPU clusters) and §A.1 (M·W_ici for a group spanning M axes).
    .. [2] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    """
    if not chip.is_gpu:
        return np.asarray(span, dtype=float) * chip.ici_bw
    across = np.minimum(chip.ici_bw, chip.scaleout_bw * np.asarray(per_node, dtype=float))
    return np.where(crosses, across, chip.ici_bw)


def crosses_nodes(chip: Chip, *inner_groups: ArrayLike) -> np.bool_ | np.ndarray:
    """Whether a group leaves its NVLink node: the groups inside it (TP first) outgrow the node.

    Parameters
    ----------
    chip : Chip
        The GPU, whose ``node_size`` is its NVLink domain [chips].
    *inner_groups : int or array_like
        The size of the group and of the groups placed in the node before it (Y alone for TP;
        X and Y for the data group) [chips].

    Returns
    -------
    crosses : np.bool_ or np.ndarray
        True where the product of the groups' sizes exceeds the chip's node size.
    """
    return (
        np.prod(np.broadcast_arrays(*(np.asarray(g) for g in inner_groups)), axis=0)
        > chip.node_size
    )


def nvls_share(chip: Chip, profile: Profile, crosses: ArrayLike = False) -> np.ndarray:
    """The share of NVLink an all-reduce through the switch reaches (NVLS, MODEL.md §F.1): the
    chip's where the group stays inside its NVLink domain, 0 where it leaves it or on a TPU.

    Parameters
    ----------
    chip : Chip
        The chip: a TPU or a GPU.
    profile : Profile
        Its ``link_nvls`` (0 where the switch has no NVLS).
    crosses : bool or array_like, default False
        Whether the group leaves its NVLink node (``crosses_nodes``).

    Returns
    -------
    share : np.ndarray
        e_nvls, or 0.
    """
    if not chip.is_gpu:
        return np.zeros(np.shape(crosses))
    return np.where(crosses, 0.0, profile.link_nvls)


def link_efficiency(
    chip: Chip, profile: Profile, span: ArrayLike, crosses: ArrayLike = False
) -> np.ndarray:
    """The achievable share of the tier a group crosses: ICI on a TPU; on GPUs NVLink inside a
    node, the NIC across nodes (``crosses``).

    Parameters
    ----------
    chip : Chip
        The chip: a TPU or a GPU.
    profile : Profile
        The chip's measured shares: ``link_ici``, ``link_nvlink`` and ``link_nic``.
    span : float or array_like
        M, the mesh axes the group spans; only its shape is read.
    crosses : bool or array_like, default False
        Whether the group leaves its NVLink node (``crosses_nodes``); not read on a TPU.

    Returns
    -------
    efficiency : np.ndarray
        The profile's link efficiency, in the shape of ``span`` (and ``crosses``).
    """
    if not chip.is_gpu:
        return np.full(np.shape(span), profile.link_ici)
    efficiency = np.where(crosses, profile.link_nic, profile.link_nvlink)
    return np.broadcast_to(efficiency, np.broadcast_shapes(np.shape(efficiency), np.shape(span)))
