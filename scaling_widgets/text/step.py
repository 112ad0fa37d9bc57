"""The step in words: the chapter's at a given MFU, the predicted one term by term, the time to
train, and what binds a layout (MODEL.md §A.10, §C.4, §C.5)."""

from __future__ import annotations

import math

import numpy as np

from ..cost import Estimate
from ..cost.stacks import REGISTRY, feature_names
from ..cost.step.interval import LEVEL
from ..cost.step.profiles import default_stack
from . import memory, units
from .lines import Line, Math, tex_sci, tex_text

# What moves on the axis that binds (MODEL.md §A.3, §B.3), by LayerTimes.worst_axis.
COLLECTIVES = {
    "dp": "DP AllReduce of the gradients (X)",
    "fsdp": "FSDP AllGather and ReduceScatter (X)",
    "tp": "TP AllGather and ReduceScatter (Y)",
    "dcn": "AllReduce across pods (DCN)",
    "ep": "expert all-to-all (EP)",
    "cp": "context-parallel keys and values (CP)",
}


# The MFU convention beside every MFU (MODEL.md §C.4): sources count differently.
MFU_CONVENTION = (
    "model FLOPs 6Ψ per token (+ 12·L·T·N_h·H with attention FLOPs on); recompute is counted in the"
    " HFU only; against the bf16 peak, fp8 runs too, as sources report them"
)
TERM_NAMES = {
    "matmul": "matmuls",
    "memory_bound": "memory-bound work",
    "tp_exposed": "TP collectives",
    "stage_to_stage": "stage-to-stage",
    "bubble": "bubble",
    "dp_exposed": "DP reduction",
    "fsdp_exposed": "ZeRO-3 traffic",
    "ep_exposed": "expert all-to-all",
    "cp_exposed": "context-parallel K/V",
    "dcn_exposed": "DCN reduction",
    "optimizer": "optimizer",
    "overhead": "fixed costs",
    "slowest_chip": "the slowest chip",
}


def predicted_step(e: Estimate) -> Line:
    """The predicted step (MODEL.md §C.5), term by term, and the MFU and HFU it achieves.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A "step" line: the profile, each term of at least 0.05 % of the step and their sum
        [s], the MFU and HFU with the convention they count by (``MFU_CONVENTION``), and what
        the schedule's paired passes hide of the expert and CP traffic.
    """
    t, mfu, hfu = float(e.step_time), float(e.mfu), float(e.hfu)
    terms = [
        (TERM_NAMES[k], float(v)) for k, v in e.step_breakdown.items() if float(v) >= 0.0005 * t
    ]
    parts = " + ".join(f"{name} {units.seconds(v)}" for name, v in terms)
    return Line.of(
        "step",
        f"Predicted step ({memory.stack_name(e)} profile): {parts} = {units.seconds(t)}"
        f"{_interval(e)};"
        f" MFU {mfu:.1%}, HFU {hfu:.1%} ({MFU_CONVENTION}){_features(e)}{_hidden(e)}",
    )


def _interval(e: Estimate) -> str:
    """The step's interval and what it rests on (MODEL.md §F.3)."""
    if e.step_interval is None:
        return ""
    low, high = (units.seconds(float(t)) for t in e.step_interval)
    spread = e.spread
    return (
        f" ({LEVEL:.0%} interval {low} to {high}: where {LEVEL:.0%} of {spread.runs} published"
        f" runs ({spread.pool}, {spread.sources} sources) fell around predictions made without"
        " their source)"
    )


def _features(e: Estimate) -> str:
    """The stack's features that hide traffic, those on, and whose word that is: the layout's,
    or the defaults of the release its module cites (MODEL.md §F.2)."""
    stack = REGISTRY.get(e.options.stack or default_stack(e.chip))
    if stack is None or not stack.features:
        return ""
    given = e.options.features
    on = feature_names(given) if given is not None else stack.defaults_at(int(e.zero))
    whose = "as given" if given is not None else f"{stack.name}'s defaults at its cited release"
    return f"; overlaps on: {', '.join(on) or 'none'} ({whose})"


def _hidden(e: Estimate) -> str:
    """What the schedule's paired passes hide of the expert and CP traffic, and what is left."""
    said = [
        f"{units.seconds(float(e.hidden[k]))} of the {TERM_NAMES[term]}"
        f" ({units.seconds(float(e.step_breakdown[term]))} left)"
        for k, term in (("ep", "ep_exposed"), ("cp", "cp_exposed"))
        if e.hidden and float(e.hidden[k]) > 0
    ]
    pairing = "combined 1F1B (ep_overlap)" if e.layout.ep_overlap else e.schedule
    return f"; {pairing}'s paired passes hide " + " and ".join(said) if said else ""


def step(e: Estimate) -> Line:
    """The step time: compute at the utilisation, or the exposed communication, and the bubble.

    With a predicted step, the line of ``predicted_step``; with a measured one, the MFU it
    implies, B·f/(N·C·t); at an MFU η given, B·f/(N·C·η) with the numbers substituted.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A "step" line: the formula with the numbers substituted, the exposed communication when
        it is longer than the compute, the pipeline bubble, the step [s], the MFU and, where
        recompute makes it differ, the HFU.

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (step time with an MFU given), §A.10 (what is reported) and §B.1
       (MFU and HFU; recompute costs time).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP).
    .. [3] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020
       (6·N FLOPs a token).
    """
    if e.step_breakdown is not None:
        return predicted_step(e)
    n, C = int(e.chips), e.chip.flops
    B = units.batch(float(e.batch))
    mfu, hfu, t = float(e.mfu), float(e.hfu), float(e.step_time)
    hardware = "" if np.isclose(hfu, mfu) else f", HFU {hfu:.1%} ({e.remat} recompute)"
    if e.calibrated:
        f = float(e.flops_per_token)
        plain = f"MFU = B·f/(N·C·t) = {B}·{units.sci(f)}/({n:,}·{units.sci(C)}·{t:g}) = {mfu:.1%}"
        tex = (
            rf"\eta = \frac{{B f}}{{N C t}} = "
            rf"\frac{{{tex_text(B)}\cdot {tex_sci(f)}}}{{{n:,}\cdot {tex_sci(C)}"
            rf"\cdot {t:g}}} = {100 * mfu:.1f}\%"
        )
        return Line.of(
            "step", f"A measured step of {units.seconds(t)} implies ", Math(plain, tex), hardware
        )
    f_hw, eta = float(e.hardware_flops_per_token), e.options.mfu
    per_token = "6Ψ + 12·L·T·N_h·H" if e.options.attention_flops else "6Ψ"
    per_token += " + recompute" if f_hw > float(e.flops_per_token) else ""
    compute, comm = float(e.compute_time), float(e.comm_time)
    parts = [
        f"Step time at {eta:.0%} of peak: ",
        Math(
            f"B·f/(N·C·η) = {B}·{units.sci(f_hw)}/({n:,}·{units.sci(C)}·{eta:g}) = "
            f"{units.seconds(compute)}",
            rf"\frac{{B f}}{{N C \eta}} = "
            rf"\frac{{{tex_text(B)}\cdot {tex_sci(f_hw)}}}{{{n:,}\cdot {tex_sci(C)}\cdot"
            rf" {eta:g}}} = \text{{{units.seconds(compute)}}}",
        ),
        f" with f = {per_token} = {units.sci(f_hw)} FLOPs a token",
    ]
    if comm > compute:  # MODEL.md §A.10: the exposed communication sets the step
        parts.append(f"; the exposed communication is longer, {units.seconds(comm)}")
    if e.bubble > 0:
        parts.append(
            f"; the pipeline bubble adds {float(e.bubble):.0%} (and "
            f"{units.seconds(float(e.stage_traffic))}"
            " of stage-to-stage traffic, overlapped)"
        )
    if not np.isclose(t, compute):  # the bubble or the exposed communication stretched it
        parts.append(f" → {units.seconds(t)}")
    parts.append(f"; MFU {mfu:.1%}{hardware}")
    return Line.of("step", *parts)


def time_to_train(e: Estimate) -> Line:
    """The time to train on the tokens given and, with failures and checkpoints, the whole run
    (MODEL.md §A.5, §H).

    Parameters
    ----------
    e : Estimate
        The estimate of one layout, with the tokens to train on (``e.training_time`` is not
        None).

    Returns
    -------
    line : Line
        A "time" line: the steps' time [s]; with a run, the failures, the checkpoint a chip
        writes [bytes], its interval (Young/Daly's unless given), the restart, and the goodput,
        wall clock, chip-hours, energy and cost, or why the run never finishes.

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (time to train is tokens/B steps) and §H (the whole run).
    .. [2] J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM
       1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
       dumps", FGCS 2006.
    """
    days = units.seconds(float(e.training_time))
    head = f"Time to train on {units.count(float(e.tokens))} tokens: {days} of steps"
    return Line.of("time", head + _the_run(e) + (", if it fit." if not e.fits else "."))


def _the_run(e: Estimate) -> str:
    """What failures and checkpoints make of the run (MODEL.md §H), and what it costs."""
    r, o = e.run, e.options
    if r is None:
        return ""
    M, tau = float(r.between_failures), float(r.interval)
    failing = (
        f"the job failing every {units.seconds(M)} ({units.sci(o.failure_rate)} a chip-hour)"
        if math.isfinite(M)
        else "no failures"
    )
    every = "never" if not math.isfinite(tau) else f"every {units.seconds(tau)}"
    chosen = " (Young/Daly)" if o.checkpoint_interval is None and math.isfinite(tau) else ""
    said = (
        f"; with {failing}, {units.nbytes(float(r.checkpoint_bytes))} of checkpoint a chip written"
        f" in {units.seconds(float(r.checkpoint_write))} {every}{chosen} and"
        f" {units.seconds(o.restart_time)} to restart"
    )
    if float(r.goodput) == 0:
        why = (
            "a checkpoint's write fills its interval"
            if float(r.checkpoint_write) >= tau
            else "failures outpace its checkpoints"
        )
        return said + f": the run never finishes, {why}"
    said += (
        f", goodput {float(r.goodput):.1%}: {units.seconds(float(r.wall))} on the wall clock,"
        f" {units.count(float(r.chip_hours))} chip-hours"
    )
    if r.energy is not None:
        watts = e.chip.power if o.chip_power is None else o.chip_power
        said += f", {units.energy(float(r.energy))} at PUE {o.pue:g} ({watts:g} W a chip)"
    if r.cost is not None:
        said += f", {units.count(float(r.cost))} at {o.price_per_chip_hour:g} a chip-hour"
    return said


def binds(e: Estimate) -> str:
    """What limits a layout (an estimate of one), and by what margin, in a few words.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    text : str
        Predicted: the largest term beside the matmuls and its share of the step, or compute
        when none is above 2 %. At an MFU given: the collective when its exposed time sets the
        step or the layer is communication-bound, else the bubble (from 5 %), memory (from 90 %
        of HBM) or compute.
    """
    if e.step_breakdown is not None:  # predicted: the largest term beside the matmuls
        t = float(e.step_time)
        name, worst = max(
            ((k, float(v)) for k, v in e.step_breakdown.items() if k != "matmul"),
            key=lambda kv: kv[1],
        )
        if worst < 0.02 * t:
            return "compute (nothing else above 2% of the step)"
        term = TERM_NAMES[name]
        return f"{term if term.startswith('the ') else 'the ' + term}, {worst / t:.0%} of the step"
    compute, exposed = float(e.compute_time), float(e.comm_time)
    ratio, collective = float(e.layer.worst_ratio), COLLECTIVES[str(e.layer.worst_axis)]
    if exposed >= compute:
        return f"the {collective} sets the step ({exposed / compute:.2f}x the compute)"
    if not e.compute_bound:
        return f"the {collective}, {ratio:.2f}x the ideal compute, hidden under the utilisation"
    if float(e.bubble) >= 0.05:
        return f"the pipeline bubble, +{float(e.bubble):.0%}"
    used = float(e.peak.reserved) / e.chip.usable_hbm
    if used >= 0.9:
        return f"memory, {used:.0%} of HBM"
    return f"compute (slowest: the {collective}, {ratio:.2f}x)"
