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


def sequences(i, *, model, seq_len, batch, pods, x, microbatches, cp, given, **_) -> InputError:
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


def whole(i, *, seq_len, batch, pods, x, microbatches, cp, given, **_) -> InputError:
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


def heads(i, *, model, y, **_) -> InputError:
    return refuse(
        "y",
        f"a TP degree dividing the model's {model.heads} attention heads, that its"
        f" {model.kv_heads} KV heads divide or that divides them",
        int(y[i]),
    )


def stages(i, *, model, z, virtual_stages, **_) -> InputError:
    Z, v = int(z[i]), int(virtual_stages[i])
    field, got = ("z", Z) if v == 1 else ("virtual_stages", f"{v} x {Z} stages = {Z * v}")
    return refuse(
        field,
        f"such that Z·v is at most the model's {model.layers} layers: every stage needs one",
        got,
    )


def experts(i, *, model, x, y, ep, etp=None, **_) -> InputError:
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


def context(i, *, model, seq_len, batch, pods, x, y, microbatches, cp, given, cp_kind="ring", **_):
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
    return refuse(
        "cp",
        f"a CP degree dividing the data axis X = {X} it is taken from and the sequence of"
        f" {1 if seq_len is None else seq_len}"
        + (f", and the {shard_heads} KV heads of each TP shard (Ulysses)" if ulysses else ""),
        CP,
    )


def schedule(
    i, *, z, microbatches, seq_len, batch, pods, x, cp, schedule="1f1b", **_
) -> InputError:
    """A schedule that cannot run this many microbatches on these stages: the nearest count that
    it can (splitting a replica's whole sequences evenly), or the stages' count where no count
    would do (DualPipe's even stages)."""
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
    virtual stages that Megatron-LM's config refuses with it."""
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
