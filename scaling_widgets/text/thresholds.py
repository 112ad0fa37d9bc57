"""Each threshold of the chapter that applies to an estimate, in words, with the numbers
substituted (MODEL.md §A.3, §A.10, §D): what FSDP, FSDP + TP, TP and DCN need, and what a MoE
layer's two widths and context parallelism change."""

from __future__ import annotations

import math

import numpy as np

from ..cost import Estimate
from ..cost.evaluation.layer import tp_span
from ..cost.strategies import BEST, STRATEGIES
from . import moe_and_context as experts
from . import units
from .lines import Line, Math, tex_sci, tex_text


def thresholds(e: Estimate, best: Estimate | None = None) -> list[Line]:
    """Each threshold of the chapter that applies, with the numbers substituted (MODEL.md §A.3,
    §A.10).

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.
    best : Estimate, optional
        FSDP + TP at its best split, whose X and Y the X_opt line names. None: not known, and
        that line gives X_opt and the split in use alone.

    Returns
    -------
    lines : list of Line
        α = C/W_ici; a MoE layer's two widths and EP (``moe_and_context.thresholds``); CP
        (``moe_and_context.context``); DP's or FSDP's tokens per chip, α/M_X; FSDP + TP's,
        α²/(M_X·M_Y·F), and X_opt; the crossover batch [tokens]; what M_X and M_Y mean on
        GPUs; TP's limit on Y, M_Y·F/α; a note on PP with ZeRO-3; and the per-pod batch against
        C/W_dcn. Only the lines that apply; with Z pipeline stages the per-chip thresholds are
        divided by Z.

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer), §A.10 (what is reported) and §D.1
       (a MoE layer's two widths: r = F_w/F).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism; Scaling Between Pods.
    """
    chip = e.chip
    alpha = chip.flops / chip.ici_bw
    mx = float(e.mx) or 1.0  # a group of one spans no axis
    # TP across pods: its bandwidth the slower of its span and its chips' DCN links (§B.11)
    my = float(tp_span(chip, e.layout.tp_pods, e.y, e.my))
    B, N, z = float(e.batch), int(e.chips), int(e.z)
    B_text = units.batch(B)
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
    if STRATEGIES[e.strategy].on == "x":  # a stage's chips all on the data axis: DP, FSDP
        out.append(_data_axis(e, alpha, mx, per_chip, (zs, zt)))
    if e.strategy == BEST:
        out += _fsdp_tp(e, alpha, (mx, my), per_chip, (zs, zt), best)
    if e.strategy != "dp" or e.y > 1:
        out.append(_crossover(e))
    if e.chip.is_gpu and (mx != 1 or my != 1):  # a fraction that means something
        out.append(_gpu_spans(e, mx, my))
    if e.y > 1:
        out.append(_tp_limit(e, alpha, my))
    if int(e.layout.tp_pods) > 1:
        out.append(_tp_across_pods(e, my))
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


def _data_axis(e: Estimate, alpha: float, mx: float, per_chip: Math, per_stage) -> Line:
    """DP or FSDP, a stage's chips all on the data axis: the tokens a chip needs, and has."""
    (zs, zt), rs = per_stage, experts.weights_per_compute(e)[1]
    need = float(e.critical_tokens_per_chip)
    return Line.of(
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


def _crossover(e: Estimate) -> Line:
    """The smallest global batch at which the layout is compute-bound."""
    crossing = float(e.crossover_batch)
    words = (
        f"This layout is compute-bound from a global batch of {units.batch(crossing)} tokens."
        if math.isfinite(crossing)
        else "This layout is never compute-bound, at any batch."
    )
    return Line.of("threshold", words)


def _gpu_spans(e: Estimate, mx: float, my: float) -> Line:
    """What M_X and M_Y mean on a GPU cluster."""
    return Line.of(
        "note",
        f"(on a GPU cluster M_X and M_Y are a group's bandwidth in units of NVLink's"
        f" {units.nbytes(e.chip.ici_bw)}/s: {mx:.3g} and {my:.3g}; across nodes each GPU "
        "has"
        f" its NIC, {units.nbytes(e.chip.scaleout_bw)}/s)",
    )


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
    pod = units.batch(B / float(e.pods))
    stage = int(e.x * e.y)
    split = (
        ""
        if best is None
        else f" (the chapter's estimate); fastest legal split: X={int(best.x)}, Y={int(best.y)}"
    )
    if e.chip.is_gpu:
        split += f" (the split chosen keeps TP inside a node of {e.chip.node_size})"
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


def _tp_across_pods(e: Estimate, my: float) -> Line:
    """What M_Y is for TP across pods: each pod's Y/T chips send on over their own DCN links."""
    T = int(e.layout.tp_pods)
    each = int(e.y) // T
    return Line.of(
        "note",
        f"TP spans {T} pods, {each} chip{'s' * (each > 1)} in each: its traffic crosses the"
        f" data-center network every layer, at {each} x W_dcn = {units.sci(each * e.chip.dcn_bw)}"
        f" B/s a pod, so M_Y = {my:.3g} (docs/MODEL.md §B.11).",
    )


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
    pod, need = units.batch(float(e.batch) / float(e.pods)), float(e.critical_tokens_per_pod)
    chip = e.chip
    r_sym, r_num = experts.weights_per_compute(e)[1]
    # FSDP across F of the pods: the replicas' AllReduce beside its gathers (MODEL.md §B.9)
    F = int(e.layout.fsdp_pods)
    f_sym, f_num = ("(1 + 1/F)·", f"(1 + 1/{F})·") if 1 < F < int(e.pods) else ("", "")
    # a pipeline across S pods or TP across T: the P/S (P/T) groups of them are the replicas
    # (MODEL.md §B.10, §B.11)
    spans, what = int(e.layout.pp_pods), "pipeline"
    if int(e.layout.tp_pods) > 1:
        spans, what = int(e.layout.tp_pods), "TP group"
    b_sym = "B/P" if spans == 1 else f"B/(P/{'S' if what == 'pipeline' else 'T'})"
    formula = Math(
        f"{b_sym} = {pod} vs {f_sym}C{r_sym}/W_dcn = {f_num}{units.sci(chip.flops)}{r_num}/"
        f"{units.sci(chip.dcn_bw)} = {need:,.0f}",
        rf"{b_sym} = {tex_text(pod)}\ \text{{vs}}\ {f_sym}C{_cdot(r_sym)}/W_{{dcn}} ="
        rf" {f_num}{tex_sci(chip.flops)}{_cdot(r_num)}/{tex_sci(chip.dcn_bw)} = {need:,.0f}",
    )
    per = f"batch per {spans} pods one {what} spans " if spans > 1 else "per-pod batch "
    if e.pods == 1:
        moved = "activations" if what == "pipeline" else "TP's gathers and scatters"
        alone = "one pod: no DCN traffic" if spans == 1 else f"no gradients on DCN, only {moved}"
        return Line.of("threshold", f"DCN: {per}", formula, f" ({alone})")
    bound = "enough" if float(e.batch) / float(e.pods) > need else "too small: DCN-bound"
    if what == "TP group" and float(np.max(e.layer.comm_ratio("dcn"))) > 1:
        # TP's bytes across pods grow with the batch as the compute does (MODEL.md §B.11)
        bound = "no batch is enough: TP's traffic across pods grows with the batch"
    return Line.of("threshold", f"DCN: {per}", formula, f": {bound}")
