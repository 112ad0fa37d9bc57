"""Memory in words: the chapter's count (MODEL.md §A.4) and the busiest chip's peak (MODEL.md
§E)."""

from __future__ import annotations

import numpy as np

from ..cost import Estimate
from ..cost.evaluation.step import profile_of
from ..cost.memory.peak import PARTS
from ..cost.memory.verdict import UNCERTAINTY
from . import units
from .lines import Line

PART_NAMES = {
    "weights": "weights",
    "grads": "gradients",
    "optimizer": "optimizer",
    "optimizer_step": "the step's own buffers",
    "activations": "activations",
    "working_set": "backward working set",
    "logits": "logits and loss",
    "outputs_held": "outputs held",
    "buffers": "communication buffers",
    "workspaces": "matmul workspaces",
    "overhead": "runtime overhead",
    "allocator": "allocator reserve",
}


def stack_name(e: Estimate) -> str:
    """The profile an estimate read, with its stack: what it assumes the software keeps, and
    whether it compiles.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    name : str
        The profile's name, with ", compiled" when its stack runs torch.compile.
    """
    profile = profile_of(e.chip, e.options)
    return f"{profile.name}, compiled" if profile.torch_compile else profile.name


def stage_name(e: Estimate) -> str:
    """Which pipeline stage is the busiest, and what sets it apart.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    name : str
        "one stage" without a pipeline; else the first stage (embeddings, most microbatches in
        flight), the second (the most layers, where the ends take a layer's place) or the last
        (output layer, logits), of Z.
    """
    Z, stage = int(np.max(e.z)), int(e.peak.stage)
    if Z == 1:
        return "one stage"
    if stage == 0:
        return f"stage 1 of {Z}: the embeddings and the most microbatches in flight"
    if stage < Z - 1:  # a middle stage, where the ends take a layer's place on theirs
        return f"stage {stage + 1} of {Z}: the most layers, the ends taking a layer's place"
    return f"stage {Z} of {Z}: the output layer and the logits"


def chapter_count(e: Estimate) -> Line:
    """The chapter's memory per chip, part by part (MODEL.md §A.4, §B.8): a lower bound.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A "memory" line: weights, gradients, optimizer state, activations and, when given, the
        runtime overhead, and their sum [bytes].
    """
    mem = e.memory
    kinds = {
        "weights": mem.params,
        "grads": mem.grads,
        "optimizer": mem.optimizer,
        "activations": mem.activations,
    }
    if np.any(mem.overhead):
        kinds["runtime overhead"] = mem.overhead
    parts = " + ".join(f"{k} {units.nbytes(float(v))}" for k, v in kinds.items())
    return Line.of(
        "memory",
        f"Memory per chip, the chapter's count: {parts} = {units.nbytes(float(mem.total))}",
    )


def peak(e: Estimate) -> Line:
    """The busiest chip's peak by part against HBM, and whether it fits (MODEL.md §E).

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A "memory" line: the busiest stage and the stack, each part above zero, the reserved and
        allocated peak against HBM [bytes], the share of HBM it may use when below 100 %, and
        whether it fits.
    """
    p, hbm = e.peak, e.chip.usable_hbm
    recomputed = float(p.recomputed)
    said = {"logits": f" ({units.nbytes(recomputed)} of fp32 copies recomputed, over the limit)"}
    parts = " + ".join(
        f"{PART_NAMES[k]} {units.nbytes(float(getattr(p, k)))}{said.get(k, '') * (recomputed > 0)}"
        for k in PARTS
        if float(getattr(p, k)) > 0
    )
    reserved = float(p.reserved)
    below = f" (below {e.fits_below:.0%} of it)" if e.fits_below < 1 else ""
    usable = " usable" if e.chip.usable_hbm != e.chip.hbm_bytes else ""
    beside = e.chip.runtime_bytes  # held outside the allocator, named (MODEL.md §E.5)
    runtime = f"; CUDA's context and NCCL hold {units.nbytes(beside)} beside it" if beside else ""
    verdict = {"does not fit": "DOES NOT FIT"}.get(str(e.verdict), str(e.verdict))
    margin = f", within the peak's ±{UNCERTAINTY:.0%}" if str(e.verdict) == "tight" else ""
    return Line.of(
        "memory",
        f"Peak per chip ({stage_name(e)}; {stack_name(e)}): {parts} = {units.nbytes(reserved)}"
        f" reserved, {units.nbytes(float(p.allocated))} allocated,"
        f" of {units.nbytes(hbm)}{usable} HBM ({reserved / hbm:.0%}{runtime}){below}:"
        f" {verdict}{margin}",
    )


def peak_record(e: Estimate) -> dict:
    """The peak as JSON: each part, allocated and reserved [bytes], what the stack reports, the
    stage.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    record : dict
        Each part of ``PARTS``, "allocated", "reserved" and "reported" [bytes]; "measures"
        (which of the two the stack reports); "stage", the busiest, counted from 1; "stages",
        Z; "stack" (``stack_name``); "recomputed_to_fit", the loss's copies of the logits a
        compiler recomputes for the program to fit, left out of "logits" [bytes].
    """
    p = e.peak
    return {
        **{k: float(getattr(p, k)) for k in PARTS},
        "allocated": float(p.allocated),
        "reserved": float(p.reserved),
        "reported": float(p.reported),
        "measures": p.measures,
        "stage": int(p.stage) + 1,
        "stages": int(np.max(e.z)),
        "stack": stack_name(e),
        "recomputed_to_fit": float(p.recomputed),
    }
