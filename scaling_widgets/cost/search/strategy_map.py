"""The strategy map: which layout wins where, over the global batch and the count of chips
(MODEL.md §C.7).

Each cell is the planner's best layout for its batch on its chips, ranked as ``plan`` ranks them:
cell (i, j) is ``plan(**m.plan_keywords(i, j))``'s first row. A row is one cluster. Its layouts
are evaluated at every batch at once (the batch a column of the flat arrays, one vectorized
evaluation per order of the slice's axes, as in a plan) and its cells ranked in one sort. Counts
beyond one pod join whole pods over the data-center network.

A cell's family is the most elaborate parallelism its best layout uses: expert or context
parallelism, else pipeline stages, else tensor parallelism, else FSDP (ZeRO-3), else data
parallelism (ZeRO 0 to 2).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ground.checks import Whole
from ..ground.records import record
from ..ground.refusals import refuse
from ..hardware.slices import slice_of, slices_near
from ..values import Workload
from .layouts import HELD, KNOBS, ranking
from .map_axes import AXES
from .plan import evaluated_layouts, held_knobs, plan_keywords, plan_values

if TYPE_CHECKING:
    from ..hardware.chip import Chip
    from ..transformer.shapes import Model

FAMILIES = ("dp", "fsdp", "tp", "pp", "ep_cp")
THRESHOLDS = ("fsdp", "fsdp+tp")
LIMITS = ("max_tp", "max_pp")
NONE_FITS = -1  # the family of a cell where no layout fits (or none runs)


def families(*, y, z, zero, ep, cp) -> np.ndarray:
    """Each layout's family, an index into ``FAMILIES`` (see the module's docstring).

    Parameters
    ----------
    y : int or array_like
        Y, the tensor degree [chips].
    z : int or array_like
        Z, the pipeline stages, in all the pods a pipeline spans.
    zero : int or array_like
        The ZeRO stage, 0 to 3.
    ep : int or array_like
        EP, the expert-parallel degree [chips].
    cp : int or array_like
        CP, the context-parallel degree [chips].

    Returns
    -------
    family : np.ndarray
        One index per layout.

    References
    ----------
    .. [1] docs/MODEL.md §C.7 (the strategy map: a cell's family).

    Examples
    --------
    >>> families(y=[1, 1, 4, 4, 1], z=[1, 1, 1, 8, 1], zero=[1, 3, 3, 2, 0], ep=1,
    ...          cp=[1, 1, 1, 1, 2])
    array([0, 1, 2, 3, 4])
    """
    y, z, zero, ep, cp = np.broadcast_arrays(*(np.asarray(v) for v in (y, z, zero, ep, cp)))
    return np.select([(ep > 1) | (cp > 1), z > 1, y > 1, zero == 3], [4, 3, 2, 1], 0)


@record(eq=False)
class StrategyMap:
    """Each cell's best layout, rows the chip counts and columns the batches.

    Arrays are (rows, columns). Where nothing fits a cell's step and MFU are NaN, its memory the
    leanest layout's; where no layout runs at all (too small a batch for whole sequences) its
    memory is NaN too.
    """

    batches: np.ndarray  # the columns: global batches in whole sequences [tokens], ascending
    chips: np.ndarray  # the rows: chips in all [chips], ascending
    clusters: tuple  # each row's (slice_shape, pods)
    knobs: dict  # each of KNOBS and "slice_shape" (the axis order the best uses) -> (rows, columns)
    step_time: np.ndarray  # [s]
    mfu: np.ndarray
    memory: np.ndarray  # the busiest chip's peak, reserved [bytes]
    thresholds: dict  # "fsdp", "fsdp+tp" -> each row's batch where it turns compute-bound [tokens]
    evaluated: int  # layouts evaluated in all
    keywords: dict  # what every cell's plan shares (``plan``'s keywords but batch and the slice)

    def __repr__(self) -> str:
        rows, columns = self.step_time.shape
        return f"StrategyMap({rows} x {columns} cells, {self.evaluated} layouts)"

    @property
    def runs(self) -> np.ndarray:
        """Some layout of the cell can run (its memory, the best's or the leanest's, is known)."""
        return np.isfinite(self.memory)

    @property
    def fits(self) -> np.ndarray:
        """Some layout of the cell fits."""
        return np.isfinite(self.step_time)

    @property
    def family(self) -> np.ndarray:
        """Each cell's family (``FAMILIES``), ``NONE_FITS`` where nothing fits."""
        k = self.knobs
        stages = k["z"] * k["pp_pods"]  # a pipeline across pods is one too (MODEL.md §B.10)
        found = families(y=k["y"], z=stages, zero=k["zero"], ep=k["ep"], cp=k["cp"])
        return np.where(self.fits, found, NONE_FITS)

    def layout(self, row: int, column: int) -> dict[str, Any] | None:
        """The best layout's knobs at a cell, slice_shape in the order it uses (as
        ``Plan.layout``), with the cell's pods; None where nothing fits.

        Parameters
        ----------
        row : int
            The cell's row, an index into ``chips``.
        column : int
            The cell's column, an index into ``batches``.

        Returns
        -------
        knobs : dict of str to Any or None
            "slice_shape", each of ``KNOBS`` and "pods"; "etp" None where the experts split
            over TP as the rest (the default). None where nothing fits.
        """
        if not self.fits[row, column]:
            return None
        knobs = {k: _item(self.knobs[k][row, column]) for k in ("slice_shape", *KNOBS)}
        if knobs["etp"] == knobs["y"]:  # the experts split over TP as the rest: the default
            knobs["etp"] = None
        return {**knobs, "pods": self.clusters[row][1]}

    def plan_keywords(self, row: int, column: int) -> dict[str, Any]:
        """The keywords of the ``plan`` whose first row is the cell's best layout.

        Parameters
        ----------
        row : int
            The cell's row, an index into ``chips``.
        column : int
            The cell's column, an index into ``batches``.

        Returns
        -------
        keywords : dict of str to Any
            ``keywords`` with the cell's "batch" [tokens], "slice_shape" and "pods".
        """
        shape, pods = self.clusters[row]
        batch = float(self.batches[column])
        return {**self.keywords, "batch": batch, "slice_shape": shape, "pods": pods}


def strategy_map(
    *, model: Model, chip: Chip, batches, chips, seq_len: int, **keywords: Any
) -> StrategyMap:
    """The best layout at every global batch of ``batches`` [tokens] on every count of ``chips``.

    The other keywords are ``plan``'s but the batch and the cluster, which the axes set, and hold
    for every cell. ``batches`` are rounded to whole sequences, sorted, and each kept once;
    ``chips`` are counts the chip has slices of (a TPU's powers of two, whole GPU nodes), or whole
    pods.

    Parameters
    ----------
    model : Model
        The model: its D, F, L, N_h, K, H, V and, for a mixture of experts, its experts.
    chip : Chip
        The chip: a preset (``presets.HARDWARE``) or one of your own.
    batches : float or array_like
        The global batches B, the columns [tokens].
    chips : int or array_like
        The counts of chips in all, the rows [chips].
    seq_len : int
        T, the sequence length [tokens].
    **keywords
        ``plan``'s other keywords but ``batch``, ``slice_shape``, ``chips``, ``pods`` and
        ``rank_by``: those of ``HELD``, ``max_tp``, ``max_pp``, ``mfu``, ``precision`` and any of
        ``OPTIONS``; the same for every cell.

    Returns
    -------
    strategy_map : StrategyMap
        Each cell's best layout, its step, MFU and memory.

    Raises
    ------
    InputError
        Naming the field: ``batches`` or ``chips`` empty, a count of chips the chip has no slice
        of and that is not whole pods, or a value ``plan`` refuses.

    References
    ----------
    .. [1] docs/MODEL.md §C.7 (the strategy map), §C (the planner) and §A.3 (the thresholds
       over it).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP); Mixed FSDP and Tensor Parallelism.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> m = strategy_map(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], seq_len=8192,
    ...                  batches=[2**20, 2**22], chips=[64, 512])
    >>> m.step_time.shape, [FAMILIES[f] for f in m.family[1]]
    ((2, 2), ['ep_cp', 'fsdp'])
    """
    columns = np.unique(
        Workload(model=model, batch=_listed("batches", batches), seq_len=seq_len).batch
    )
    rows = clusters(chip, _listed("chips", chips))
    held = held_knobs(**{k: keywords.get(k) for k in HELD})
    limits = {n: Whole()(n, keywords[n]) for n in LIMITS if keywords.get(n)}
    mfu, precision = keywords.get("mfu"), keywords.get("precision")
    options = {k: v for k, v in keywords.items() if k not in (*HELD, *LIMITS, "mfu", "precision")}
    shape = (len(rows), len(columns))
    knobs = {k: np.zeros(shape, dtype=object) for k in ("slice_shape", *KNOBS)}
    cells = {k: np.full(shape, np.nan) for k in ("step_time", "mfu", "memory")}
    thresholds = {name: np.full(len(rows), np.nan) for name in THRESHOLDS}
    evaluated = 0
    for i, (slice_shape, pods) in enumerate(rows):  # a cluster a row; every cell of it at once
        values = plan_values(
            model, chip, columns[0], seq_len, slice_shape, None, pods, mfu, precision, options
        )
        orders, every = evaluated_layouts(*values, held, limits, batches=columns)
        if every:
            merged = {k: np.concatenate([e[k] for e in every]) for k in every[0]}
            evaluated += len(merged["x"])
            _fill_row(i, merged, orders, columns, knobs, cells)
            for name, crossover in crossovers(merged).items():
                thresholds[name][i] = crossover
    return StrategyMap(
        columns,
        np.array([math.prod(s) * p for s, p in rows]),
        tuple(rows),
        knobs,
        cells["step_time"],
        cells["mfu"],
        cells["memory"],
        thresholds,
        evaluated,
        {"model": model, "chip": chip, "seq_len": seq_len, **keywords},
    )


def _fill_row(i, merged, orders, columns, knobs, cells) -> None:
    """Row ``i`` of the map from its evaluated layouts: each cell's best, ranked as ``plan``
    ranks; where nothing fits, the leanest layout's memory."""
    column = np.searchsorted(columns, merged["batch"])
    np.fmin.at(cells["memory"][i], column, merged["memory"])
    ranked = ranking(merged, cells=column)
    found, first = np.unique(column[ranked], return_index=True)
    best = ranked[first]
    for k in KNOBS:
        knobs[k][i, found] = merged[k][best]
    knobs["slice_shape"][i, found] = [orders[a] for a in merged["axis_order"][best]]
    for k in ("step_time", "mfu", "memory"):
        cells[k][i, found] = merged[k][best]


def map_keywords(cluster, workload, layout, options) -> dict[str, Any]:
    """``strategy_map``'s keywords for these values: the plan's (``plan_keywords``) but its axes.

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and the pods.
    workload : Workload
        What is trained: the model, the batch B [tokens], its sequences.
    layout : Layout
        The scenario's layout; only its fields of ``OPTIONS`` are kept.
    options : Options
        How the numbers are read.

    Returns
    -------
    keywords : dict of str to Any
        ``plan_keywords``'s, without "batch", "slice_shape" and "pods".
    """
    keywords = plan_keywords(cluster, workload, layout, options)
    for axis in AXES:
        del keywords[axis]
    return keywords


def crossovers(layouts: dict) -> dict[str, float]:
    """The chapter's thresholds on one cluster (MODEL.md §A.3): the smallest batch at which a
    layout of one stage, without EP or CP, is compute-bound per layer, FSDP or DP alone (Y = 1)
    and with TP (any Y; the best split's); NaN where none is.

    Parameters
    ----------
    layouts : dict of str to np.ndarray
        One cluster's evaluated layouts (``evaluated_layouts``, every order's joined), one entry
        per layout: "y", "z", "ep", "cp" and "crossover" [tokens] among them.

    Returns
    -------
    thresholds : dict of str to float
        "fsdp" and "fsdp+tp" [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (compute-bound, pass by pass), §A.10 (the crossover batch) and
       §C.7 (the thresholds over the map).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP); Mixed FSDP and Tensor Parallelism.
    """
    plain = (layouts["z"] == 1) & (layouts["ep"] == 1) & (layouts["cp"] == 1)
    found = {"fsdp": plain & (layouts["y"] == 1), "fsdp+tp": plain}
    crossover = np.where(np.isfinite(layouts["crossover"]), layouts["crossover"], np.inf)
    return {
        name: float(np.min(crossover[where], initial=np.inf)) if where.any() else np.nan
        for name, where in found.items()
    }


def clusters(chip: Chip, chips) -> list[tuple[tuple[int, ...], int]]:
    """Each count's (slice_shape, pods), ascending and each once: the chip's slice of that many
    chips, else whole pods.

    Parameters
    ----------
    chip : Chip
        The chip: its slices and its pod.
    chips : iterable of int
        The counts of chips in all [chips].

    Returns
    -------
    clusters : list of tuple
        Each count's (slice_shape, pods): one pod's slice [chips] and P, the pods.

    Raises
    ------
    ValueError
        Naming ``chips`` for a count the chip has no slice of, with the nearest that it has.
    """
    out = {}
    for n in sorted({Whole(high=2**22)("chips", n) for n in chips}):
        shape = slice_of(chip, n)
        pods = 1
        if shape is None and n % chip.pod_chips == 0:
            shape, pods = chip.pod_shape, n // chip.pod_chips
        if shape is None:
            nearest = math.prod(slices_near(chip, n)[0])
            raise refuse(
                "chips",
                f"counts the {chip.name} has slices of (the nearest: {nearest:,}), or whole pods of"
                f" {chip.pod_chips:,}",
                n,
            )
        out[n] = (shape, pods)
    return list(out.values())


def _listed(name: str, values) -> list:
    """A non-empty list of numbers."""
    listed = np.atleast_1d(np.asarray(values, dtype=object)).ravel().tolist()
    if not listed:
        raise refuse(name, "at least one value", values)
    return listed


def _item(value):
    return value.item() if isinstance(value, np.generic) else value
