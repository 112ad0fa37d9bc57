"""One estimate as a JSON record or as a short report with each formula's numbers substituted."""

from __future__ import annotations

import math

import numpy as np

from . import units
from .cost import Estimate

AXIS_NAMES = {"dp": "data-parallel (X)", "fsdp": "FSDP (X)", "tp": "tensor-parallel (Y)", "dcn": "DCN"}


def _num(value):
    """A JSON-safe Python scalar (a number, a bool or a name): inf and NaN become None."""
    v = np.asarray(value).item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def record(e: Estimate, *, seq_len: int | None = None, tokens: float | None = None, others=None) -> dict:
    """The estimate as plain JSON types (SPEC A.10). ``others`` maps strategy -> Estimate."""
    layer, mem = e.layer, e.memory
    out = {
        "model": e.model.name,
        "hardware": e.chip.name,
        "strategy": e.strategy,
        "zero_stage": _num(e.zero),
        "precision": e.precision.name,
        "params": _num(e.params.total),
        "params_by_part": {k: _num(getattr(e.params, k)) for k in ("mlp", "attention", "embeddings")},
        "chips": _num(e.chips),
        "batch_tokens": _num(e.batch),
        "seq_len": seq_len,
        "sequences": None if seq_len is None else _num(e.batch / seq_len),
        "layout": {
            "slice_shape": list(e.slice_shape),
            "X": _num(e.x),
            "Y": _num(e.y),
            "Z": _num(e.z),
            "P": _num(e.pods),
            "M_X": _num(e.mx),
            "M_Y": _num(e.my),
            "wrap_x": _num(e.wrap_x),
            "wrap_y": _num(e.wrap_y),
            "microbatches": _num(e.microbatches),
        },
        "per_layer": {
            "t_math_s": _num(layer.t_math),
            "t_comms_s": _num(layer.t_comms),
            "t_comms_x_s": _num(layer.t_comms_x),
            "t_comms_y_s": _num(layer.t_comms_y),
            "t_comms_dcn_s": _num(layer.t_comms_dcn),
            "lower_bound_s": _num(layer.lower_bound),
            "upper_bound_s": _num(layer.upper_bound),
        },
        "tokens_per_chip": _num(e.tokens_per_chip),
        "critical_tokens_per_chip": _num(e.critical_tokens_per_chip),
        "crossover_batch_tokens": _num(e.crossover_batch),
        "tp_limit": _num(e.tp_limit),
        "tokens_per_pod": _num(e.batch / e.pods),
        "critical_tokens_per_pod": _num(e.critical_tokens_per_pod),
        "compute_bound": _num(e.compute_bound),
        "bottleneck": str(e.bottleneck),
        "comm_to_compute": _num(layer.worst_ratio),
        "x_opt": _num(e.x_opt),
        "memory_per_chip_bytes": {
            **{k: _num(getattr(mem, k)) for k in ("params", "grads", "optimizer", "activations", "overhead")},
            "total": _num(mem.total),
        },
        "hbm_bytes": e.chip.hbm_bytes,
        "mfu": _num(e.mfu),
        "hfu": _num(e.hfu),
        "remat": _num(e.remat),
        "flops_per_token": _num(e.flops_per_token),
        "fits": _num(e.fits),
        "bubble": _num(e.bubble),
        "schedule": _num(e.schedule),
        "stage_traffic_s": _num(e.stage_traffic),
        "virtual_stages": _num(e.virtual_stages),
        "exposed_comm_s": _num(e.comm_time),
        "step_time_s": _num(e.step_time),
        "training_tokens": tokens,
        "training_time_s": None if e.training_time is None else _num(e.training_time),
    }
    if others:
        out["strategies"] = {name: _summary(o) for name, o in others.items()}
    return out


def _summary(e: Estimate) -> dict:
    return {
        "X": _num(e.x),
        "Y": _num(e.y),
        "fits": _num(e.fits),
        "compute_bound": _num(e.compute_bound),
        "bottleneck": str(e.bottleneck),
        "comm_to_compute": _num(e.layer.worst_ratio),
        "memory_per_chip_bytes": _num(e.memory.total),
        "step_time_s": _num(e.step_time),
    }


def text(e: Estimate, *, seq_len: int | None = None, tokens: float | None = None, others=None) -> str:
    """A short report: what binds and by how much, each threshold with its numbers, memory, time."""
    chip, m = e.chip, e.model
    alpha = chip.flops / chip.ici_bw
    mesh = units.mesh(e.slice_shape)
    pods = int(e.pods)
    seqs = "" if seq_len is None else f" ({e.batch.item() / seq_len:.1f} sequences of {seq_len})"
    lines = [
        f"{m.name} ({units.count(float(e.params.total))} params) on {chip.name} {mesh}"
        f" x {pods} pod{'s' * (pods > 1)} = {int(e.chips):,} chips; batch {units.tokens(float(e.batch))} tokens{seqs}",
        "",
        f"Strategy {e.strategy}: {_layout(e)}",
        f"  {verdict(e)}",
        "",
        f"Thresholds (α = C/W_ici = {units.sci(chip.flops)}/{units.sci(chip.ici_bw)} = {alpha:,.0f}):",
        *("  " + line for line in _thresholds(e, alpha, (others or {}).get("fsdp+tp"))),
        "",
        _memory(e),
        _step(e, tokens),
    ]
    if others:
        lines += ["", "Every strategy on this slice:", *("  " + row for row in _table(others))]
    return "\n".join(lines)


def _layout(e: Estimate) -> str:
    x, y = int(e.x), int(e.y)
    data = "FSDP" if e.zero == 3 else "DP"  # below ZeRO-3 the weights are whole on X
    parts = {"dp": f"{data} X={x}", "fsdp": f"{data} X={x}", "tp": f"TP Y={y}", "fsdp+tp": f"{data} X={x} x TP Y={y}"}
    spans = group_places(e)
    extra = [f"ZeRO-{e.zero}"] if e.strategy != "tp" and x > 1 else []
    interleaved = f" x {e.virtual_stages} virtual" if e.schedule == "interleaved" else ""
    extra += [f"PP Z={e.z}{interleaved}, {e.schedule}, {int(e.microbatches)} microbatches"] if e.z > 1 else []
    return ", ".join([parts[e.strategy], *extra, *spans])


def group_places(e: Estimate) -> list[str]:
    """Where X and Y sit: axes spanned and rings on a TPU; inside or across nodes on GPUs."""
    out = []
    for name, size, m, wraps in (("X", int(e.x), float(e.mx), e.wrap_x), ("Y", int(e.y), float(e.my), e.wrap_y)):
        if size == 1:
            continue
        if not e.chip.is_gpu:
            out.append(f"{name} spans {m:g} axes ({'ring' if wraps else 'no wraparound'})")
        elif m == 1:
            out.append(f"{name} inside a node (NVLink)")
        else:
            out.append(f"{name} across nodes at {m:.2f}x NVLink{' (penalised)' if name == 'Y' else ''}")
    return out


def verdict(e: Estimate) -> str:
    """What binds and by how much, in one sentence."""
    ratio = float(e.layer.worst_ratio)
    axis = AXIS_NAMES[str(e.layer.worst_axis)]
    if ratio == 0:
        return "COMPUTE-BOUND: nothing is communicated (one chip per layer)."
    if e.compute_bound:
        return f"COMPUTE-BOUND: the slowest communication, {axis}, takes {ratio:.2f}x the compute time."
    return f"COMMUNICATION-BOUND on {axis}: it takes {ratio:.2f}x the compute time."


def _thresholds(e: Estimate, alpha: float, best: Estimate | None):
    F, B, N = e.model.d_ff, float(e.batch), float(e.chips)
    mx, my = (float(m) or 1.0 for m in (e.mx, e.my))  # a group of one spans no axis
    per_chip = f"has B/N = {units.tokens(B)}/{N:,.0f} = {float(e.tokens_per_chip):,.0f}"
    z = f"/{e.z}" if e.z > 1 else ""
    if e.strategy in ("dp", "fsdp"):
        need = float(e.critical_tokens_per_chip)
        yield f"{e.strategy.upper()} needs tokens/chip > α/M_X{z} = {alpha:,.0f}/{mx:g}{z} = {need:,.0f}; {per_chip}"
    if e.strategy == "fsdp+tp":
        yield (
            f"FSDP+TP at X_opt needs tokens/chip > α²/(M_X·M_Y·F){z} = {alpha:,.0f}²/({mx:.3g}·{my:.3g}·{F}){z}"
            f" = {float(e.critical_tokens_per_chip):,.0f}; {per_chip}"
        )
        if len(e.slice_shape) == 3 and mx * my != 2:  # the chapter's "typical 3D" M_X·M_Y = 2
            chapter = alpha**2 / (2 * F) / e.z
            yield f"(the chapter assumes M_X·M_Y = 2 on a 3D mesh, which gives {chapter:,.0f})"
        yield (
            f"X_opt = sqrt((B/F)·(M_X/M_Y)·N) = sqrt(({units.tokens(B / float(e.pods))}/{F})·({mx:.3g}/{my:.3g})"
            f"·{int(e.x * e.y):,}) = {float(e.x_opt):,.0f}"
            + ("" if best is None else f"; best legal split on this slice: X={int(best.x)}, Y={int(best.y)}")
        )
    if e.strategy != "dp" or e.y > 1:
        crossing = float(e.crossover_batch)
        if math.isfinite(crossing):
            yield f"this layout is compute-bound from a batch of {units.tokens(crossing)} tokens"
        else:
            yield "this layout is never compute-bound, at any batch"
    if e.y > 1:
        limit = float(e.tp_limit)
        verdict = "ok" if e.y < limit else "exceeds it: never compute-bound at any batch (cf. SPEC A.9)"
        yield f"TP limit Y < M_Y·F/α = {my:g}·{F}/{alpha:,.0f} = {limit:.1f}; Y = {int(e.y)}: {verdict}"
    if e.z > 1 and e.zero == 3 and e.strategy in ("fsdp", "fsdp+tp"):
        yield "note: under pipelining FSDP re-gathers weights per microbatch; the chapter pairs PP with ZeRO-1 (A.6)"
    pod_line = (
        f"DCN: per-pod batch B/P = {units.tokens(B / float(e.pods))} vs C/W_dcn ="
        f" {units.sci(e.chip.flops)}/{units.sci(e.chip.dcn_bw)} = {float(e.critical_tokens_per_pod):,.0f}"
    )
    yield pod_line + ("" if e.pods > 1 else " (one pod: no DCN traffic)")


def _memory(e: Estimate) -> str:
    mem, hbm = e.memory, e.chip.hbm_bytes
    kinds = {"weights": mem.params, "grads": mem.grads, "optimizer": mem.optimizer, "activations": mem.activations}
    if np.any(mem.overhead):
        kinds["runtime overhead"] = mem.overhead
    parts = " + ".join(f"{k} {units.nbytes(float(v))}" for k, v in kinds.items())
    verdict = "fits" if e.fits else "DOES NOT FIT"
    below = f" (below {e.fits_below:.0%} of it)" if e.fits_below < 1 else ""
    return f"Memory per chip: {parts} = {units.nbytes(float(mem.total))} of {units.nbytes(hbm)} HBM{below}: {verdict}"


def _step(e: Estimate, tokens: float | None) -> str:
    n, mfu, hfu = int(e.chips), float(e.mfu), float(e.hfu)
    B, f = units.tokens(float(e.batch)), float(e.flops_per_token)
    utilisation = f"MFU {mfu:.1%}" + (f", HFU {hfu:.1%} ({e.remat} recompute)" if hfu != mfu else "")
    if e.calibrated:
        return (
            f"Measured step {units.seconds(float(e.step_time))} implies {utilisation}: MFU = B·f/(N·C·t)"
            f" = {B}·{units.sci(f)}/({n:,}·{units.sci(e.chip.flops)}·{float(e.step_time):g})"
        )
    attention = not np.isclose(f, 6 * float(e.params.total))
    per_token = "6Ψ + 12·L·T·N_h·H" if attention else "6Ψ"
    compute, step = float(e.compute_time), float(e.step_time)
    line = (
        f"Step time at {utilisation}: B·f/(N·C·MFU), f = {per_token} = {units.sci(f)} FLOPs a token:"
        f" {B}·{units.sci(f)}/({n:,}·{units.sci(e.chip.flops)}·{mfu:g}) = {units.seconds(compute)}"
    )
    if float(e.comm_time) > compute:  # SPEC A.10: the exposed communication sets the step
        line += (
            f"; the exposed communication is longer, {units.seconds(float(e.comm_time))}"
            " (the layer's communication per compute, over the whole model)"
        )
    if e.bubble > 0:
        line += f"; a pipeline bubble of {float(e.bubble):.0%} stretches it"
        line += f" (and {units.seconds(float(e.stage_traffic))} of stage-to-stage traffic, overlapped)"
    if not np.isclose(step, compute):
        line += f" -> {units.seconds(step)}"
    if e.training_time is not None:
        line += f"; {units.count(tokens)} tokens take {units.seconds(float(e.training_time))}"
    return line


def _table(others: dict):
    yield f"{'strategy':<9} {'layout':<14} {'memory/chip':>12}  {'fits':<4}  {'bound by':<22} {'step':>9}"
    for name, o in others.items():
        layout = {"dp": f"X={int(o.x)}", "fsdp": f"X={int(o.x)}", "tp": f"Y={int(o.y)}"}.get(
            name, f"{int(o.x)}x{int(o.y)}"
        )
        bound = "compute" if o.compute_bound else f"{o.bottleneck} ({float(o.layer.worst_ratio):.2f}x)"
        fits = "yes" if o.fits else "no"
        yield (
            f"{name:<9} {layout:<14} {units.nbytes(float(o.memory.total)):>12}  {fits:<4}  {bound:<22}"
            f" {units.seconds(float(o.step_time)):>9}"
        )


def plan_table(ranked, ranks) -> str:
    """The best layouts of a plan as a table: layout, axis order, knobs, step, memory, what binds."""
    asked, shape = ranked.inputs, ranked.axis_orders[0]
    head = (
        f"{asked['model'].name} on {asked['chip'].name} {units.mesh(shape)} x {asked['pods']} pod(s),"
        f" batch {units.tokens(asked['batch'])} tokens: {len(ranked.step_time):,} layouts evaluated,"
        f" {len(ranked):,} fit"
    )
    orders = len(ranked.axis_orders) > 1  # then say which order of the axes each layout takes
    note = ["Axes: the slice's axes in the order the groups take them, TP the last axis first.", ""] if orders else []
    rows = [head, "", *note, f"{'#':>3}  {'X x Y x Z':<16} " + (f"{'axes':<10} " if orders else "")
            + f"{'ZeRO':<5} {'recompute':<12} {'schedule':<16} {'m':>4} {'step':>9} {'memory':>9}  binds"]  # fmt: skip
    for r in ranks:
        k, index = ranked.layout(r), ranked.order[r]
        schedule = k["schedule"] + (f" v={k['virtual_stages']}" if k["schedule"] == "interleaved" else "")
        layout, step = f"{k['x']}x{k['y']}x{k['z']}", units.seconds(float(ranked.step_time[index]))
        axes = f"{units.mesh(k['slice_shape']):<10} " if orders else ""
        rows.append(
            f"{r + 1:>3}  {layout:<16} {axes}{k['zero']:<5} {k['remat']:<12} {schedule:<16} {k['microbatches']:>4}"
            f" {step:>9} {units.nbytes(float(ranked.memory[index])):>9}  {ranked.binds(r)}"
        )
    return "\n".join(rows)
