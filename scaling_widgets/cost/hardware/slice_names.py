"""TPU slices by the names Google gives them (MODEL.md §A.7): v5p-512, v5e-256, v6e-256, v4-2048.

A v4 or v5p name counts TensorCores, two a chip: v5p-512 is 256 chips. A v5e (v5litepod) or v6e
name counts chips: v6e-256 is 256. The slice is the chip's of that many chips (``slice_of``),
which for every count in Google's topology tables is the shape listed there, up to the order of
its axes (cloud.google.com/tpu/docs/v4, /v5p, /v5e, /v6e: v5p-512 is 4x8x8, v4-2048 8x8x16,
v5e-256 and v6e-256 16x16).
"""

from __future__ import annotations

import math
import re

from ..ground.refusals import refuse
from .chip import Chip
from .slices import slice_of, slices_near

# a name's prefix -> the chip preset, the TensorCores a chip that the name's count counts, and
# the fewest chips Google offers a slice of (v4-8 and v5p-8 are a host of 4, 2x2x1)
FAMILIES = {
    "v4": ("tpu-v4p", 2, 4),
    "v5p": ("tpu-v5p", 2, 4),
    "v5e": ("tpu-v5e", 1, 1),
    "v5litepod": ("tpu-v5e", 1, 1),
    "v6e": ("tpu-v6e", 1, 1),
}
_NAME = re.compile(r"^\s*(?:tpu-?)?(v4|v5p|v5e|v5litepod|v6e)-([0-9]{1,7})\s*$", re.IGNORECASE)


class NamedSlice(tuple):
    """A slice's axis lengths that keep the chip preset (``chip``) and the name they were given
    by (``name``)."""

    chip: str
    name: str

    def __new__(cls, shape, chip: str, name: str):
        named = super().__new__(cls, shape)
        named.chip, named.name = chip, name
        return named

    def __getnewargs__(self):  # copied and pickled with its chip and name
        return (tuple(self), self.chip, self.name)


def is_slice_name(text) -> bool:
    """Whether ``text`` is written as a TPU slice's name (v5p-512), whatever its count.

    Parameters
    ----------
    text : object
        What was typed; anything but a string is no name.

    Returns
    -------
    named : bool
        True for a known generation's prefix, a hyphen and a count.
    """
    return isinstance(text, str) and _NAME.match(text) is not None


def named_slice(text: str, chips_of, field: str = "slice_shape") -> NamedSlice:
    """The slice a name gives, with its chip preset.

    Parameters
    ----------
    text : str
        The name, such as v5p-512 (a "tpu-" before it is taken too).
    chips_of : callable
        A chip preset's id -> its ``Chip`` (``catalog.hardware``).
    field : str, default "slice_shape"
        The field a refusal names.

    Returns
    -------
    shape : NamedSlice
        The slice's axis lengths [chips], its ``chip`` id and its ``name`` as Google writes it.

    Raises
    ------
    InputError
        Naming ``field`` when the chip has no slice of the count the name gives, with the
        names of the nearest slices it has.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE
    >>> s = named_slice("v5p-512", HARDWARE.get)
    >>> s, s.chip, s.name
    ((4, 8, 8), 'tpu-v5p', 'v5p-512')
    >>> named_slice("v6e-256", HARDWARE.get), named_slice("v4-2048", HARDWARE.get)
    ((16, 16), (8, 8, 16))
    """
    match = _NAME.match(text)
    family = match[1].lower()
    preset, per_chip, fewest = FAMILIES[family]
    count = int(match[2])
    chip = chips_of(preset)
    whole = count % per_chip == 0 and count // per_chip >= fewest
    shape = slice_of(chip, count // per_chip) if whole else None
    if shape is None:
        counted = "TensorCores, two a chip" if per_chip == 2 else "chips"
        asked = 2 ** round(math.log2(max(1, count // per_chip)))  # the nearest power of two
        near = [slice_name(chip, math.prod(s)) for s in slices_near(chip, max(asked, fewest))]
        raise refuse(
            field,
            f"a {chip.name} slice's name counting its {counted}, such as "
            + ", ".join(list(dict.fromkeys(n for n in near if n is not None))[:3]),
            text,
        )
    return NamedSlice(shape, preset, f"{family}-{count}")


def names_slices(chip: Chip) -> bool:
    """Whether Google names ``chip``'s slices (a TPU preset of ``FAMILIES``).

    Parameters
    ----------
    chip : Chip
        The chip.

    Returns
    -------
    named : bool
        True for a TPU v4, v5p, v5e or v6e preset.
    """
    return any(preset == chip.id for preset, _, _ in FAMILIES.values())


def slice_name(chip: Chip, chips: int, shape=None) -> str | None:
    """Google's name of a slice of ``chips`` of ``chip``: v5p-512 for 256 TPU v5p; None for a
    chip Google does not name slices of (a GPU, one's own), or a slice it does not offer.

    Parameters
    ----------
    chip : Chip
        The chip, a preset of ``FAMILIES`` or not.
    chips : int
        The slice's chips [chips].
    shape : tuple of int, optional
        The slice's axis lengths: named only where they are the named slice's, in any order
        (3x5x7 is no v5p-210). None: the count alone.

    Returns
    -------
    name : str or None
        The generation's prefix and its count: TensorCores (v4, v5p) or chips (v5e, v6e).

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE
    >>> slice_name(HARDWARE["tpu-v5p"], 256), slice_name(HARDWARE["tpu-v5e"], 256)
    ('v5p-512', 'v5e-256')
    >>> slice_name(HARDWARE["h100"], 256) is None
    True
    """
    family = next((f for f, (preset, _, _) in FAMILIES.items() if preset == chip.id), None)
    if family is None or chips < FAMILIES[family][2]:  # a GPU's or one's own: no name, no search
        return None
    listed = slice_of(chip, chips)
    if listed is None or (shape is not None and sorted(shape) != sorted(listed)):
        return None
    return f"{family}-{chips * FAMILIES[family][1]}"
