"""What a layout that breaks one of ``feasible.runs``' rules is told: the field to mend, what it
got, and the nearest values that would run (MODEL.md §A.3, §A.6, §D.2, §D.3).

Each takes the index of the first layout that breaks the rule and the placed layout's keywords,
and returns the ``InputError`` that ``feasible.possible`` raises.
"""

from __future__ import annotations

import math

import numpy as np

from ..ground.refusals import InputError, refuse
from ..schedules import SCHEDULES
from ..step.pipeline import ENDS_AS_LAYERS


def sequences(i, *, model, seq_len, batch, pods, x, microbatches, cp, given, **_) -> InputError:
    """Too few sequences: fewer microbatches would do if each replica has one; else more batch.

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    model : Model
        The model (not read here).
    seq_len : int, optional
        T, the sequence length [tokens]; None: the chapter's token count.
    batch : np.ndarray
        B per layout, the global batch [tokens].
    pods : np.ndarray
        P per layout, the pods over the data-center network.
    x : np.ndarray
        X per layout, the data axis of a stage, its CP chips included [chips].
    microbatches : np.ndarray
        m per layout, the microbatches a step.
    cp : np.ndarray
        CP per layout, the chips that share each sequence.
    given : Layout
        The layout as asked for: whether its ``microbatches`` were given.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``microbatches`` (at most the sequences each replica gets) or ``batch`` (the tokens
        a whole sequence for every replica and microbatch needs).
    """
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


def whole(i, *, seq_len, batch, pods, x, microbatches, cp, given, **_) -> InputError:
    """Microbatches of part sequences: name the counts near the one given that split whole.

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    seq_len : int
        T, the sequence length [tokens].
    batch : np.ndarray
        B per layout, the global batch [tokens].
    pods : np.ndarray
        P per layout, the pods over the data-center network.
    x : np.ndarray
        X per layout, the data axis of a stage, its CP chips included [chips].
    microbatches : np.ndarray
        m per layout, the microbatches a step.
    cp : np.ndarray
        CP per layout, the chips that share each sequence.
    given : Layout
        The layout as asked for: whether its ``microbatch_seqs`` were given names the field.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``microbatches`` (or ``microbatch_seqs``), with up to three counts nearest the one
        given that divide a replica's S whole sequences.
    """
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


def heads(i, *, model, y, given, **_) -> InputError:
    """A TP degree that does not divide the attention heads, or that the KV heads neither divide
    nor are divided by: name ``y`` and the model's heads; ``tp_pods`` where the group spans pods
    (MODEL.md §B.11).

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    model : Model
        The model: N_h and K, its heads and KV heads.
    y : np.ndarray
        Y per layout, the tensor-parallel degree, in all the pods it spans [chips].
    given : Layout
        The layout as asked for: its ``tp_pods``.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``y``, or ``tp_pods``.
    """
    T = int(np.broadcast_to(given.tp_pods, np.shape(y))[i])
    if T > 1:
        return refuse(
            "tp_pods",
            f"a count of pods whose TP groups, Y x pods, divide the model's {model.heads} heads"
            f" (and its {model.kv_heads} KV heads divide them or they the KV heads)",
            f"{T} (TP {int(y[i]) // T} in each: {int(y[i])} chips)",
        )
    return refuse(
        "y",
        f"a TP degree dividing the model's {model.heads} attention heads, that its"
        f" {model.kv_heads} KV heads divide or that divides them",
        int(y[i]),
    )


def stages(i, *, model, z, virtual_stages, given, schedule="1f1b", **_) -> InputError:
    """More (virtual) pipeline stages than layers: name ``z``, or ``virtual_stages`` when v > 1.

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    model : Model
        The model: L, its layers.
    z : np.ndarray
        Z per layout, the pipeline stages.
    virtual_stages : np.ndarray
        v per layout, the virtual stages a device.
    given : Layout
        The layout as asked for: which ends take a layer's place (``ends_as_layers``), or the
        first and the last stage's layers.
    schedule : str or np.ndarray, default "1f1b"
        The schedule per layout: a V's ends share a device.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``z`` or ``virtual_stages``: Z·v at most L and the ends that take a layer's
        place, with ends_as_layers 'both' where that would run.
    """
    Z, v = int(z[i]), int(virtual_stages[i])
    if given.first_stage_layers is not None or given.last_stage_layers is not None:
        return _given_ends(model, Z, v, given, str(np.broadcast_to(schedule, np.shape(z))[i]))
    field, got = ("z", Z) if v == 1 else ("virtual_stages", f"{v} x {Z} stages = {Z * v}")
    spans = int(np.broadcast_to(given.pp_pods, np.shape(z))[i])
    if spans > 1 and v == 1:  # the stages in all the pods a pipeline spans (MODEL.md §B.10)
        each = Z // spans
        field, got = "pp_pods", f"{spans} pods x {each} stage{'s' * (each > 1)} = {Z}"
    ends = sum(ENDS_AS_LAYERS[given.ends_as_layers])
    # Megatron-LM's answer, where it is the nearest: the embedding and the loss take a stage's
    # place each (Llama 3 405B's 126 layers on 8 x 16 virtual stages)
    both_would_run = ends < 2 and Z * v <= model.layers + 2
    return refuse(
        field,
        f"such that Z·v is at most the model's {model.layers} layers"
        + (f" and {ends} end{'s' * (ends > 1)}" if ends else "")
        + ": every stage needs one"
        + (
            " (or ends_as_layers 'both': the embedding and the loss then take a layer's place each)"
            if both_would_run
            else ""
        ),
        got,
    )


def _given_ends(model, Z, v, given, schedule) -> InputError:
    """The first or the last stage's layers given, and the stages between them left without a
    layer each (or with layers and no stage to take them, or a V whose ends share a device)."""
    first, last = given.first_stage_layers, given.last_stage_layers
    field, got = ("first_stage_layers", first) if first is not None else ("last_stage_layers", last)
    if SCHEDULES[schedule].ends_together:
        return refuse(field, f"unset with {schedule}, whose ends share a device", got)
    between = max(Z - (first is not None) - (last is not None), 0)
    rest = model.layers - (first or 0) - (last or 0)
    return refuse(
        field,
        f"such that the {between} stages between the first and the last get a layer for each of"
        f" their {v} virtual stages, and take all that is left of the model's {model.layers}",
        f"{got}, which leaves {rest} layers for {between * v} virtual stages",
    )


def experts(i, *, model, x, y, ep, given, etp=None, **_) -> InputError:
    """An EP degree that does not split the experts and the axes it is taken from, or an expert
    TP other than 1 or Y: name ``ep`` (or ``etp``) and what would divide.

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    model : Model
        The model: E, its experts (none for a dense model).
    x : np.ndarray
        X per layout, the data axis of a stage, its CP chips included [chips].
    y : np.ndarray
        Y per layout, the tensor-parallel degree [chips].
    ep : np.ndarray
        EP per layout, the expert-parallel degree [chips].
    given : Layout
        The layout as asked for: its ``ep_pods``.
    etp : np.ndarray, optional
        The routed experts' TP per layout: 1 folds EP over TP x X, Y splits them as the rest;
        None: as Y.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``ep`` or ``etp``; ``ep_pods`` where the group spans pods (MODEL.md §B.12).
    """
    EP, X, Y = int(ep[i]), int(x[i]), int(y[i])
    ETP = None if etp is None else int(etp[i])
    if model.moe is None:
        return refuse("ep", "1 for a dense model: it has no experts to split", EP)
    pods = int(np.broadcast_to(given.ep_pods, np.shape(ep))[i])
    if pods > 1 and model.moe.experts % (EP * pods):
        return refuse(
            "ep_pods",
            f"a count of pods whose EP groups, EP x pods, divide the {model.moe.experts} experts",
            f"{pods} (EP {EP} in each: {EP * pods} chips)",
        )
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


def context(i, *, model, seq_len, batch, pods, x, y, microbatches, cp, given, cp_kind="ring", **_):
    """A CP degree that does not divide the data axis and the sequence (and, under Ulysses, the
    KV heads of a TP shard): where CP was implied, the batch that would do; else ``cp``.

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    model : Model
        The model: K, its KV heads.
    seq_len : int, optional
        T, the sequence length [tokens]; None: the chapter's token count.
    batch : np.ndarray
        B per layout, the global batch [tokens].
    pods : np.ndarray
        P per layout, the pods over the data-center network.
    x : np.ndarray
        X per layout, the data axis of a stage, its CP chips included [chips].
    y : np.ndarray
        Y per layout, the tensor-parallel degree [chips].
    microbatches : np.ndarray
        m per layout, the microbatches a step.
    cp : np.ndarray
        CP per layout, the chips that share each sequence.
    given : Layout
        The layout as asked for: whether its ``cp`` and ``microbatches`` were given.
    cp_kind : str or np.ndarray, default "ring"
        How CP passes keys and values: "ring", "all-gather" or "ulysses".
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``batch`` where CP was implied (``microbatches`` where fewer would do: as
        ``sequences``), else ``cp``.
    """
    CP, X, Y = int(cp[i]), int(x[i]), int(y[i])
    if given.cp is None:  # the CP implied for whole sequences: the batch is what to change
        T, P, m = 1 if seq_len is None else seq_len, int(pods[i]), int(microbatches[i])
        replicas_have_one = given.microbatches is not None and m > 1 and batch[i] >= T * X * P
        if seq_len is None or replicas_have_one:
            # a token is not split; or fewer microbatches would keep the sequences whole
            return sequences(
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
    C = int(np.broadcast_to(given.cp_pods, np.shape(cp))[i])  # the pods the group spans (§B.13)
    spans = f", times the {C} pods it spans," if C > 1 else ""
    return refuse(
        "cp",
        f"a CP degree dividing the data axis X = {X} it is taken from and{spans} the sequence of"
        f" {1 if seq_len is None else seq_len}"
        + (f", and the {shard_heads} KV heads of each TP shard (Ulysses)" if ulysses else ""),
        CP // C,
    )


def schedule(
    i, *, z, microbatches, seq_len, batch, pods, x, cp, schedule="1f1b", **_
) -> InputError:
    """A schedule that cannot run this many microbatches on these stages: the nearest count that
    it can (splitting a replica's whole sequences evenly), or the stages' count where no count
    would do (DualPipe's even stages).

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    z : np.ndarray
        Z per layout, the pipeline stages.
    microbatches : np.ndarray
        m per layout, the microbatches a step.
    seq_len : int, optional
        T, the sequence length [tokens]; None: the chapter's token count.
    batch : np.ndarray
        B per layout, the global batch [tokens].
    pods : np.ndarray
        P per layout, the pods over the data-center network.
    x : np.ndarray
        X per layout, the data axis of a stage, its CP chips included [chips].
    cp : np.ndarray
        CP per layout, the chips that share each sequence.
    schedule : str or np.ndarray, default "1f1b"
        The pipeline schedule, a name of ``SCHEDULES``, or one per layout.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``microbatches`` with the nearest count that runs, or ``z`` where none does.
    """
    name = str(np.broadcast_to(np.asarray(schedule), np.shape(z))[i])
    Z, m, member = int(z[i]), int(microbatches[i]), SCHEDULES[name]
    counts = np.arange(1, m + 4 * Z + 3)
    fits = counts[member.runs(stages=np.full_like(counts, Z), microbatches=counts)]
    share = batch[i].item() * int(cp[i]) / ((seq_len or 1) * int(x[i]) * int(pods[i]))
    if seq_len is not None and abs(share - round(share)) < 1e-9 * share:  # whole sequences
        even = fits[round(share) % fits == 0]
        fits = even if len(even) else fits
    if not len(fits):
        return refuse("z", f"a count of stages Z that {member.label} can run: {member.needs}", Z)
    nearest = fits[np.argsort(np.abs(fits - m), kind="stable")[0]]
    return refuse(
        "microbatches",
        f"a count m that {member.label} can run on Z = {Z} stages, {member.needs} (e.g."
        f" {nearest}), or another schedule",
        m,
    )


def pairs(i, *, z, virtual_stages, ep, given, schedule="1f1b", **_) -> InputError:
    """Combined 1F1B where it cannot run: the first of EP, the recompute, the schedule or its
    virtual stages that Megatron-LM's config refuses with it.

    Parameters
    ----------
    i : tuple of int
        The index of the first layout that breaks the rule (``first``; ``()`` for one).
    z : np.ndarray
        Z per layout, the pipeline stages.
    virtual_stages : np.ndarray
        v per layout, the virtual stages a device.
    ep : np.ndarray
        EP per layout, the expert-parallel degree [chips].
    given : Layout
        The layout as asked for: its ``remat``, the recompute policy.
    schedule : str or np.ndarray, default "1f1b"
        The pipeline schedule, a name of ``SCHEDULES``, or one per layout.
    **_
        The placed layout's other keywords, not read.

    Returns
    -------
    error : InputError
        Naming ``ep``, ``remat``, ``schedule`` or ``virtual_stages``, the first that breaks a
        check.

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (Megatron-LM's combined 1F1B).
    .. [2] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/transformer/transformer_config.py`` (``TransformerConfig.__post_init__``:
       the checks of ``overlap_moe_expert_parallel_comm``).
    """
    pick = lambda value: np.broadcast_to(np.asarray(value), np.shape(z))[i]  # noqa: E731
    EP, Z, v = int(pick(ep)), int(pick(z)), int(pick(virtual_stages))
    if EP == 1:
        return refuse("ep", "above 1 with ep_overlap, which hides the expert all-to-alls", EP)
    if str(pick(given.remat)) == "full":
        return refuse(
            "remat",
            "'selective' or 'none' with ep_overlap (full recompute breaks its pairs)",
            "full",
        )
    if str(pick(schedule)) != "interleaved":
        return refuse(
            "schedule",
            f"'interleaved' with ep_overlap on Z = {Z} stages (or one stage)",
            str(pick(schedule)),
        )
    return refuse("virtual_stages", "2 or more with ep_overlap on an interleaved schedule", v)


REFUSALS = {
    "sequences": sequences,
    "heads": heads,
    "stages": stages,
    "schedule": schedule,
    "experts": experts,
    "context": context,
    "pairs": pairs,
    "whole": whole,  # last: the layout's other rules decide the share it splits
}
