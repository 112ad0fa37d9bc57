"""What a change makes impossible, mended: another chip, slice, stack or model keeps the scenario
runnable whenever a nearby choice can.

``mended(state, changes)`` is called wherever a user changes a scenario they already have: the
panel's every update, and the command line's flags over a saved scenario (``--scenario``) or a
launch file (``--config``). A field the user gave is never mended; a field left impossible by one
they gave takes its nearest choice that runs, and one line says what changed (``text/mended.py``).
Flags given without a scenario are taken as typed: there is nothing to mend, and a choice that
cannot run is refused by name.
"""

from __future__ import annotations

import math
from typing import Any

from .. import catalog
from ..cost.hardware.slices import slices_near
from ..cost.stacks import COMPILING, PAIRING, REGISTRY, feature_names
from ..cost.step.profiles import default_stack, runs_on
from ..cost.strategies import STRATEGIES
from ..cost.values import SPANS
from ..text import mended as words
from .state import checked, coerced, filled

# the fields whose change can leave another impossible (a slider's batch cannot: it stays instant)
TRIGGERS = ("hardware", "slice_shape", "pods", "stack", "model", "strategy")


def mended(state: dict, changes: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``changes`` with the fields they leave impossible mended, and the line that says so.

    - Another chip, its slice not given: the chip's slice nearest the chips held that runs the
      scenario (the same count if one does), else its default slice; fp8 matmuls where the chip
      has none back to bf16, a profile made for another chip dropped, and the switches its stack
      lacks back to the stack's.
    - Another slice: stages that no longer divide it back to 1, axis roles of another count of
      axes cleared, and a split by hand kept whole, its TP degree where it still divides a stage.
    - Another stack: torch.compile and the pairing of passes back where the stack has neither.
    - Another model: a dense model drops expert parallelism; a MoE model takes the largest EP up to
      the one held that divides its experts.
    - Another count of pods: FSDP across the largest count of them up to the one held that
      divides it.

    Parameters
    ----------
    state : dict
        The scenario as it stands: a state of the fields (``fields.checked`` takes it).
    changes : dict of str to any
        The fields the user sets now, by name; each is kept as given.

    Returns
    -------
    changes : dict of str to any
        ``changes`` and the mends they need. Where ``state`` or a change cannot be read, the
        changes as given: ``fields.checked`` then says why.
    said : str
        What was mended, in one line; "" when nothing was.
    """
    if not set(changes) & set(TRIGGERS):  # a batch, a split...: nothing to mend, nothing read
        return dict(changes), ""
    try:
        before = filled(coerced(state))
        new = coerced({k: v for k, v in changes.items() if k in before})
    except (ValueError, TypeError):
        return dict(changes), ""
    moved = {k for k, v in new.items() if v is not before[k] and v != before[k]}
    mends: dict[str, Any] = {}
    if "hardware" in moved:
        mends.update(_lacked(before, new["hardware"]))
        if "slice_shape" not in changes:
            mends.update(_nearest_slice(before, {**new, **mends}, changes))
    if "slice_shape" in moved:  # None: the chip's default slice
        shape = filled({**before, **new})["slice_shape"]
        mends.update(_onto_slice({**before, **new, "slice_shape": shape}, shape))
    after = {**before, **mends, **new}
    if moved & {"hardware", "stack"}:
        mends.update(_switches_kept(after))
    if "model" in moved:
        mends.update(_experts_kept(after))
    if "pods" in moved:
        mends.update(_pods_shared(after))
    if "strategy" in moved and STRATEGIES[after["strategy"]].on == "x":
        mends["tp_pods"] = 1  # no TP group left to span pods
    mends = {k: v for k, v in mends.items() if k not in changes and v != before.get(k)}
    return {**changes, **mends}, words.said(before, {**before, **mends, **new}, mends)


def _lacked(before: dict, chip) -> dict:
    """What another chip has not: fp8 matmuls, a profile made for the chip left behind, and on
    GPUs TP, EP or CP across pods (MODEL.md §B.11 to §B.13)."""
    out = {}
    if before["matmul_dtype"] == "fp8" and not chip.flops_fp8:
        out["matmul_dtype"] = "bf16"
    if chip.is_gpu:
        out.update({name: 1 for name in SPANS[2:] if before[name] > 1})  # TP, EP and CP's
    if before["profile"] is not None and not runs_on(before["profile"], chip):
        out["profile"] = None
    return out


def _nearest_slice(before: dict, new: dict, changes: dict) -> dict:
    """The new chip's slice nearest the chips held that runs the scenario, else its default."""
    chip, held = new["hardware"], math.prod(before["slice_shape"])
    for shape in slices_near(chip, held):
        moved = {**new, **_onto_slice({**before, **new}, shape)}
        try:
            checked({**before, **moved, **changes}, tuple({**changes, **moved}))
        except (ValueError, TypeError):
            continue
        return moved
    return _onto_slice({**before, **new}, chip.default_slice)


def _onto_slice(state: dict, shape: tuple) -> dict:
    """Stages back to 1 where they no longer divide the slice, axis roles of another count of
    axes cleared, a split by hand kept whole (its TP degree where it divides a stage)."""
    chips = math.prod(shape)
    z = state["z"] if chips % state["z"] == 0 else 1
    roles = state["axis_roles"]
    stage = chips // z
    y = state["y"] if state["y"] and stage % state["y"] == 0 else 1
    return {
        "slice_shape": tuple(shape),
        "z": z,
        "axis_roles": () if roles and len(roles) != len(shape) else roles,
        "x": stage // y,
        "y": y,
    }


def _switches_kept(state: dict) -> dict:
    """torch.compile back to the stack's, the pairing of passes off, and the features back to the
    stack's defaults, where the stack (the chip's, unless one is named) has none of them."""
    stack = state["stack"] or default_stack(state["hardware"])
    out = {}
    if state["torch_compile"] and stack not in COMPILING:
        out["torch_compile"] = None
    if state["ep_overlap"] and stack not in PAIRING:
        out["ep_overlap"] = False
    offered = REGISTRY[stack].features
    if state["features"] not in (None, "none") and not set(feature_names(state["features"])) <= set(
        offered
    ):
        out["features"] = None  # the named stack's own defaults
    return out


def _experts_kept(state: dict) -> dict:
    """A dense model without expert parallelism; a MoE model with the largest EP up to the one
    held that divides its experts."""
    model = catalog.model(state["model"])
    if model.moe is None:
        return {"ep": 1, "etp": None, "ep_overlap": False, "ep_pods": 1}
    ep = state["ep"]
    while model.moe.experts % ep:
        ep -= 1
    pods = state["ep_pods"]  # and the pods the group spans: EP x pods divides the experts
    while model.moe.experts % (ep * pods):
        pods -= 1
    return {"ep": ep, "ep_pods": pods}


def _pods_shared(state: dict) -> dict:
    """FSDP, the pipeline and TP across the largest count of pods up to the one held that
    divides the pods (and for TP, with a pod's Y, the heads; for EP, with a pod's EP, the
    experts)."""
    heads, y = catalog.model(state["model"]).heads, state["y"] or 1
    kept = {}
    experts = catalog.model(state["model"]).moe
    ep = state["ep"]
    for name in SPANS:
        shared = state[name]
        # TP's group in all its pods divides the heads too, EP's the experts
        while (
            state["pods"] % shared
            or (name == "tp_pods" and heads % (y * shared))
            or (name == "ep_pods" and experts is not None and experts.experts % (ep * shared))
        ):
            shared -= 1
        kept[name] = shared
    return kept
