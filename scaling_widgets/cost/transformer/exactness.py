"""The corrections the chapter leaves out (MODEL.md §B.7): a ring's (n − 1)/n, half the
bandwidth of a group that is no ring, and a latency per collective. All off: the chapter's model."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..ground.checks import Number, Switch, check_fields, checked
from ..ground.choices import per_choice
from ..ground.records import record

# The collectives behind the bytes of the chapter's summary table (``layer.TRAFFIC``), for a
# fixed latency each: (X fwd, X bwd), (Y fwd, Y bwd).
COLLECTIVES = {
    "dp": ((0, 2), (0, 0)),  # AllReduce of dW_in and dW_out
    "fsdp": ((2, 4), (0, 0)),  # AllGather both weights; again, and ReduceScatter both gradients
    "tp": ((0, 0), (2, 2)),  # AllGather In, ReduceScatter Out; the same backward
    "fsdp+tp": ((2, 4), (2, 4)),
    "dp+tp": ((0, 2), (2, 4)),
}


@record
class Exactness:
    """Corrections the chapter leaves out (MODEL.md §B.7); all off by default.

    ``ring_factor``: a ring collective over n chips moves (n − 1)/n of the array, not all of
    it. ``halve_without_wrap``: a TPU group that is not a ring has only one direction of its
    links to use. ``latency``: seconds each collective costs however small it is.
    """

    ring_factor: bool = checked(False, Switch())
    halve_without_wrap: bool = checked(False, Switch())
    latency: float = checked(0.0, Number(low=0, unit="seconds"))

    def __post_init__(self):
        check_fields(self)


CHAPTER = Exactness()


def corrected(
    exact: Exactness,
    strategy: str | np.ndarray,
    x: tuple[float | np.ndarray, float | np.ndarray],
    y: tuple[float | np.ndarray, float | np.ndarray],
    dcn: tuple[float | np.ndarray, float | np.ndarray],
    X: float | np.ndarray,
    Y: float | np.ndarray,
    P: float | np.ndarray,
    wrap_x: ArrayLike,
    wrap_y: ArrayLike,
) -> tuple[
    tuple[float | np.ndarray, float | np.ndarray],
    tuple[float | np.ndarray, float | np.ndarray],
    tuple[float | np.ndarray, float | np.ndarray],
]:
    """The communication times with the MODEL.md §B.7 corrections that are switched on.

    Parameters
    ----------
    exact : Exactness
        The corrections, each on or off.
    strategy : str or np.ndarray
        The strategy's name, or an array of them (one per layout), for its collectives
        (``COLLECTIVES``).
    x : tuple of (float or np.ndarray, float or np.ndarray)
        The chapter's time of the X axis, (forward, backward) [s].
    y : tuple of (float or np.ndarray, float or np.ndarray)
        The chapter's time of the Y axis, (forward, backward) [s].
    dcn : tuple of (float or np.ndarray, float or np.ndarray)
        The chapter's time across pods, (forward, backward) [s].
    X : float or np.ndarray
        X, the size of the data/FSDP group [chips].
    Y : float or np.ndarray
        Y, the size of the tensor group [chips].
    P : float or np.ndarray
        P, the pods over DCN.
    wrap_x : bool or array_like
        Whether the X group is a ring.
    wrap_y : bool or array_like
        Whether the Y group is a ring.

    Returns
    -------
    x : tuple of (float or np.ndarray, float or np.ndarray)
        The corrected time of the X axis, (forward, backward) [s].
    y : tuple of (float or np.ndarray, float or np.ndarray)
        The corrected time of the Y axis, (forward, backward) [s].
    dcn : tuple of (float or np.ndarray, float or np.ndarray)
        The corrected time across pods, (forward, backward) [s].
    """
    scale = {"x": 1.0, "y": 1.0, "dcn": 1.0}
    if exact.ring_factor:
        scale = {"x": (X - 1) / X, "y": (Y - 1) / Y, "dcn": (P - 1) / P}
    if exact.halve_without_wrap:  # one direction of a line of links, not both of a ring
        scale["x"] = scale["x"] * np.where(wrap_x, 1.0, 2.0)
        scale["y"] = scale["y"] * np.where(wrap_y, 1.0, 2.0)
    (x_count, y_count), dcn_count = per_choice(strategy, COLLECTIVES.get), (0, 2)
    counts = {"x": x_count, "y": y_count, "dcn": dcn_count}
    groups = {"x": X > 1, "y": Y > 1, "dcn": P > 1}
    times = {"x": x, "y": y, "dcn": dcn}
    return tuple(
        tuple(t * scale[a] + exact.latency * n * groups[a] for t, n in zip(times[a], counts[a]))
        for a in ("x", "y", "dcn")
    )
