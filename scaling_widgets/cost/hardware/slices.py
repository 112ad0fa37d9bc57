"""Slices of a chip near a number of chips: what to try when a user moves a scenario onto
another chip (MODEL.md §A.7, §B.5).

A TPU slice is a torus of power-of-two axes within the pod, as near a cube as the count allows;
a v4's or v5p's axes may also be any multiples of 4 ("A, B, C all <= 4 or all integer multiples
of 4": Cloud TPU, "TPU types and topologies"). A GPU slice is whole nodes (or part of one). The
same count comes first, then the nearest counts on either side, halving and doubling, the chip's
own default slice last.
"""

from __future__ import annotations

import itertools
import math

from ..ground.refusals import InputError, refuse
from .chip import Chip
from .nodes import gpu_slice


def slices_near(chip: Chip, chips: int) -> list[tuple[int, ...]]:
    """The chip's slices nearest to ``chips`` first: the same count if the chip has one, then
    half and twice, a quarter and four times, and so on; the default slice last.

    Parameters
    ----------
    chip : Chip
        The chip: its pod, its node size on a GPU, and its default slice.
    chips : int
        The count of chips to start from [chips].

    Returns
    -------
    slices : list of tuple of int
        Axis lengths of each slice, one slice per count, no slice twice.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE
    >>> slices_near(HARDWARE["tpu-v5p"], 256)[:3]
    [(4, 8, 8), (4, 4, 8), (8, 8, 8)]
    >>> slices_near(HARDWARE["h100"], 256)[:2]
    [(32, 8), (16, 8)]
    """
    counts, step = [chips], 2
    while step <= 2 * max(chips, chip.pod_chips):
        counts += [chips // step] * (chips % step == 0) + [chips * step]
        step *= 2
    out = []
    for count in counts:
        shape = slice_of(chip, count)
        if shape is not None and shape not in out:
            out.append(shape)
    return out + [chip.default_slice] * (chip.default_slice not in out)


def slice_of(chip: Chip, chips: int) -> tuple[int, ...] | None:
    """The slice of ``chips`` chips, or None when the chip has none of that size.

    Parameters
    ----------
    chip : Chip
        The chip: its pod, and its node size on a GPU.
    chips : int
        The count of chips [chips].

    Returns
    -------
    shape : tuple of int or None
        The slice's axis lengths, outermost first ((nodes, GPUs per node) on a GPU); None when
        the chip has no slice of ``chips`` chips.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE
    >>> [slice_of(HARDWARE["tpu-v4p"], n) for n in (128, 192, 96)]  # v4-256, v4-384, none
    [(4, 4, 8), (4, 4, 12), None]
    >>> slice_of(HARDWARE["tpu-v5e"], 192) is None  # v5e's axes are powers of two
    True
    """
    if chips < 1 or chips > chip.pod_chips:
        return None
    if chip.is_gpu:  # whole nodes, or nodes held alike (GB200 NVL72's racks of 64)
        try:
            return gpu_slice(chips=chips, node_size=chip.node_size)
        except InputError:
            return None
    if chips == chip.pod_chips:
        return chip.pod_shape
    lengths = [2**k for k in range(int(math.log2(max(chip.pod_shape))) + 1)]
    if chips & (chips - 1):  # beyond powers of two, a v4's or v5p's axes of whole 4x4x4 cubes
        if chip.wraparound != "cube":
            return None
        lengths = range(4, max(chip.pod_shape) + 1, 4)
    fitting = (
        shape
        for shape in itertools.combinations_with_replacement(lengths, chip.ici_axes)
        if math.prod(shape) == chips
        and all(a <= b for a, b in zip(sorted(shape), sorted(chip.pod_shape)))
    )
    return min(fitting, key=lambda shape: (max(shape) / min(shape), shape), default=None)


def slice_for(chip: Chip, chips: int, field: str = "chips") -> tuple[int, ...]:
    """The slice ``--chips N`` runs on: a GPU's whole nodes, or a TPU's slice of N chips in the
    shape Google gives it (``slice_of``: 4,096 TPU v5p is 16x16x16, as v5p-8192).

    Parameters
    ----------
    chip : Chip
        The chip.
    chips : int
        The count of chips [chips].
    field : str, default "chips"
        The field a refusal names.

    Returns
    -------
    shape : tuple of int
        The slice's axis lengths, outermost first.

    Raises
    ------
    InputError
        Naming ``field`` when the chip has no slice of ``chips`` chips, with the nearest that it
        has and their shapes.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE
    >>> slice_for(HARDWARE["tpu-v5p"], 4096), slice_for(HARDWARE["h100"], 512)
    ((16, 16, 16), (64, 8))
    """
    if chip.is_gpu:
        return gpu_slice(chips=chips, node_size=chip.node_size)
    shape = slice_of(chip, chips)
    if shape is None and chips > chip.pod_chips:
        raise refuse(
            field,
            f"at most a {chip.name} pod's {chip.pod_chips:,}; more chips are pods joined over"
            " DCN (--pods)",
            chips,
        )
    if shape is None:
        near = slices_near(chip, 2 ** round(math.log2(max(chips, 1))))[:2]
        raise refuse(
            field,
            f"a count a {chip.name} slice has, such as "
            + " or ".join(f"{math.prod(s):,} ({'x'.join(map(str, s))})" for s in near),
            chips,
        )
    return shape
