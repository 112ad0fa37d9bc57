"""Whether a layout can run: the checks that need more than one value, and the physics of a
placed layout (MODEL.md §A.3, §A.6, §D.2, §D.3).

``together`` refuses values that contradict each other (a recompute policy without sequences,
arrays of layouts that do not broadcast); ``possible`` refuses a placed layout that cannot run: a
data replica needs a whole sequence per microbatch, TP must divide the attention heads, every
(virtual) pipeline stage needs a layer, EP and CP must divide what they split. Each refusal is an
``InputError`` that names the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from ..checks import first, per_layout
from ..refusals import InputError, refuse
from ..transformer.experts import folds_over_tp
from ..transformer.shapes import Model
from ..values import Cluster, Layout, Options, Workload


def together(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> None:
    """Refuse values that each check out but contradict each other.

    Returns
    -------
    None
        Nothing: the values go together.

    Raises
    ------
    InputError
        Naming the first field that contradicts the others: ``seq_len`` absent where attention
        FLOPs, microbatch sizes, a recompute policy or context parallelism need it; as many
        ``axis_roles`` as slice axes; arrays of layouts that do not broadcast together.
    """
    if workload.seq_len is None:
        if options.attention_flops:
            raise refuse("seq_len", "given to count attention FLOPs (12·L·T·N_h·H a token)", None)
        if np.any(np.asarray(layout.remat) != "checkpoints") or layout.microbatch_seqs is not None:
            raise refuse(
                "seq_len",
                "given for microbatch sizes or a recompute policy other than 'checkpoints'",
                None,
            )
        if layout.cp is not None and np.any(np.asarray(layout.cp) > 1):
            raise refuse(
                "seq_len", "given to split sequences over chips (context parallelism)", None
            )
    if layout.axis_roles is not None and len(layout.axis_roles) != len(cluster.slice_shape):
        raise refuse(
            "axis_roles",
            f"one of 'x', 'y', 'z' for each of the {len(cluster.slice_shape)} slice axes",
            tuple(layout.axis_roles),
        )
    _broadcast(cluster, workload, layout, options)


def _broadcast(*values) -> None:
    """Refuse arrays of layouts that do not broadcast together, naming the first that does not."""
    shape = ()
    for value in values:
        for name in _per_layout_fields(type(value)):
            got = np.shape(getattr(value, name))
            if not got:  # one value broadcasts with anything
                continue
            try:
                shape = np.broadcast_shapes(shape, got)
            except ValueError:
                raise refuse(
                    name,
                    f"one value, or an array that broadcasts with the shape {shape} of the others",
                    f"an array of shape {got}",
                ) from None


@functools.cache
def _per_layout_fields(kind: type) -> tuple[str, ...]:
    """The fields of a value that may hold one entry per layout (``pods`` among them)."""
    return tuple(
        field.name
        for field in dataclasses.fields(kind)
        if field.name == "pods" or per_layout(field.metadata.get("check"))
    )


def runs(
    *,
    model: Model,
    seq_len: int | None,
    batch: ArrayLike,
    pods: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    z: ArrayLike,
    virtual_stages: ArrayLike,
    microbatches: ArrayLike,
    ep: ArrayLike = 1,
    etp: ArrayLike | None = None,
    cp: ArrayLike = 1,
    cp_kind: str | np.ndarray = "ring",
) -> dict[str, np.bool_ | np.ndarray]:
    """Which layouts can run, rule by rule: name -> boolean array (MODEL.md §A.3, §A.6).

    - "sequences": a data replica gets at least one whole sequence (one token without
      ``seq_len``) per microbatch: B / (T·X·P·m) >= 1, its CP chips sharing each sequence:
      B·CP / (T·X·P·m) >= 1;
    - "whole": where a replica's share of the batch is whole sequences S, the microbatches
      split it into whole ones: m divides S (frameworks take a microbatch in sequences; a share
      that is not whole is the chapter's average over replicas, and stands as it is);
    - "heads": TP divides the attention heads, and the KV heads divide it or it divides them
      (KV heads fewer than Y are replicated Y/K times, as Megatron-LM does);
    - "stages": every (virtual) stage gets a layer: Z·v ≤ L (uneven stages are charged by the
      busiest, ``pipeline.busiest_stage_layers``);
    - "experts": EP divides the experts E (a dense model: EP = 1) and the data axis X it is
      taken from; folded over TP (``etp`` 1), the group takes TP's chips first: EP divides Y, or
      Y divides EP and EP/Y divides X; ``etp`` is 1 or Y (MODEL.md §D.2);
    - "context": CP divides the data axis and the sequence, and under Ulysses the KV heads of
      each TP shard (MODEL.md §D.3).

    Returns
    -------
    ok : dict of str to np.bool_ or np.ndarray
        Per rule ("sequences", "whole", "heads", "stages", "experts", "context"): True where
        the layout keeps it, one boolean per layout.
    """
    T = 1 if seq_len is None else seq_len
    H, K = model.heads, model.kv_heads
    E, EP, CP = (1 if model.moe is None else model.moe.experts), np.asarray(ep), np.asarray(cp)
    heads_per_shard = np.maximum(K // np.asarray(y), 1)
    share = np.asarray(batch) * CP / (T * np.asarray(x) * pods)  # sequences a replica gets
    return {
        "sequences": share >= microbatches,
        "whole": True if seq_len is None else _whole_microbatches(share, microbatches),
        "heads": (H % np.asarray(y) == 0) & ((np.asarray(y) % K == 0) | (K % np.asarray(y) == 0)),
        "stages": np.asarray(z) * virtual_stages <= model.layers,
        "experts": _experts_fit(E, EP, np.asarray(x), np.asarray(y), etp),
        "context": (np.asarray(x) % CP == 0)
        & (T % CP == 0)
        & ((cp_kind != "ulysses") | (heads_per_shard % CP == 0)),
    }


def _experts_fit(E, EP, X, Y, etp) -> np.ndarray:
    """The "experts" rule of ``runs``."""
    over_data = X % EP == 0
    if etp is None:
        return over_data & (E % EP == 0)
    over_tp = np.where(EP <= Y, Y % EP == 0, (EP % Y == 0) & (X % np.maximum(EP // Y, 1) == 0))
    ETP = np.asarray(etp)
    return (
        np.where(folds_over_tp(ETP, Y), over_tp, over_data)
        & (E % EP == 0)
        & ((ETP == 1) | (ETP == Y))
    )


def _whole_microbatches(share: np.ndarray, microbatches: ArrayLike) -> np.ndarray:
    """Where a replica's share is whole sequences S (to rounding), m divides S; elsewhere True."""
    whole = np.round(share)
    part = np.abs(share - whole) > 1e-9 * share
    return part | (whole % microbatches == 0)


def implied_cp(
    *, batch: ArrayLike, seq_len: int | None, x: ArrayLike, pods: ArrayLike, microbatches: ArrayLike
) -> np.ndarray:
    """The context parallelism a layout takes when none is asked for (MODEL.md §D.3): the
    smallest power of two CP that gives each data replica a whole sequence a microbatch,
    B·CP/(T·X·P) ≥ m; 1 where each has one already.

    The chapter counts tokens and never sequences: a replica's share of the batch may be part of
    one sequence, and these are the chips that share it.

    Returns
    -------
    cp : np.ndarray
        CP per layout [chips].
    """
    T = 1 if seq_len is None else seq_len
    short = np.asarray(microbatches) * T * np.asarray(x) * np.asarray(pods) / np.asarray(batch)
    # The rule ``runs`` checks, exactly: a batch a hair short of whole sequences needs the next CP.
    return (2 ** np.ceil(np.log2(np.maximum(short, 1)))).astype(np.int64)


def possible(*, given: Layout, **layout) -> None:
    """Refuse a placed layout that cannot run (``runs``, whose keywords ``layout`` are); in an
    array of them, the first that cannot, by the first rule it breaks.

    ``given`` is the layout as asked for: whether its microbatches were given names the field.

    Returns
    -------
    None
        Nothing: every layout can run.

    Raises
    ------
    InputError
        Naming the field of the first rule the first layout breaks (``microbatches``, ``batch``,
        ``y``, ``z``, ``virtual_stages``, ``ep`` or ``cp``).
    """
    names = ("batch", "pods", "x", "y", "z", "virtual_stages", "microbatches", "ep", "cp")
    names += ("etp",) * (layout.get("etp") is not None)
    arrays = np.broadcast_arrays(*(np.asarray(layout.get(name, 1)) for name in names))
    placed = {**layout, **dict(zip(names, arrays))}
    ok = runs(**placed)
    if given.cp is None:  # sequences split for the user count tokens, as the chapter does
        ok["whole"] = ok["whole"] | (placed["cp"] > 1)
    for rule, refusal in _REFUSALS.items():  # in the order a user would mend them
        if not ok[rule].all():
            raise refusal(first(~ok[rule]), given=given, **placed)


def _sequences(i, *, model, seq_len, batch, pods, x, microbatches, cp, given, **_) -> InputError:
    """Too few sequences: fewer microbatches would do if each replica has one; else more batch."""
    T = 1 if seq_len is None else seq_len
    m, X, P, CP = int(microbatches[i]), int(x[i]) // int(cp[i]), int(pods[i]), int(cp[i])
    got = batch[i].item() / (T * X * P)
    if m > 1 and given.microbatches is not None and got >= 1:
        units = "tokens" if seq_len is None else f"sequences of {seq_len}"
        return refuse(
            "microbatches", f"at most the {got:.3g} {units} each data replica gets, B/(T·X·P)", m
        )
    unit = "token" if seq_len is None else f"sequence of {seq_len}"
    replicas = f"{X * P:,} data replicas" + ("" if m == 1 else f" x {m} microbatches")
    return refuse(
        "batch",
        f"at least {X * P * m * T:,} tokens, a whole {unit} for each of the {replicas}"
        + (
            " (or split each sequence over chips: context parallelism, --cp)"
            if seq_len is not None and CP == 1
            else ""
        ),
        f"{batch[i].item():,.6g} ({got:.3g} per replica)",
    )


def _whole(i, *, seq_len, batch, pods, x, microbatches, cp, given, **_) -> InputError:
    """Microbatches of part sequences: name the counts near the one given that split whole."""
    replicas = int(x[i]) // int(cp[i]) * int(pods[i])
    m, S = int(microbatches[i]), round(batch[i].item() / (seq_len * replicas))
    small = [d for d in range(1, math.isqrt(S) + 1) if S % d == 0]
    counts = {*small, *(S // d for d in small)}  # the divisors of S
    nearest = sorted(sorted(counts, key=lambda d: abs(d - m))[:3])
    field = "microbatch_seqs" if given.microbatch_seqs is not None else "microbatches"
    got = m if field == "microbatches" else f"{int(given.microbatch_seqs)} ({m} microbatches)"
    return refuse(
        field,
        f"a count that splits each data replica's {S:,} sequences of {seq_len} into whole"
        f" microbatches, as frameworks need (e.g. {', '.join(map(str, nearest))} microbatches)",
        f"{got}: {S / m:.4g} sequences each",
    )


def _heads(i, *, model, y, **_) -> InputError:
    return refuse(
        "y",
        f"a TP degree dividing the model's {model.heads} attention heads, that its"
        f" {model.kv_heads} KV heads divide or that divides them",
        int(y[i]),
    )


def _stages(i, *, model, z, virtual_stages, **_) -> InputError:
    Z, v = int(z[i]), int(virtual_stages[i])
    field, got = ("z", Z) if v == 1 else ("virtual_stages", f"{v} x {Z} stages = {Z * v}")
    return refuse(
        field,
        f"such that Z·v is at most the model's {model.layers} layers: every stage needs one",
        got,
    )


def _experts(i, *, model, x, y, ep, etp=None, **_) -> InputError:
    EP, X, Y = int(ep[i]), int(x[i]), int(y[i])
    ETP = None if etp is None else int(etp[i])
    if model.moe is None:
        return refuse("ep", "1 for a dense model: it has no experts to split", EP)
    if ETP not in (None, 1, Y):
        return refuse(
            "etp",
            f"1 (each chip holds whole experts, EP folded over TP x X) or the TP degree Y = {Y}"
            " (the experts split over TP as the rest)",
            ETP,
        )
    E = model.moe.experts
    if ETP == 1 and Y > 1:
        return refuse(
            "ep",
            f"an EP degree dividing the model's {E} experts, folded over TP Y = {Y} and the data"
            f" axis X = {X}: one that divides {Y}, or {Y} times one that divides {X}",
            EP,
        )
    folds = E % EP == 0 and Y > 1 and EP % Y == 0 and X % (EP // Y) == 0
    return refuse(
        "ep",
        f"an EP degree dividing the model's {E} experts and the data axis X = {X} it is taken"
        " from"
        + (
            f" (or etp 1, whole experts on each chip: EP {EP} over TP {Y} x {EP // Y} of X)"
            if folds
            else ""
        ),
        EP,
    )


def _context(i, *, model, seq_len, batch, pods, x, y, microbatches, cp, given, cp_kind="ring", **_):
    CP, X, Y = int(cp[i]), int(x[i]), int(y[i])
    if given.cp is None:  # the CP implied for whole sequences: the batch is what to change
        T, P, m = 1 if seq_len is None else seq_len, int(pods[i]), int(microbatches[i])
        replicas_have_one = given.microbatches is not None and m > 1 and batch[i] >= T * X * P
        if seq_len is None or replicas_have_one:
            # a token is not split; or fewer microbatches would keep the sequences whole
            return _sequences(
                i,
                model=model,
                seq_len=seq_len,
                batch=batch,
                pods=pods,
                x=x,
                microbatches=microbatches,
                cp=np.ones_like(cp),
                given=given,
            )
        largest = math.gcd(X, T)
        return refuse(
            "batch",
            f"at least {T * X * P * m / largest:,.0f} tokens: each sequence of {T} may be split"
            f" over at most {largest:,} chips of the data axis X = {X:,} (context parallelism"
            " dividing both), and each replica needs a whole sequence per microbatch",
            f"{batch[i].item():,.6g} (CP {CP} would be needed)",
        )
    shard_heads = max(model.kv_heads // Y, 1)
    ulysses = np.broadcast_to(np.asarray(cp_kind) == "ulysses", np.shape(cp))[i]
    return refuse(
        "cp",
        f"a CP degree dividing the data axis X = {X} it is taken from and the sequence of"
        f" {1 if seq_len is None else seq_len}"
        + (f", and the {shard_heads} KV heads of each TP shard (Ulysses)" if ulysses else ""),
        CP,
    )


_REFUSALS = {
    "sequences": _sequences,
    "heads": _heads,
    "stages": _stages,
    "experts": _experts,
    "context": _context,
    "whole": _whole,  # last: the layout's other rules decide the share it splits
}


def stages(*, model: Model, z: ArrayLike, virtual_stages: ArrayLike) -> None:
    """Refuse more (virtual) pipeline stages than layers (see ``runs``).

    Returns
    -------
    None
        Nothing: every (virtual) stage gets a layer.

    Raises
    ------
    InputError
        Naming ``z`` (or ``virtual_stages``) where Z·v exceeds the model's layers.
    """
    z, virtual_stages = np.broadcast_arrays(np.asarray(z), np.asarray(virtual_stages))
    empty = z * virtual_stages > model.layers
    if empty.any():
        raise _stages(first(empty), model=model, z=z, virtual_stages=virtual_stages)
