"""The strategy map's axes: global batches of whole sequences and counts of chips the chip has
slices of, spread evenly on a log scale (MODEL.md §C.7).

Both axes step through 2^k and 3·2^k (sequences, chips; whole pods beyond one pod), which keep a
replica's share of the batch whole on many splits; where a range holds more of them than the map
has cells, an even spread of them is kept.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..ground.checks import Number, Whole
from ..ground.refusals import refuse
from ..hardware.slices import slice_of, slices_near

if TYPE_CHECKING:
    from ..hardware.chip import Chip

AXES = ("batch", "slice_shape", "pods")  # plan's keywords that the map's rows and columns set
CELLS = 24  # rows and columns at most, by default
BATCHES = (2.0**16, 2.0**27)  # tokens: 64K to 128M, from a few sequences to past any critical batch


def chip_range(chip: Chip) -> tuple[int, int]:
    """The default range of chips: 8 up to 16,384, or four of a TPU's pods beyond that.

    Parameters
    ----------
    chip : Chip
        The chip: whether it is a GPU, and a TPU's chips a pod.

    Returns
    -------
    lo : int
        The fewest chips, 8 [chips].
    hi : int
        The most chips [chips].
    """
    return 8, 16_384 if chip.is_gpu else max(16_384, 4 * chip.pod_chips)


MAX_CELLS = 64  # rows or columns at most: a map of 4,096 cells already takes seconds


def doubling(largest: float) -> np.ndarray:
    """1, 2, 3, 4, 6, 8, 12, ...: every 2^k and 3·2^k up to ``largest``.

    Parameters
    ----------
    largest : float
        The largest value allowed.

    Returns
    -------
    values : np.ndarray
        Every 2^k and 3·2^k from 1 to ``largest``, ascending (int64).

    Examples
    --------
    >>> doubling(20).tolist()
    [1, 2, 3, 4, 6, 8, 12, 16]
    """
    powers = 2 ** np.arange(int(np.log2(max(largest, 1))) + 1)
    both = np.union1d(powers, 3 * powers[:-1] if len(powers) > 1 else [])
    return both[both <= largest].astype(np.int64)


def spread(candidates: np.ndarray, count: int) -> np.ndarray:
    """At most ``count`` of the sorted ``candidates``, evenly spread over them, both ends kept.

    Parameters
    ----------
    candidates : np.ndarray
        The values to choose from, sorted.
    count : int
        The most values kept.

    Returns
    -------
    kept : np.ndarray
        ``candidates`` themselves when there are at most ``count``; else ``count`` of them,
        evenly spread by position.
    """
    if len(candidates) <= count:
        return candidates
    return candidates[np.unique(np.linspace(0, len(candidates) - 1, count).round().astype(int))]


def batch_axis(seq_len: int, lo: float, hi: float, count: int = CELLS) -> np.ndarray:
    """Global batches [tokens] from ``lo`` to ``hi``: whole sequences, 2^k or 3·2^k of them.

    Parameters
    ----------
    seq_len : int
        T, the sequence length [tokens].
    lo : float
        The smallest global batch B allowed [tokens].
    hi : float
        The largest global batch B allowed [tokens].
    count : int, default CELLS
        The most batches kept, the map's columns (1 to ``MAX_CELLS``).

    Returns
    -------
    batches : np.ndarray
        The global batches, ascending, at most ``count`` of them spread evenly [tokens].

    Raises
    ------
    ValueError
        Naming ``seq_len`` when there are no sequences, ``batches`` when the range holds no such
        batch.

    References
    ----------
    .. [1] docs/MODEL.md §C.7 (the strategy map: its axes).
    """
    if seq_len is None:
        raise refuse("seq_len", "a sequence length: the map's batches are whole sequences", None)
    lo, hi = (Number(unit="tokens")("batches", v) for v in (lo, hi))
    count = Whole(1, MAX_CELLS)("columns", count)
    if lo > hi:
        raise refuse("batches", "a range LO..HI with LO at most HI", (lo, hi))
    sequences = doubling(hi / seq_len)
    found = sequences[sequences * seq_len >= lo] * float(seq_len)
    if not len(found):
        raise refuse(
            "batches", f"a range that holds a whole sequence of {seq_len:,} tokens", (lo, hi)
        )
    return spread(found, count)


def chip_axis(chip: Chip, lo: int, hi: int, count: int = CELLS) -> np.ndarray:
    """Counts of chips from ``lo`` to ``hi`` the chip has slices of (2^k or 3·2^k of them; on GPUs
    whole nodes or a power of two), or whole pods (2^k or 3·2^k pods).

    Parameters
    ----------
    chip : Chip
        The chip: its slices, its pod and, on GPUs, its node.
    lo : int
        The fewest chips allowed [chips].
    hi : int
        The most chips allowed [chips].
    count : int, default CELLS
        The most counts kept, the map's rows (1 to ``MAX_CELLS``).

    Returns
    -------
    chips : np.ndarray
        The counts of chips, ascending, at most ``count`` of them spread evenly [chips].

    Raises
    ------
    ValueError
        Naming ``chips`` when the range holds no such count.

    References
    ----------
    .. [1] docs/MODEL.md §C.7 (the strategy map: its axes) and §B.5 (GPU clusters: whole nodes,
       or nodes of a power of two).
    """
    lo, hi = (Whole(high=2**22)("chips", v) for v in (lo, hi))
    count = Whole(1, MAX_CELLS)("rows", count)
    if lo > hi:
        raise refuse("chips", "a range LO..HI with LO at most HI", (lo, hi))
    counts = np.union1d(doubling(min(hi, chip.pod_chips)), [chip.pod_chips])
    if chip.is_gpu:  # whole nodes, or a power of two (a part of one, or GB200's racks of 64)
        nodes = chip.node_size * doubling(min(hi, chip.pod_chips) // chip.node_size)
        powers = counts[(counts & (counts - 1)) == 0]
        counts = np.union1d(nodes, powers)
    inside = [n for n in counts if slice_of(chip, int(n))]
    pods = doubling(hi // chip.pod_chips)
    found = np.union1d(inside, chip.pod_chips * pods[pods > 1]).astype(np.int64)
    found = found[(found >= lo) & (found <= hi)]
    if not len(found):
        nearest = math.prod(slices_near(chip, lo)[0])
        raise refuse(
            "chips",
            f"a range that holds a count of chips the {chip.name} has a slice of (the nearest:"
            f" {nearest:,}) or whole pods of {chip.pod_chips:,}",
            (lo, hi),
        )
    return spread(found, count)
