"""What an estimate means, in sentences written once: the layout's name, the verdict, each
threshold with its numbers substituted, the memory, the step, and what binds.

Each sentence is a ``Line`` (``lines.py``); the CLI prints it as text, the panel as HTML/LaTeX.
"""

from __future__ import annotations

import math

import numpy as np

from ..cost import Estimate
from ..cost.schedules import SCHEDULES
from ..cost.strategies import BEST, STRATEGIES
from . import memory, units
from . import moe_and_context as experts
from .lines import Line, Math, plain, tex_sci, tex_text

AXIS_NAMES = {
    "dp": "data-parallel (X)",
    "fsdp": "FSDP (X)",
    "tp": "tensor-parallel (Y)",
    "dcn": "DCN",
    "ep": "expert-parallel (EP)",
    "cp": "context-parallel (CP)",
}
# What moves on the axis that binds (MODEL.md §A.3, §B.3), by LayerTimes.worst_axis.
COLLECTIVES = {
    "dp": "DP AllReduce of the gradients (X)",
    "fsdp": "FSDP AllGather and ReduceScatter (X)",
    "tp": "TP AllGather and ReduceScatter (Y)",
    "dcn": "AllReduce across pods (DCN)",
    "ep": "expert all-to-all (EP)",
    "cp": "context-parallel keys and values (CP)",
}


def explain(e: Estimate, best: Estimate | None = None) -> list[Line]:
    """The whole explanation of one layout; ``best`` is FSDP + TP at its best split, if known."""
    out = [verdict(e), *thresholds(e, best), memory.chapter_count(e), memory.peak(e), step(e)]
    if e.training_time is not None:
        out.append(time_to_train(e))
    return out


def layout_name(e: Estimate) -> str:
    """The layout as it is: "FSDP X=1024 x TP Y=4, ZeRO-3"; ZeRO 0-2 over X is "DP", not FSDP."""
    x, y, z = int(e.x), int(e.y), int(e.z)
    data = "FSDP" if e.zero == 3 else "DP"  # below ZeRO-3 the weights are whole on X
    ep = int(e.layout.ep)
    cp = int(e.layout.cp)
    experts = f" with EP {ep}" if ep > 1 else ""  # the experts split over EP of the X chips
    # the sequences split over CP of them
    experts += f" with CP {cp} ({e.layout.cp_kind})" if cp > 1 else ""
    groups = (
        [f"{data} X={x}{experts}"] * (x > 1) + [f"TP Y={y}"] * (y > 1) + [f"PP Z={z}"] * (z > 1)
    )
    extra = [f"ZeRO-{e.zero}"] if x > 1 else []
    if z > 1:
        virtual = (
            f" x {e.virtual_stages} virtual" if SCHEDULES[e.schedule].takes_virtual_stages else ""
        )
        extra.append(f"{e.schedule}{virtual}, {int(e.microbatches)} microbatches")
    elif int(e.microbatches) > 1:
        extra.append(f"{int(e.microbatches)} microbatches accumulated")
    if e.remat != "checkpoints":
        extra.append(f"{e.remat} recompute")
    if e.sequence_parallel and y > 1:
        extra.append("sequence parallel")
    return ", ".join([" x ".join(groups) or "one chip", *extra])


def group_places(e: Estimate) -> list[str]:
    """Where X and Y sit: axes spanned and rings on a TPU; inside or across nodes on GPUs."""
    out = []
    for name, size, m, wraps in (
        ("X", int(e.x), float(e.mx), e.wrap_x),
        ("Y", int(e.y), float(e.my), e.wrap_y),
    ):
        if size == 1:
            continue
        if not e.chip.is_gpu:
            out.append(f"{name} spans {m:g} axes ({'ring' if wraps else 'no wraparound'})")
        elif m == 1:
            out.append(f"{name} inside a node (NVLink)")
        else:
            out.append(f"{name} across nodes at {m:.2f}x NVLink")
    return out


def verdict(e: Estimate) -> Line:
    """What binds and by how much, in one sentence; first of all whether it fits at all."""
    if not e.fits:
        total, limit = float(e.peak.reserved), e.fits_below * e.chip.hbm_bytes
        return Line.of(
            "verdict",
            f"Does not fit: a peak of {units.nbytes(total)} per chip, over the"
            f" {units.nbytes(limit)} it may use. " + plain(_bound(e)),
            strong=True,
        )
    return _bound(e)


def _bound(e: Estimate) -> Line:
    ratio = float(e.layer.worst_ratio)
    axis = AXIS_NAMES[str(e.layer.worst_axis)]
    if ratio == 0:
        return Line.of(
            "verdict", "Compute-bound: nothing is communicated (one chip per layer).", strong=True
        )
    if e.compute_bound:
        return Line.of(
            "verdict",
            f"Compute-bound: the slowest communication, {axis}, takes {ratio:.2f}x the compute"
            " time.",
            strong=True,
        )
    return Line.of(
        "verdict",
        f"Communication-bound on {axis}: it takes {ratio:.2f}x the compute time.",
        strong=True,
    )


def thresholds(e: Estimate, best: Estimate | None = None) -> list[Line]:
    """Each threshold of the chapter that applies, with the numbers substituted (MODEL.md §A.3,
    §A.10)."""
    chip = e.chip
    alpha = chip.flops / chip.ici_bw
    mx, my = (float(m) or 1.0 for m in (e.mx, e.my))  # a group of one spans no axis
    B, N, z = float(e.batch), int(e.chips), int(e.z)
    B_text = units.tokens(B)
    per_chip = Math(
        f"B/N = {B_text}/{N:,} = {B / N:,.0f}", rf"B/N = {tex_text(B_text)}/{N:,} = {B / N:,.0f}"
    )
    zs, zt = (f"/{z}", f"/{z}") if z > 1 else ("", "")
    ratio = f"{units.sci(chip.flops)}/{units.sci(chip.ici_bw)} = {alpha:,.0f}"
    tex_ratio = rf"{tex_sci(chip.flops)}/{tex_sci(chip.ici_bw)} = {alpha:,.0f}"
    out = [
        Line.of("threshold", Math(f"α = C/W_ici = {ratio}", rf"\alpha = C/W_{{ici}} = {tex_ratio}"))
    ]
    if e.model.moe is not None:
        out += experts.thresholds(e)
    if int(e.layout.cp) > 1:
        out.append(experts.context(e))
    r, rs = experts.weights_per_compute(e)
    need = float(e.critical_tokens_per_chip)
    if STRATEGIES[e.strategy].on == "x":  # a stage's chips all on the data axis: DP, FSDP
        out.append(
            Line.of(
                "threshold",
                f"{STRATEGIES[e.strategy].label} needs tokens per chip above ",
                Math(
                    f"α{rs[0]}/M_X{zs} = {alpha:,.0f}{rs[1]}/{mx:g}{zs} = {need:,.0f}",
                    rf"\alpha{_cdot(rs[0])}/M_X{zt} = {alpha:,.0f}{_cdot(rs[1])}/{mx:g}{zt} = "
                    rf"{need:,.0f}",
                ),
                "; it has ",
                per_chip,
            )
        )
    if e.strategy == BEST:
        out += _fsdp_tp(e, alpha, (mx, my), per_chip, (zs, zt), best)
    if e.strategy != "dp" or e.y > 1:
        crossing = float(e.crossover_batch)
        words = (
            f"This layout is compute-bound from a global batch of {units.tokens(crossing)} tokens."
            if math.isfinite(crossing)
            else "This layout is never compute-bound, at any batch."
        )
        out.append(Line.of("threshold", words))
    if e.chip.is_gpu and (mx != 1 or my != 1):  # a fraction that means something
        out.append(
            Line.of(
                "note",
                f"(on a GPU cluster M_X and M_Y are a group's bandwidth in units of NVLink's"
                f" {units.nbytes(e.chip.ici_bw)}/s: {mx:.3g} and {my:.3g}; across nodes each GPU "
                "has"
                f" its NIC, {units.nbytes(e.chip.scaleout_bw)}/s)",
            )
        )
    if e.y > 1:
        out.append(_tp_limit(e, alpha, my))
    if z > 1 and e.zero == 3:
        out.append(
            Line.of(
                "note",
                "Under pipelining FSDP re-gathers the weights for every microbatch, which is not"
                " charged here; the chapter pairs PP with ZeRO-1 (docs/MODEL.md §A.6).",
            )
        )
    out.append(_dcn(e))
    return out


def _fsdp_tp(
    e: Estimate, alpha: float, spans, per_chip: Math, per_stage, best: Estimate | None
) -> list[Line]:
    """FSDP + TP: its threshold at the best split, the chapter's M_X·M_Y = 2 where it differs,
    X_opt."""
    (mx, my), (zs, zt) = spans, per_stage
    F, B, z, need = (
        experts.width(e.model.active_width),
        float(e.batch),
        int(e.z),
        float(e.critical_tokens_per_chip),
    )
    r, (r_sym, r_num) = experts.weights_per_compute(e)
    out = [
        Line.of(
            "threshold",
            "FSDP + TP at its best split needs tokens per chip above ",
            Math(
                f"α²{r_sym}/(M_X·M_Y·F){zs} = {alpha:,.0f}²{r_num}/({mx:.3g}·{my:.3g}·{F}){zs} = "
                f"{need:,.0f}",
                rf"\alpha^2{_cdot(r_sym)}/(M_X M_Y F){zt} = {alpha:,.0f}^2{_cdot(r_num)}/"
                rf"({mx:.3g}\cdot {my:.3g}\cdot {F}){zt} = {need:,.0f}",
            ),
            "; it has ",
            per_chip,
        )
    ]
    if (
        len(e.slice_shape) == 3 and mx * my != 2 and not e.chip.is_gpu
    ):  # the chapter's "typical 3D" M_X·M_Y = 2
        chapter = alpha**2 * r / (2 * e.model.active_width) / z
        out.append(
            Line.of(
                "note",
                f"(the chapter assumes M_X·M_Y = 2 on a 3D mesh, which gives {chapter:,.0f};"
                f" this slice's split spans {mx:g} and {my:g} axes)",
            )
        )
    pod = units.tokens(B / float(e.pods))
    stage = int(e.x * e.y)
    split = "" if best is None else f"; best legal split here: X={int(best.x)}, Y={int(best.y)}"
    if e.chip.is_gpu:
        split += f" (the best split keeps TP inside a node of {e.chip.node_size})"
    # FSDP moves the weights a chip holds: a MoE layer's experts
    held = "F" if e.model.moe is None else "F_w"
    F_w = experts.width(experts.held(e))
    out.append(
        Line.of(
            "threshold",
            "X_opt = ",
            Math(
                f"sqrt((B/{held})·(M_X/M_Y)·N) = sqrt(({pod}/{F_w})·({mx:.3g}/{my:.3g})·{stage:,})"
                f" = {float(e.x_opt):,.0f}",
                rf"\sqrt{{(B/{held})(M_X/M_Y)N}} = "
                rf"\sqrt{{({tex_text(pod)}/{F_w})({mx:.3g}/{my:.3g})\cdot {stage:,}}}"
                rf" \approx {float(e.x_opt):,.0f}",
            ),
            f"{split}; in use: X={int(e.x)}, Y={int(e.y)}",
        )
    )
    return out


def _tp_limit(e: Estimate, alpha: float, my: float) -> Line:
    """TP's limit on Y, independent of the batch (MODEL.md §A.3); F the width a token goes
    through."""
    F = experts.width(e.model.active_width)
    limit = float(e.tp_limit)
    ok = (
        "ok"
        if e.y < limit
        else "exceeds it: never compute-bound at any batch (as the chapter's FSDP 256 x TP 16)"
    )
    return Line.of(
        "threshold",
        "TP limit ",
        Math(
            f"Y < M_Y·F/α = {my:g}·{F}/{alpha:,.0f} = {limit:.1f}",
            rf"Y < M_Y F/\alpha = {my:g}\cdot {F}/{alpha:,.0f} = {limit:.1f}",
        ),
        f"; Y = {int(e.y)}: {ok}",
    )


def _cdot(text: str) -> str:
    """A plain formula's "·" as TeX writes it."""
    return text.replace("·", r"\cdot ")


def _dcn(e: Estimate) -> Line:
    pod, need = units.tokens(float(e.batch) / float(e.pods)), float(e.critical_tokens_per_pod)
    chip = e.chip
    r_sym, r_num = experts.weights_per_compute(e)[1]
    formula = Math(
        f"B/P = {pod} vs C{r_sym}/W_dcn = {units.sci(chip.flops)}{r_num}/{units.sci(chip.dcn_bw)}"
        f" = {need:,.0f}",
        rf"B/P = {tex_text(pod)}\ \text{{vs}}\ C{_cdot(r_sym)}/W_{{dcn}} ="
        rf" {tex_sci(chip.flops)}{_cdot(r_num)}/{tex_sci(chip.dcn_bw)} = {need:,.0f}",
    )
    if e.pods == 1:
        return Line.of("threshold", "DCN: per-pod batch ", formula, " (one pod: no DCN traffic)")
    bound = "enough" if float(e.batch) / float(e.pods) > need else "too small: DCN-bound"
    return Line.of("threshold", "DCN: per-pod batch ", formula, f": {bound}")


# The MFU convention beside every MFU (MODEL.md §C.4): sources count differently.
MFU_CONVENTION = (
    "model FLOPs 6Ψ per token (+ 12·L·T·N_h·H with attention FLOPs on); recompute is counted in the"
    " HFU only"
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
    "stragglers": "stragglers",
}


def predicted_step(e: Estimate) -> Line:
    """The predicted step (MODEL.md §C.5), term by term, and the MFU and HFU it achieves."""
    t, mfu, hfu = float(e.step_time), float(e.mfu), float(e.hfu)
    terms = [
        (TERM_NAMES[k], float(v)) for k, v in e.step_breakdown.items() if float(v) >= 0.0005 * t
    ]
    parts = " + ".join(f"{name} {units.seconds(v)}" for name, v in terms)
    return Line.of(
        "step",
        f"Predicted step ({memory.stack_name(e)} profile): {parts} = {units.seconds(t)};"
        f" MFU {mfu:.1%}, HFU {hfu:.1%} ({MFU_CONVENTION})",
    )


def step(e: Estimate) -> Line:
    """The step time: compute at the utilisation, or the exposed communication, and the bubble."""
    if e.step_breakdown is not None:
        return predicted_step(e)
    n, C = int(e.chips), e.chip.flops
    B = units.tokens(float(e.batch))
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
    days = units.seconds(float(e.training_time))
    if not e.fits:
        return Line.of(
            "time", f"Time to train on {units.count(float(e.tokens))} tokens: {days}, if it fit."
        )
    return Line.of("time", f"Time to train on {units.count(float(e.tokens))} tokens: {days}.")


def binds(e: Estimate) -> str:
    """What limits a layout (an estimate of one), and by what margin, in a few words."""
    if e.step_breakdown is not None:  # predicted: the largest term beside the matmuls
        t = float(e.step_time)
        name, worst = max(
            ((k, float(v)) for k, v in e.step_breakdown.items() if k != "matmul"),
            key=lambda kv: kv[1],
        )
        if worst < 0.02 * t:
            return "compute (nothing else above 2% of the step)"
        return f"the {TERM_NAMES[name]}, {worst / t:.0%} of the step"
    compute, exposed = float(e.compute_time), float(e.comm_time)
    ratio, collective = float(e.layer.worst_ratio), COLLECTIVES[str(e.layer.worst_axis)]
    if exposed >= compute:
        return f"the {collective} sets the step ({exposed / compute:.2f}x the compute)"
    if not e.compute_bound:
        return f"the {collective}, {ratio:.2f}x the ideal compute, hidden under the utilisation"
    if float(e.bubble) >= 0.05:
        return f"the pipeline bubble, +{float(e.bubble):.0%}"
    used = float(e.peak.reserved) / e.chip.hbm_bytes
    if used >= 0.9:
        return f"memory, {used:.0%} of HBM"
    return f"compute (slowest: the {collective}, {ratio:.2f}x)"
