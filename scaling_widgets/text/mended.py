"""What a mended change did, in one line (``fields.mended``): the panel shows it where the change
was made, the command line on stderr."""

from __future__ import annotations

import math

from ..cost.values import SPANS
from . import units


def said(before: dict, after: dict, mends: dict) -> str:
    """One line for ``mends``, the fields set because a change left them impossible; "" for none.

    Parameters
    ----------
    before : dict
        The scenario's state before the change (presets as values).
    after : dict
        The scenario's state with the change and the mends (presets as values).
    mends : dict
        The fields mended, by name, and their new values.

    Returns
    -------
    line : str
        Each mend and why, in one sentence; "" when nothing was mended.
    """
    parts = [part for name in ORDER if name in mends and (part := _part(name, before, after))]
    if not parts:
        return ""
    line = "; ".join(parts)
    return line[0].upper() + line[1:] + "."


ORDER = ("slice_shape", "z", "y", "axis_roles", "matmul_dtype", "profile", "torch_compile",
         "features", "ep", "ep_overlap", *SPANS)  # fmt: skip


def _part(name: str, before: dict, after: dict) -> str:
    chip, chips = after["hardware"], math.prod(after["slice_shape"])
    if name == "slice_shape":
        held = math.prod(before["slice_shape"])
        where = f"from {before['hardware'].name} to {chip.name}: {units.mesh(after['slice_shape'])}"
        if chips == held:
            return f"{where}, the same {chips:,} chips"
        return f"{where}, {chips:,} chips, the nearest to {held:,} that runs this scenario"
    if name == "z":
        return f"pipeline stages back to 1: {before['z']} do not divide {chips:,} chips"
    if name == "y" and not after["optimal_split"]:
        stage = chips // after["z"]
        return f"TP back to 1: {before['y']} does not divide a stage of {stage:,} chips"
    if name == "axis_roles":
        return f"axis roles cleared: the slice has {len(after['slice_shape'])} axes"
    if name == "matmul_dtype":
        return f"matmuls back to bf16: the {chip.name} has no fp8"
    if name == "profile":
        return f"the profile made for the {before['hardware'].name} dropped"
    stack = after["stack"] or f"{chip.name}'s stack"
    if name == "torch_compile":
        return f"torch.compile back to the stack's: {stack} compiles nothing"
    if name == "features":
        named = before["features"].replace(",", ", ")
        return f"the overlaps {named} dropped: {stack} has none of them"
    model = after["model"]
    if name == "ep":
        if model.moe is None:
            return f"expert parallelism off: {model.name} has no experts"
        experts = model.moe.experts
        return f"EP {after['ep']}, the largest up to {before['ep']} dividing {experts} experts"
    if name == "ep_overlap" and model.moe is not None:
        return f"the expert all-to-alls no longer paired: {stack} does not pair passes"
    if name in NAMED:
        return _spans(name, before, after)
    return ""


# the groups that may span pods, by name (MODEL.md §B.9 to §B.12)
NAMED = dict(zip(SPANS, ("FSDP", "the pipeline", "TP", "EP", "CP")))


def _spans(name: str, before: dict, after: dict) -> str:
    """A group across fewer pods: its strategy or model has none to span them, or the most up
    to the count held that divides the pods (and the heads or the experts) spans them."""
    what, kept, held, pods = NAMED[name], after[name], before[name], after["pods"]
    if name == "tp_pods" and kept == 1 and before["strategy"] != after["strategy"]:
        return f"TP inside each pod: {after['strategy']} has no TP group"
    if kept == 1 and after["hardware"].is_gpu and name in ("tp_pods", "ep_pods", "cp_pods"):
        return f"{what} inside each cluster: on GPUs it spans nodes, not clusters over DCN"
    if name == "ep_pods" and after["model"].moe is None:
        return ""  # the line for EP says the model has no experts
    also = {"tp_pods": " and the heads", "ep_pods": " and the experts"}.get(name, "")
    if kept == 1:
        none = "2 does not" if held == 2 else f"no count from 2 to {held}"
        return f"{what} inside each pod: {none} divide{'s' * (held > 2)} {pods}{also}"
    return f"{what} across {kept} pods, the most up to {held} dividing {pods}{also}"
