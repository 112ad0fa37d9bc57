"""Summary: what binds and by how much, each threshold with its numbers, memory, step and days."""

from __future__ import annotations

import math
import re

import ipywidgets as w
from traitlets import Instance, dlink, observe

from ..analysis import Analysis
from ..cost import Estimate
from ..report import verdict
from ..scenario import Scenario
from ..units import nbytes, seconds, tokens
from ._base import check_kwargs


class Summary(w.HTMLMath):
    """The current estimate in words and formulas, the numbers substituted."""

    data = Instance(Estimate, allow_none=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("Summary", kwargs)
        super().__init__(**kwargs)
        self.add_class("sw-summary")
        if scenario is not None:
            dlink((Analysis.of(scenario), "estimate"), (self, "data"))

    @observe("data")
    def _redraw(self, change=None) -> None:
        if self.data is not None:
            self.value = "<br>".join(_thousands_in_math(line) for line in lines(self.data))


def lines(e: Estimate) -> list[str]:
    """The summary as HTML lines with LaTeX formulas."""
    chip, F = e.chip, e.model.d_ff
    alpha = chip.flops / chip.ici_bw
    mx, my = (float(m) or 1.0 for m in (e.mx, e.my))  # a group of one spans no axis
    B, N = float(e.batch), int(e.chips)
    head, _, rest = verdict(e).partition(":")  # "COMMUNICATION-BOUND on FSDP (X)", "it takes..."
    first, _, tail = head.partition(" ")
    out = [f"<b>{' '.join(filter(None, [first.capitalize(), tail]))}</b>:{rest}"]
    per_chip = rf"$B/N = {_tex(tokens(B))}/{N:,} = {B / N:,.0f}$"
    if e.strategy in ("dp", "fsdp"):
        need = float(e.critical_tokens_per_chip)
        out.append(rf"Critical batch: $\alpha/M_X = {alpha:,.0f}/{mx:g} = {need:,.0f}$ tokens per chip; " + per_chip)
    elif e.strategy == "fsdp+tp":
        need = float(e.critical_tokens_per_chip)
        out.append(
            rf"Critical batch at the best split: $\alpha^2/(M_X M_Y F) = {alpha:,.0f}^2/({mx:g}\cdot{my:g}\cdot{F}) = "
            rf"{need:,.0f}$ tokens per chip; " + per_chip
        )
        out.append(
            rf"$X_{{opt}} = \sqrt{{(B/F)(M_X/M_Y)N}} = \sqrt{{({_tex(tokens(B / float(e.pods)))}/{F})({mx:g}/{my:g})"
            rf"\cdot {int(e.x * e.y)}}} \approx {float(e.x_opt):,.0f}$; split in use: FSDP {int(e.x)} x TP {int(e.y)}"
        )
    else:
        out.append(
            rf"TP limit: $Y < M_Y F/\alpha = {my:g}\cdot{F}/{alpha:,.0f} = {float(e.tp_limit):.1f}$; Y = {int(e.y)}"
        )
    crossing = float(e.crossover_batch)
    out.append(
        f"This layout is compute-bound from a global batch of {tokens(crossing)} tokens."
        if math.isfinite(crossing) else "This layout is never compute-bound, at any batch."
    )  # fmt: skip
    if e.pods > 1:
        out.append(
            rf"DCN: per-pod batch $B/P = {_tex(tokens(B / float(e.pods)))}$ against $C/W_{{dcn}} = "
            rf"{float(e.critical_tokens_per_pod):,.0f}$"
        )
    mem, hbm = float(e.memory.total), chip.hbm_bytes
    fits = "fits" if e.fits else "<b>does not fit</b>"
    out.append(f"Memory per chip: {nbytes(mem)} of {nbytes(hbm)} HBM ({mem / hbm:.0%}): {fits}.")
    step, f, mfu, hfu = float(e.step_time), float(e.flops_per_token), float(e.mfu), float(e.hfu)
    hardware = f", HFU {hfu:.1%} with {e.remat} recompute" if hfu != mfu else ""
    if e.calibrated:
        out.append(
            rf"A measured step of <b>{seconds(step)}</b> implies $\eta = \frac{{B f}}{{N C t}} = "
            rf"\frac{{{_tex(tokens(B))}\cdot {_sci(f)}}}{{{N:,}\cdot {_sci(chip.flops)}\cdot {step:g}}}$"
            f" = <b>MFU {mfu:.1%}</b>{hardware}."
        )
    else:
        compute, comm = float(e.compute_time), float(e.comm_time)
        exposed = f", but the exposed communication takes longer, {seconds(comm)}," if comm > compute else ""
        out.append(
            rf"Step time: $\frac{{B f}}{{N C \eta}} = \frac{{{_tex(tokens(B))}\cdot {_sci(f)}}}"
            rf"{{{N:,}\cdot {_sci(chip.flops)}\cdot {mfu:g}}}$ with $f = {_sci(f)}$ FLOPs a token"
            + f" = {seconds(compute)}{exposed} &rarr; <b>{seconds(step)}</b> (MFU {mfu:.0%}{hardware})"
            + (f", with a pipeline bubble of {float(e.bubble):.0%}" if e.bubble > 0 else "")
        )
    if e.training_time is not None:
        out.append(f"Time to train: <b>{seconds(float(e.training_time))}</b>.")
    return out


def _tex(text: str) -> str:
    """A human number such as 3M inside LaTeX."""
    return text.replace("M", r"\text{M}").replace("K", r"\text{K}").replace("B", r"\text{B}").replace("T", r"\text{T}")


def _sci(x: float) -> str:
    """4.59e14 as LaTeX: 4.59\\times 10^{14}."""
    mantissa, exponent = f"{x:.3g}".split("e") if "e" in f"{x:.3g}" else (f"{x:.3g}", "0")
    return rf"{mantissa}\times 10^{{{int(exponent)}}}"


def _thousands_in_math(line: str) -> str:
    """Inside $...$ a comma is punctuation to LaTeX: write 2,550 as 2{,}550 there."""
    parts = line.split("$")
    parts[1::2] = [re.sub(r"(\d),(\d{3})", r"\1{,}\2", p) for p in parts[1::2]]
    return "$".join(parts)
