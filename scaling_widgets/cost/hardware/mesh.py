"""How a layout X·Y·Z sits on a physical TPU slice: axes spanned and wraparound (MODEL.md §A.1,
§A.7).

The rule, innermost first: the tensor group Y takes the slice's last axis first, then the
FSDP/data group X what is left, then the pipeline group Z. Each group takes, axis by axis
from the innermost, the largest factor of its size that the axis still has (a gcd), until it
is whole. M_X and M_Y count the axes a group touches, even partly: on 16x16x16, Y = 8 uses half
of the last axis (M_Y = 1) and X = 512 the other half and both other axes (M_X = 3), which is
how MODEL.md §A.8 example 10 puts FSDP 512 x TP 8 at a crossover of 4.35e5 tokens.

Both X and Y count an axis they share, as example 10 needs. ``best_split`` offers splits that
share at most two axes: on 16x20x28, TP 8 takes 4 of the 28-axis and 2 of the 20-axis (M_Y = 2),
and X = 1120 the rest (M_X = 3). Counting a shared axis for both groups is the chapter's rule; it
leaves out that the group strided over a shared axis runs its rings side by side on the same
links, which makes such a split look somewhat better than it is.

A group wraps around (is a ring on every axis it uses) only if it has each of those axes whole
and the axis itself is a ring on this slice (``axis_rings``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..ground.records import record
from ..ground.refusals import refuse


@record(eq=False)
class MeshSpan:
    """Axes spanned by each group and whether X and Y form rings."""

    mx: np.ndarray
    my: np.ndarray
    mz: np.ndarray
    wrap_x: np.ndarray
    wrap_y: np.ndarray
    shares: tuple = ()  # per slice axis (outermost first): the (X, Y, Z) factor of its length
    shared_axes: np.ndarray | int = 0  # axes that X and Y both take part of

    def __repr__(self):
        return f"MeshSpan(shape={np.shape(self.mx)})"


def parse_slice(slice_shape: Sequence[int]) -> tuple[int, ...]:
    """A slice shape as a tuple of whole numbers >= 1.

    Parameters
    ----------
    slice_shape : sequence of int
        The slice's axis lengths, outermost first.

    Returns
    -------
    shape : tuple of int
        The axis lengths, outermost first.

    Raises
    ------
    InputError
        Naming ``slice_shape`` when it is empty or an axis is not a whole number >= 1.
    """
    try:
        shape = tuple(int(n) for n in slice_shape)
        ok = len(shape) > 0 and all(n >= 1 and n == m for n, m in zip(shape, slice_shape))
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite axis
        ok = False
    if not ok:
        raise refuse("slice_shape", "a list of whole numbers >= 1", slice_shape)
    return shape


def check_fits_pod(slice_shape: Sequence[int], pod_shape: Sequence[int]) -> tuple[int, ...]:
    """The slice if it fits in the pod (axes compared longest to longest), else ``InputError``.

    Parameters
    ----------
    slice_shape : sequence of int
        The slice's axis lengths, outermost first.
    pod_shape : sequence of int
        The pod's axis lengths (``Chip.pod_shape``).

    Returns
    -------
    shape : tuple of int
        The slice's axis lengths, outermost first.

    Raises
    ------
    InputError
        Naming ``slice_shape`` when it is no slice (``parse_slice``) or does not fit in the pod.
    """
    shape = parse_slice(slice_shape)
    pod = tuple(pod_shape)
    longest = sorted(shape, reverse=True)
    pod_longest = sorted(pod, reverse=True)
    fits = len(shape) <= len(pod) and all(s <= p for s, p in zip(longest, pod_longest))
    if not fits:
        raise refuse(
            "slice_shape",
            f"a slice that fits in the chip's pod of {'x'.join(map(str, pod))} (at most"
            f" {len(pod)} axes, compared longest to longest)",
            "x".join(map(str, shape)),
        )
    return shape


def axis_rings(
    *, slice_shape: Sequence[int], pod_shape: Sequence[int], rule: str
) -> tuple[bool, ...]:
    """Which axes of the slice wrap around (MODEL.md §A.7).

    ``"cube"`` (v4p, v5p): every axis, when every axis is a multiple of 4 (whole cubes);
    none otherwise. ``"full-axis"`` (v5e, v6e): an axis whose length is the pod's longest.

    Parameters
    ----------
    slice_shape : sequence of int
        The slice's axis lengths, outermost first.
    pod_shape : sequence of int
        The pod's axis lengths (``Chip.pod_shape``).
    rule : str
        The chip's ``wraparound``: "cube", "full-axis" or "switched" (GPUs: every axis); any
        other name is read as "full-axis".

    Returns
    -------
    rings : tuple of bool
        Per slice axis, outermost first: whether it wraps around.
    """
    shape = tuple(slice_shape)
    if rule == "switched":  # a GPU fabric has no torus to wrap
        return tuple(True for _ in shape)
    if rule == "cube":
        whole_cubes = all(n % 4 == 0 for n in shape)
        return tuple(whole_cubes for _ in shape)
    return tuple(n == max(pod_shape) for n in shape)


def span_axes(
    *,
    slice_shape: Sequence[int],
    x: ArrayLike,
    y: ArrayLike = 1,
    z: ArrayLike = 1,
    rings: Sequence[bool] | None = None,
) -> MeshSpan:
    """Map the groups X, Y, Z (broadcastable arrays) onto ``slice_shape`` (rule above).

    ``rings`` gives, per axis, whether it wraps around (default: all do).

    Parameters
    ----------
    slice_shape : sequence of int
        The slice's axis lengths, outermost first.
    x : int or array_like
        X, the data/FSDP group [chips].
    y : int or array_like, default 1
        Y, the tensor group [chips].
    z : int or array_like, default 1
        Z, the pipeline stages [chips].
    rings : sequence of bool, optional
        Per slice axis, outermost first, whether it wraps around; None: every axis does.

    Returns
    -------
    span : MeshSpan
        The axes each group spans (M_X, M_Y, M_Z), whether X and Y are rings, each axis' (X, Y,
        Z) share and the axes X and Y share, of the broadcast shape of ``x``, ``y``, ``z``.

    References
    ----------
    .. [1] docs/MODEL.md §A.7 (where the groups sit) and §A.8 (example 10).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Mixed FSDP
       and Tensor Parallelism" (M_X and M_Y, the mesh axes of each group).

    Examples
    --------
    >>> s = span_axes(slice_shape=(16, 16, 16), x=[512, 1024, 256], y=[8, 4, 16])
    >>> s.mx.tolist(), s.my.tolist()
    ([3, 3, 2], [1, 1, 1])
    >>> [(int(x[0]), int(y[0])) for x, y, z in s.shares]  # (X, Y) share of each axis for 512 x 8
    [(16, 1), (16, 1), (2, 8)]
    """
    shape = tuple(int(n) for n in slice_shape)
    rings = (True,) * len(shape) if rings is None else tuple(bool(r) for r in rings)
    if np.ndim(x) == np.ndim(y) == np.ndim(z) == 0:  # one layout: the panel asks again and again
        return _one_span(shape, int(x), int(y), int(z), rings)
    return _distinct_spans(shape, x, y, z, rings)


@functools.lru_cache(maxsize=4096)
def _one_span(shape: tuple, x: int, y: int, z: int, rings: tuple) -> MeshSpan:
    span = _spans(shape, x, y, z, rings)
    shared = (span.mx, span.my, span.mz, span.wrap_x, span.wrap_y, *sum(span.shares, ()))
    for array in shared:  # the one copy every caller gets: read-only
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return span


DISTINCT_FROM = 4096  # layouts from which sorting out the distinct splits pays


def _distinct_spans(
    shape: tuple, x: ArrayLike, y: ArrayLike, z: ArrayLike, rings: tuple
) -> MeshSpan:
    """``_spans`` of each distinct (X, Y, Z) once, spread back to every layout: a grid of many
    batches or knobs holds a few splits, and placing them is a tenth of an estimate's time."""
    X, Y, Z = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (x, y, z)))
    base = math.prod(shape) + 1
    if X.size < DISTINCT_FROM or base**3 >= 2**62:  # a few layouts; one number a split overflows
        return _spans(shape, X, Y, Z, rings)
    distinct, where = np.unique(((X * base + Y) * base + Z).ravel(), return_inverse=True)
    if len(distinct) * 4 > X.size:  # mostly distinct: place them all
        return _spans(shape, X, Y, Z, rings)
    span = _spans(shape, distinct // base**2, distinct // base % base, distinct % base, rings)

    def spread(a):
        return np.asarray(a)[where].reshape(X.shape)

    return MeshSpan(
        mx=spread(span.mx),
        my=spread(span.my),
        mz=spread(span.mz),
        wrap_x=spread(span.wrap_x),
        wrap_y=spread(span.wrap_y),
        shares=tuple(tuple(spread(a) for a in axis) for axis in span.shares),
        shared_axes=spread(span.shared_axes),
    )


def _spans(shape: tuple, x: ArrayLike, y: ArrayLike, z: ArrayLike, rings: tuple) -> MeshSpan:
    """``span_axes`` on arrays, one placement per entry."""
    X, Y, Z = (np.asarray(v, dtype=np.int64) for v in (x, y, z))
    X, Y, Z = np.broadcast_arrays(X, Y, Z)
    left = [np.full(X.shape, n, dtype=np.int64) for n in reversed(shape)]  # innermost first
    lengths, ring = list(reversed(shape)), list(reversed(rings))
    spans, wraps, takes = [], [], []
    for size in (Y, X, Z):
        need = size.copy()
        touched = np.zeros(X.shape, dtype=np.int64)
        wrap = np.ones(X.shape, dtype=bool)
        for i, length in enumerate(lengths):
            take = np.gcd(need, left[i])
            used = take > 1
            touched += used
            wrap &= ~used | ((take == length) & ring[i])
            need = need // take
            left[i] = left[i] // take
            takes.append(take)
        spans.append(touched)
        wraps.append(wrap)
    (my, mx, mz), (wrap_y, wrap_x, _) = spans, wraps
    n = len(shape)
    by_group = {"y": takes[:n], "x": takes[n : 2 * n], "z": takes[2 * n :]}  # each innermost first
    shares = tuple(
        (by_group["x"][i], by_group["y"][i], by_group["z"][i]) for i in reversed(range(n))
    )
    shared = sum((x > 1) & (y > 1) for x, y in zip(by_group["x"], by_group["y"]))
    return MeshSpan(
        mx=mx, my=my, mz=mz, wrap_x=wrap_x, wrap_y=wrap_y, shares=shares, shared_axes=shared
    )


ROLES = ("x", "y", "z")


def role_layout(
    *, slice_shape: Sequence[int], roles: Sequence[str], rings: Sequence[bool] | None = None
) -> tuple[int, int, int, MeshSpan]:
    """X, Y, Z and their spans when each physical axis is given whole to one group.

    ``roles`` names the group of every axis, e.g. ("x", "x", "y"): X = 16·16 and Y = 16 on
    16x16x16, M_X = 2, M_Y = 1. Returns (X, Y, Z, MeshSpan).

    Parameters
    ----------
    slice_shape : sequence of int
        The slice's axis lengths, outermost first.
    roles : sequence of str
        The group of each axis, "x", "y" or "z" (``ROLES``), one per axis of ``slice_shape``.
    rings : sequence of bool, optional
        Per slice axis, outermost first, whether it wraps around; None: every axis does.

    Returns
    -------
    X : int
        The size of the data/FSDP group: the product of the axes it is given [chips].
    Y : int
        The size of the tensor group: the product of the axes it is given [chips].
    Z : int
        The pipeline stages: the product of the axes they are given [chips].
    span : MeshSpan
        The axes each group spans (of length > 1) and whether X and Y are rings; one layout.

    Examples
    --------
    >>> X, Y, Z, span = role_layout(slice_shape=(16, 20, 28), roles=("x", "y", "x"))
    >>> (X, Y, Z), (int(span.mx), int(span.my))
    ((448, 20, 1), (2, 1))
    """
    shape, roles = tuple(slice_shape), tuple(roles)
    rings = (True,) * len(shape) if rings is None else tuple(bool(r) for r in rings)
    axes = [(n, ring) for n, ring in zip(shape, rings)]
    size = {g: math.prod(n for (n, _), r in zip(axes, roles) if r == g) for g in ROLES}
    count = {g: sum(n > 1 for (n, _), r in zip(axes, roles) if r == g) for g in ROLES}
    wraps = {g: all(ring for (n, ring), r in zip(axes, roles) if r == g and n > 1) for g in ROLES}
    shares = tuple(tuple(n if r == g else 1 for g in ROLES) for (n, _), r in zip(axes, roles))
    span = MeshSpan(
        shares=shares,
        mx=np.int64(count["x"]),
        my=np.int64(count["y"]),
        mz=np.int64(count["z"]),
        wrap_x=np.bool_(wraps["x"]),
        wrap_y=np.bool_(wraps["y"]),
    )
    return size["x"], size["y"], size["z"], span


def subgroup_span(*, size: ArrayLike, x: ArrayLike, mx: ArrayLike) -> np.ndarray:
    """The torus axes a group of ``size`` chips taken from the data axis X spans (an EP or CP
    group, MODEL.md §D): its share of X's M_X axes by the log of its size (all of X spans all of
    them, sqrt(X) half); 0 for a group of one.

    Parameters
    ----------
    size : int or array_like
        The chips of the group (EP or CP) [chips].
    x : int or array_like
        X, the data axis the group is taken from [chips].
    mx : float or array_like
        M_X, the torus axes X spans.

    Returns
    -------
    span : np.ndarray
        The (fractional) axes the group spans, at least 1 for a group of more than one chip.

    Examples
    --------
    >>> subgroup_span(size=[1, 16, 256], x=256, mx=2).tolist()
    [0.0, 1.0, 2.0]
    """
    size, X = np.asarray(size, dtype=float), np.asarray(x, dtype=float)
    share = np.log(size) / np.log(np.where(X > 1, X, 2.0))
    return np.where(size > 1, np.maximum(np.asarray(mx, dtype=float) * share, 1.0), 0.0)
