"""One estimate as a JSON record (``estimate --json``), or as a report for the terminal; a plan as
a table. The sentences come from ``explain``."""

from __future__ import annotations

import math

import numpy as np

from ..cost import Estimate
from ..cost.hardware.slice_names import slice_name
from ..cost.step.interval import LEVEL, pair_spread
from ..cost.transformer.experts import folds_over_tp
from . import explain, memory, moe_and_context, units
from .lines import plain
from .step import MFU_CONVENTION, binds


def _num(value):
    """A JSON-safe Python scalar (a number, a bool or a name): inf and NaN become None."""
    v = np.asarray(value).item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _run(r) -> dict:
    """The whole run (MODEL.md §H): never-finishing times as null."""
    return {
        "goodput": _num(r.goodput),
        "wall_s": _num(r.wall),
        "ideal_s": _num(r.ideal),
        "checkpoint_bytes": _num(r.checkpoint_bytes),
        "checkpoint_write_s": _num(r.checkpoint_write),
        "checkpoint_interval_s": _num(r.interval),
        "between_failures_s": _num(r.between_failures),
        "chip_hours": _num(r.chip_hours),
        "energy_j": None if r.energy is None else _num(r.energy),
        "cost": None if r.cost is None else _num(r.cost),
    }


def record(e: Estimate, others=None) -> dict:
    """The estimate as plain JSON types (MODEL.md §A.10). ``others`` maps strategy -> Estimate, or
    the error that says why that strategy cannot run here.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.
    others : dict of str to Estimate or InputError, optional
        Each strategy's own layout by name (``compare_strategies``), or the error that says why
        it cannot run. None: no strategy beside ``e``.

    Returns
    -------
    record : dict
        The workload, the layer and its thresholds, the memory and the step in SI units ([s],
        [bytes], [tokens]), inf and NaN as None; with ``others``, a summary of each under
        "strategies".
    """
    out = {**_workload(e), **_layer(e), **_memory(e), **_step(e)}
    if others:
        out["strategies"] = {name: _summary(o) for name, o in others.items()}
    return out


def _workload(e: Estimate) -> dict:
    """What is trained on what: the model, the chips, the batch and the layout."""
    return {
        "model": e.model.name,
        "hardware": e.chip.name,
        # a pod's slice as Google names it (v5p-512), or None
        "slice_name": slice_name(e.chip, int(e.chips) // int(e.cluster.pods), e.slice_shape),
        "strategy": e.strategy,
        "layout_name": explain.layout_name(e),
        "zero_stage": _num(e.zero),
        "precision": e.precision.name,
        "params": _num(e.params.total),
        "params_active": _num(e.params.active),  # what a token goes through: all of them unless MoE
        "params_by_part": {
            k: _num(getattr(e.params, k)) for k in ("mlp", "attention", "embeddings")
        },
        "params_mtp": _num(e.params.mtp),  # multi-token prediction's modules, beside params
        "chips": _num(e.chips),
        "batch_tokens": _num(e.batch),
        "seq_len": e.seq_len,
        "sequences": None if e.seq_len is None else _num(e.batch / e.seq_len),
        # the batch asked for, when it was rounded to whole sequences
        "batch_tokens_asked": _num(e.workload.rounded_from),
        "layout": _placement(e),
    }


def _layer(e: Estimate) -> dict:
    """The chapter's layer and its thresholds (MODEL.md §A.3)."""
    return {
        "per_layer": _per_layer(e.layer),
        "tokens_per_chip": _num(e.tokens_per_chip),
        "critical_tokens_per_chip": _num(e.critical_tokens_per_chip),
        "crossover_batch_tokens": _num(e.crossover_batch),
        "tp_limit": _num(e.tp_limit),
        "tokens_per_pod": _num(e.batch / e.pods),
        "critical_tokens_per_pod": _num(e.critical_tokens_per_pod),
        "compute_bound": _num(e.compute_bound),
        "bottleneck": str(e.bottleneck),
        "comm_to_compute": _num(e.layer.worst_ratio),
        "x_opt": _num(e.x_opt),
    }


def _memory(e: Estimate) -> dict:
    """The chapter's count and the busiest chip's peak (MODEL.md §A.4, §E)."""
    mem = e.memory
    kinds = ("params", "grads", "optimizer", "activations", "overhead")
    return {
        "memory_per_chip_bytes": {
            **{k: _num(getattr(mem, k)) for k in kinds},
            "total": _num(mem.total),
        },
        "peak_memory_bytes": memory.peak_record(e),
        "hbm_bytes": e.chip.hbm_bytes,
        "usable_hbm_bytes": e.chip.usable_hbm,
        "runtime_bytes": e.chip.runtime_bytes,  # CUDA's context and NCCL, outside the allocator
    }


def _step(e: Estimate) -> dict:
    """The step, what it is made of, and the whole run (MODEL.md §A.5, §C, §H)."""
    return {
        "mfu": _num(e.mfu),
        "hfu": _num(e.hfu),
        "mfu_given": None if e.calibrated else e.options.mfu,
        "mfu_convention": MFU_CONVENTION,
        "step_breakdown_s": None
        if e.step_breakdown is None
        else {k: _num(v) for k, v in e.step_breakdown.items()},
        "hidden_s": None if e.hidden is None else {k: _num(v) for k, v in e.hidden.items()},
        "profile": None if e.step_breakdown is None else memory.stack_name(e),
        "remat": _num(e.remat),
        "flops_per_token": _num(e.flops_per_token),
        "hardware_flops_per_token": _num(e.hardware_flops_per_token),
        "fits": _num(e.fits),
        "memory_verdict": str(e.verdict),
        "bubble": _num(e.bubble),
        "schedule": _num(e.schedule),
        "stage_traffic_s": _num(e.stage_traffic),
        "virtual_stages": _num(e.virtual_stages),
        "compute_s": _num(e.compute_time),
        "exposed_comm_s": _num(e.comm_time),
        "step_time_s": _num(e.step_time),
        **_interval(e),
        "training_tokens": None if e.tokens is None else _num(e.tokens),
        "training_time_s": None if e.training_time is None else _num(e.training_time),
        "run": None if e.run is None else _run(e.run),
    }


def _interval(e: Estimate) -> dict:
    """The predicted step's interval (MODEL.md §F.3): its ends [s], the share of out-of-sample
    runs it is to hold and the runs it comes from; None with an MFU given."""
    if e.step_interval is None:
        return {"step_interval_s": None, "step_interval": None}
    low, high = e.step_interval
    return {
        "step_interval_s": [_num(low), _num(high)],
        "step_interval": {
            "level": LEVEL,
            "runs": e.spread.runs,
            "sources": e.spread.sources,
            "pool": e.spread.pool,
        },
    }


def _placement(e: Estimate) -> dict:
    """Where the groups sit (MODEL.md §A.1): X, Y, Z, pods, the axes spanned, the rings."""
    return {
        "slice_shape": list(e.slice_shape),
        **{
            k: _num(v)
            for k, v in (
                ("X", e.x),
                ("Y", e.y // e.layout.tp_pods),
                # a pod's groups and every pod, as the flags give them: X·Y·Z·P chips; the
                # pipeline's stages Z·pp_pods, TP's group Y·tp_pods (MODEL.md §B.10, §B.11)
                ("Z", e.z // e.layout.pp_pods),
                ("P", e.cluster.pods),
                ("M_X", e.mx),
                ("M_Y", e.my),
            )
        },
        "wrap_x": _num(e.wrap_x),
        "wrap_y": _num(e.wrap_y),
        "microbatches": _num(e.microbatches),
        "EP": _num(e.layout.ep),
        # the routed experts' TP, as Megatron-Core counts it: 1 where EP folds over TP x X
        "ETP": _num(np.where(folds_over_tp(e.layout.etp, e.y), 1, e.y)),
        "CP": _num(e.layout.cp // e.layout.cp_pods),  # a pod's, as the flags give it (§B.13)
        "cp_kind": e.layout.cp_kind,
        "ends_as_layers": e.layout.ends_as_layers,
        "first_stage_layers": e.layout.first_stage_layers,
        "last_stage_layers": e.layout.last_stage_layers,
        "fsdp_pods": _num(e.layout.fsdp_pods),
        "pp_pods": _num(e.layout.pp_pods),
        "tp_pods": _num(e.layout.tp_pods),
        "ep_pods": _num(e.layout.ep_pods),
        "cp_pods": _num(e.layout.cp_pods),
    }


def _per_layer(layer) -> dict:
    """One layer's times per chip (MODEL.md §A.3, §A.10)."""
    times = (
        "t_math",
        "t_comms",
        "t_comms_x",
        "t_comms_y",
        "t_comms_dcn",
        "t_comms_ep",
        "t_comms_cp",
        "lower_bound",
        "upper_bound",
    )
    return {f"{name}_s": _num(getattr(layer, name)) for name in times}


def _summary(e) -> dict:
    if not isinstance(e, Estimate):
        return {"runs": False, "why": str(e)}
    return {
        "runs": True,
        "X": _num(e.x),
        "Y": _num(e.y // e.layout.tp_pods),  # a pod's, as the layout's (MODEL.md §B.11)
        "fits": _num(e.fits),
        "compute_bound": _num(e.compute_bound),
        "bottleneck": str(e.bottleneck),
        "comm_to_compute": _num(e.layer.worst_ratio),
        "memory_per_chip_bytes": _num(e.memory.total),
        "peak_bytes": _num(e.peak.reserved),
        "step_time_s": _num(e.step_time),
        "step_interval_s": None if e.step_interval is None else [_num(t) for t in e.step_interval],
    }


def _sequences(n: float) -> str:
    """ "1 sequence", "1,024 sequences"."""
    return f"{n:,.0f} sequence{'s' * (round(n) != 1)}"


def _cluster_name(chip, shape, pods: int) -> str:
    """The cluster as its user names it: "TPU v5p-512 (256 chips, 4x8x8)", with the pods beyond
    one; a GPU cluster, or a chip Google does not name slices of, by its shape."""
    per_pod = math.prod(shape)
    named, chips = slice_name(chip, per_pod, shape), per_pod * pods
    pods_said = f" x {pods} pods = {chips:,} chips" if pods > 1 else ""
    if named is not None:
        chips_said = f"{per_pod:,} chip{'s' * (per_pod > 1)}"
        return f"TPU {named} ({chips_said}, {units.mesh(shape)}){pods_said}"
    return f"{chip.name} {units.mesh(shape)} x {pods} pod{'s' * (pods > 1)} = {chips:,} chips"


def text(e: Estimate, others=None, best: Estimate | None = None) -> str:
    """The report: what binds and by how much, each threshold with its numbers, memory, step.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.
    others : dict of str to Estimate or InputError, optional
        Each strategy's own layout by name (``compare_strategies``), or the error that says why
        it cannot run. None: no strategy beside ``e``.
    best : Estimate, optional
        FSDP + TP at its best split, whose X and Y the X_opt line names. None: not known.

    Returns
    -------
    text : str
        The model, the chips and the batch; the layout, where its groups sit and the two
        verdicts; the thresholds; the memory, the step and the time to train; with ``others``,
        a table of every strategy on this slice.
    """
    m = e.model
    seqs = (
        "" if e.seq_len is None else f" ({_sequences(float(e.batch) / e.seq_len)} of {e.seq_len})"
    )
    lines = explain.explain(e, best)
    head = [
        f"{m.name} ({moe_and_context.params(e)}) on"
        f" {_cluster_name(e.chip, e.slice_shape, int(e.cluster.pods))}; batch "
        f"{units.batch_echo(float(e.batch))}{seqs}",
        "",
        f"Layout ({e.strategy}): {', '.join([explain.layout_name(e), *explain.group_places(e)])}",
        "  " + plain(lines[0]),
        "  " + plain(lines[1]),
        "",
        "Thresholds:",
    ]
    body = ["  " + plain(line) for line in lines[2:] if line.kind in ("threshold", "note")]
    rest = [plain(line) for line in lines[2:] if line.kind not in ("threshold", "note", "batch")]
    rounded = [plain(line) for line in lines if line.kind == "batch"]  # beside the batch
    out = [*head[:1], *rounded, *head[1:], *body, "", *rest]
    if others:
        out += ["", "Every strategy on this slice:", *("  " + row for row in _table(others))]
    return "\n".join(out)


def _table(others: dict):
    """Each strategy's own layout in a row: its name with its ZeRO stage, recompute and schedule
    (``layout_name``), its peak, whether it fits, what binds and the step."""
    head = ("strategy", "layout", "peak/chip", "fits", "bound by", "step")
    rows = []
    for name, o in others.items():
        if not isinstance(o, Estimate):
            rows.append((name, f"cannot run: {o}"))
            continue
        ratio = float(o.layer.worst_ratio)
        bound = "compute" if o.compute_bound else f"{o.bottleneck} ({ratio:.2f}x)"
        peak, step = units.nbytes(float(o.peak.reserved)), units.seconds(float(o.step_time))
        fit = {"fits": "yes", "tight": "tight"}.get(str(o.verdict), "no")
        rows.append((name, _named_in_full(o), peak, fit, bound, step))
    width = max([len(head[1])] + [len(r[1]) for r in rows if len(r) > 2])
    line = "{:<9} {:<" + str(width) + "}  {:>9}  {:<4}  {:<18} {:>9}"
    yield line.format(*head)
    for row in rows:
        yield f"{row[0]:<9} {row[1]}" if len(row) == 2 else line.format(*row)


def _named_in_full(e: Estimate) -> str:
    """The layout's name with its recompute and schedule even where they are the defaults: rows
    set side by side say what differs."""
    name = explain.layout_name(e)
    if e.remat == "checkpoints":
        name += ", the chapter's checkpoints"
    if int(e.z) == 1:
        name += ", no pipeline"
    return name


def plan_table(ranked, ranks) -> str:
    """The best layouts of a plan as a table: layout, axis order, knobs, step, peak memory and the
    HBM it leaves, the wall-clock time to train with failures and checkpoints, and its goodput
    (with the tokens given), what binds.

    Parameters
    ----------
    ranked : Plan
        The plan: every layout evaluated, those that fit ranked best first.
    ranks : iterable of int
        The ranks to list, 0 the best.

    Returns
    -------
    text : str
        A head (the model, the slice, the batch, the layouts evaluated and those that fit), then
        a row a rank.
    """
    cluster, workload, shape = ranked.cluster, ranked.workload, ranked.axis_orders[0]
    head = (
        f"{workload.model.name} on {_cluster_name(cluster.chip, shape, cluster.pods)},"
        f" batch {units.batch_echo(float(workload.batch))}: {len(ranked.step_time):,} layouts "
        "evaluated,"
        f" {len(ranked):,} fit"
        + (
            ", each with its expert all-to-alls paired (ep_overlap)"
            if ranked.base.ep_overlap
            else ""
        )
    )
    orders = len(ranked.axis_orders) > 1  # then say which order of the axes each layout takes
    note = (
        ["Axes: the slice's axes in the order the groups take them, TP the last axis first.", ""]
        if orders
        else []
    )
    rows = [
        head,
        "",
        *note,
        f"{'#':>3}  {'X x Y x Z':<16} "
        + (f"{'axes':<10} " if orders else "")
        + f"{'ZeRO':<5} {'recompute':<12} {'schedule':<16} {'m':>4} {'step':>9} "
        f"{f'{LEVEL:.0%} interval':>17} {'peak':>9} {'HBM left':>8}"
        + (f" {'to train':>10} {'goodput':>7}" if workload.tokens is not None else "")
        + _run_heads(ranked)
        + "  binds",
    ]
    for r in ranks:
        k, index = ranked.layout(r), ranked.order[r]
        schedule = k["schedule"] + (f" v={k['virtual_stages']}" if k["virtual_stages"] > 1 else "")
        layout, step = f"{k['x']}x{k['y']}x{k['z']}", units.seconds(float(ranked.step_time[index]))
        # groups of X (MODEL.md §D)
        folded = k["ep"] > 1 and bool(folds_over_tp(k["etp"], k["y"]))
        layout += f" EP{k['ep']}" * (k["ep"] > 1) + " ETP1" * folded
        layout += f" CP{k['cp']}" * (k["cp"] > 1)
        # the pods an FSDP group or a pipeline spans (MODEL.md §B.9, §B.10)
        layout += f" FSDP:{k['fsdp_pods']}pods" * (k["fsdp_pods"] > 1)
        layout += f" PP:{k['pp_pods']}pods" * (k["pp_pods"] > 1)
        axes = f"{units.mesh(k['slice_shape']):<10} " if orders else ""
        e = ranked.estimate(r)
        run = e.run
        train = (
            f" {units.seconds(float(run.wall)):>10} {float(run.goodput):>7.1%}{_run_cells(run)}"
            if run is not None
            else ""
        )
        rows.append(
            f"{r + 1:>3}  {layout:<16} {axes}{k['zero']:<5} {k['remat']:<12} {schedule:<16} "
            f"{k['microbatches']:>4}"
            f" {step:>9} {_span(e, r > 0 and ranked.tied[index]):>17}"
            f" {units.nbytes(float(ranked.memory[index])):>9}"
            f" {_left(ranked, index):>8}{train}  {binds(e)}"
        )
    return "\n".join(rows + _ties_said(ranked))


def _run_heads(ranked) -> str:
    """The heads of the run's cost and energy, where the plan's runs have them."""
    run = ranked.estimate(0).run if len(ranked) else None
    if run is None:
        return ""
    return f" {'cost':>9}" * (run.cost is not None) + f" {'energy':>9}" * (run.energy is not None)


def _run_cells(run) -> str:
    """A run's cost (chip-hours at the price given) and energy (MWh), where it has them."""
    cost = f" {units.count(float(run.cost)):>9}" if run.cost is not None else ""
    return cost + (f" {units.energy(float(run.energy)):>9}" if run.energy is not None else "")


def _span(e: Estimate, tie: bool) -> str:
    """A plan row's interval, "tie" where the row ties the fastest (MODEL.md §F.3)."""
    if e.step_interval is None:
        return "-"
    low, high = (units.seconds(float(t)) for t in e.step_interval)
    return f"{low}-{high}" + (" tie" if tie else "")


def _ties_said(ranked) -> list[str]:
    """What the table's ties mean, where the first rows tie the fastest."""
    if ranked.ties < 2:
        return []
    pairs = pair_spread()
    return [
        "",
        f"tie: the first {ranked.ties:,} rows are within {ranked.band - 1:.0%} of the fastest"
        f" step, where {LEVEL:.0%} of the model's errors on the ratio of two runs of one"
        f" published source fall ({pairs.runs:,} pairs): the model cannot order them, so the one"
        " that stays farthest inside its limits (compute-bound and in memory, with the model's"
        " errors against it) comes first, then the faster",
    ]


def _left(ranked, index) -> str:
    """The share of HBM a plan's row leaves free at its peak."""
    return f"{1 - float(ranked.memory[index]) / ranked.cluster.chip.usable_hbm:.0%}"
