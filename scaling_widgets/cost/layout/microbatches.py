"""The microbatch counts the planner tries for a layout (MODEL.md §C): k·Z for k of
``PER_STAGE``, and the fewest of whole sequences that the layout's schedule can run, which a
batch of, say, 120 sequences a replica needs on 16 stages (no multiple of 16 divides 120)."""

from __future__ import annotations

import numpy as np

from ..schedules import runs
from ..values import computed

PER_STAGE = (1, 2, 4, 8, 16, 32)  # m = these x Z (x 1 without pipelining: gradient accumulation)
FEWEST_WHOLE = 0  # stands, among the counts a stage, for ``fewest_whole``'s
SIZES = 2 ** np.arange(13)  # sequences a microbatch, a power of two


def fewest_whole(*, workload, x, z, pods, cp, schedule) -> np.ndarray:
    """Per layout, the fewest microbatches its schedule can run, at least one a stage, that split
    a replica's whole sequences S = B·CP/(T·X·P) into 2^k each; 0 where none does, or S is not
    whole (the chapter's average share), or there are no sequences.

    Parameters
    ----------
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length (None: no sequences).
    x : array_like
        X, the data axis of a stage (CP chips included), one entry per layout (1-d) [chips].
    z : array_like
        Z, the pipeline stages, one entry per layout (1-d).
    pods : int or array_like
        P, the pods over the data-center network.
    cp : int or array_like
        CP, the chips that share each sequence (1: none).
    schedule : array_like of str
        The pipeline schedule of each layout (1-d), a name of ``SCHEDULES``.

    Returns
    -------
    microbatches : np.ndarray
        One count per layout, 0 for none [microbatches].
    """
    x = np.asarray(x)
    if workload.seq_len is None:
        return np.zeros_like(x)
    share = workload.batch * np.asarray(cp) / (workload.seq_len * x * pods)
    S = np.round(share).astype(np.int64)
    whole = np.isclose(share, S, rtol=1e-9, atol=0) & (S >= 1)
    counts = S[:, None] // SIZES  # the largest size first gives the fewest
    stages = np.asarray(z)[:, None]
    ok = (S[:, None] % SIZES == 0) & whole[:, None] & (counts >= stages)
    ok &= runs(schedule=np.asarray(schedule)[:, None], stages=stages, microbatches=counts)
    last = SIZES.size - 1 - np.argmax(ok[:, ::-1], axis=1)  # the largest size that works
    return np.where(ok.any(axis=1), counts[np.arange(len(S)), last], 0)


def microbatch_counts(per_stage, layouts: dict, workload, pods, cp) -> tuple:
    """Each layout's microbatches, k·Z for its k of ``PER_STAGE`` or ``fewest_whole``'s for
    ``FEWEST_WHOLE``, and which layouts are new: not a count the k·Z already try, nor none.

    Parameters
    ----------
    per_stage : np.ndarray
        k per layout, one of ``PER_STAGE`` or ``FEWEST_WHOLE`` (int, 1-d).
    layouts : dict of str to np.ndarray
        The layouts' columns, one entry per layout: "x" (X [chips]), "z" (Z) and "schedule",
        and "batch" (B [tokens]) where each layout has its own batch (the strategy map).
    workload : Workload
        The model, B the global batch [tokens] and T the sequence length.
    pods : int or array_like
        P, the data replicas over the data-center network (pods, or groups of the pods a
        pipeline spans), one count or one per layout.
    cp : int, optional
        CP held for every layout; None: searched, and the whole sequences are counted at CP 1.

    Returns
    -------
    microbatches : np.ndarray
        The counts m per layout; 0 where ``fewest_whole`` finds none [microbatches].
    new : np.ndarray
        A boolean per layout: False for a ``FEWEST_WHOLE`` layout whose count is 0 or one that
        k·Z already tries.
    """
    z = layouts["z"]
    counts = per_stage * z
    fewest = per_stage == FEWEST_WHOLE
    if "batch" in layouts:  # each layout at its own batch (the strategy map)
        workload = computed(workload, batch=layouts["batch"][fewest])
    found = fewest_whole(
        workload=workload,
        x=layouts["x"][fewest],
        z=z[fewest],
        pods=np.broadcast_to(pods, len(per_stage))[fewest],
        cp=1 if cp is None else cp,  # the share a replica gets with whole sequences
        schedule=layouts["schedule"][fewest],
    )
    counts[fewest] = found
    new = np.ones(len(per_stage), bool)
    new[fewest] = (found > 0) & ~((found % z[fewest] == 0) & np.isin(found // z[fewest], PER_STAGE))
    return counts, new
