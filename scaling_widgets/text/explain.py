"""What an estimate means, in sentences written once: the layout's name, the verdict, each
threshold with its numbers substituted, the memory, the step, and what binds.

Each sentence is a ``Line`` (``lines.py``); the CLI prints it as text, the panel as HTML/LaTeX.
"""

from __future__ import annotations

from ..cost import Estimate
from ..cost.hardware.mesh import span_axes
from ..cost.memory.verdict import UNCERTAINTY
from ..cost.schedules import SCHEDULES
from ..cost.transformer.experts import folds_over_tp
from . import memory, units
from .lines import Line, plain
from .step import binds, step, time_to_train
from .thresholds import thresholds

# the ends that take a layer's place in the pipeline split, as the layout's line says them
ENDS_NAMED = {
    "embedding": "the embedding",
    "loss": "the loss",
    "both": "the embedding and the loss",
}
AXIS_NAMES = {
    "dp": "data-parallel (X)",
    "fsdp": "FSDP (X)",
    "tp": "tensor-parallel (Y)",
    "dcn": "DCN",
    "ep": "expert-parallel (EP)",
    "cp": "context-parallel (CP)",
}


def explain(e: Estimate, best: Estimate | None = None) -> list[Line]:
    """The whole explanation of one layout; ``best`` is FSDP + TP at its best split, if known.

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
        The layer's verdict, the step's, the batch's rounding (if any), each threshold, the
        chapter's memory count, the peak, the step and, with the tokens given, the time to
        train.
    """
    out = [verdict(e), step_verdict(e), *rounded_batch(e), *thresholds(e, best)]
    out.append(memory.chapter_count(e))
    out += [memory.peak(e), step(e)]
    if e.training_time is not None:
        out.append(time_to_train(e))
    return out


def rounded_batch(e: Estimate) -> list[Line]:
    """A line when the batch asked for was not whole sequences and was rounded; else none.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    lines : list of Line
        One "batch" line: the batch asked for and the whole sequences it was rounded to
        [tokens]; empty when it was not rounded.
    """
    asked = e.workload.rounded_from
    if asked is None:
        return []
    T = e.seq_len
    return [
        Line.of(
            "batch",
            f"The batch asked for, {float(asked):,.0f} tokens, is {float(asked) / T:,.2f}"
            f" sequences of {T}: rounded to {float(e.batch) / T:,.0f} whole sequences"
            f" ({float(e.batch):,.0f} tokens), as frameworks count a batch.",
        )
    ]


def folded_name(ep: int, y: int) -> str:
    """A folded EP group in words: "EP 32 over TP 2 x 16 of X", or "EP 2 within TP 4".

    Parameters
    ----------
    ep : int
        EP, the chips of the expert-parallel group [chips].
    y : int
        Y, the tensor-parallel degree [chips].

    Returns
    -------
    name : str
        "EP {ep} within TP {y}" when EP ≤ Y, else "EP {ep} over TP {y} x {ep // y} of X".
    """
    if ep <= y:
        return f"EP {ep} within TP {y}"
    return f"EP {ep} over TP {y} x {ep // y} of X"


def layout_text(knobs: dict, shape_given) -> str:
    """ "1024 x 4 x 1, ZeRO-3, none, m=1", with the axes when TP takes another axis of the slice.

    Parameters
    ----------
    knobs : dict
        A layout's knobs, as ``Plan.layout`` and ``StrategyMap.layout`` give them: x, y, z,
        zero, remat, schedule, virtual_stages, microbatches, ep, etp, cp, cp_kind, the pods an
        FSDP group and a pipeline span (fsdp_pods, pp_pods; 1 where absent) and slice_shape (its
        axes in the order the layout takes them).
    shape_given : tuple of int
        The slice shape asked for [chips]; where ``knobs["slice_shape"]`` differs, the text
        names the axis order.

    Returns
    -------
    text : str
        X x Y x Z, the axes, the EP and CP groups, the ZeRO stage, the recompute, the schedule
        (with pipeline stages) and the microbatches m.
    """
    schedule = (
        f", {knobs['schedule']} v={knobs['virtual_stages']}"
        if knobs["virtual_stages"] > 1
        else f", {knobs['schedule']}"
        if knobs["z"] > 1
        else ""
    )
    axes = f" on {units.mesh(knobs['slice_shape'])}" if knobs["slice_shape"] != shape_given else ""
    folded = knobs["ep"] > 1 and bool(folds_over_tp(knobs["etp"], knobs["y"]))
    experts = folded_name(knobs["ep"], knobs["y"]) if folded else f"EP {knobs['ep']}"
    groups = f", {experts}" * (knobs["ep"] > 1) + f", CP {knobs['cp']} ({knobs['cp_kind']})" * (
        knobs["cp"] > 1
    )
    # the pods an FSDP group or a pipeline spans (MODEL.md §B.9, §B.10)
    groups += f", FSDP across {knobs.get('fsdp_pods', 1)} pods" * (knobs.get("fsdp_pods", 1) > 1)
    groups += f", PP across {knobs.get('pp_pods', 1)} pods" * (knobs.get("pp_pods", 1) > 1)
    groups += f", TP across {knobs.get('tp_pods', 1)} pods" * (knobs.get("tp_pods", 1) > 1)
    groups += f", EP across {knobs.get('ep_pods', 1)} pods" * (knobs.get("ep_pods", 1) > 1)
    groups += f", CP across {knobs.get('cp_pods', 1)} pods" * (knobs.get("cp_pods", 1) > 1)
    return (
        f"{knobs['x']} x {knobs['y']} x {knobs['z']}{axes}{groups}, ZeRO-{knobs['zero']}, "
        f"{knobs['remat']}"
        f"{schedule}, m={knobs['microbatches']}"
    )


def layout_name(e: Estimate) -> str:
    """The layout as it is: "FSDP X=1024 x TP Y=4, ZeRO-3"; ZeRO 0-2 over X is "DP", not FSDP.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    name : str
        The groups larger than one ("one chip" when none is), then what sets the layout apart:
        a folded EP group, the ZeRO stage, the schedule and microbatches, the recompute other
        than the chapter's checkpoints, sequence parallelism, paired all-to-alls.
    """
    x, y, z = int(e.x), int(e.y), int(e.z)
    data = "FSDP" if e.zero == 3 else "DP"  # below ZeRO-3 the weights are whole on X
    # EP and CP's groups in all the pods they span (MODEL.md §B.12, §B.13)
    E, C = int(e.layout.ep_pods), int(e.layout.cp_pods)
    ep, cp = int(e.layout.ep) * E, int(e.layout.cp)
    folded = ep > 1 and bool(folds_over_tp(e.layout.etp, y))
    # the experts split over EP of the X chips (or of TP x X: whole experts on each chip)
    experts = f" with EP {ep}" if ep > 1 and not folded else ""
    # the sequences split over CP of them
    experts += f" with CP {cp} ({e.layout.cp_kind})" if cp > 1 else ""
    groups = (
        [f"{data} X={x}{experts}"] * (x > 1) + [f"TP Y={y}"] * (y > 1) + [f"PP Z={z}"] * (z > 1)
    )
    extra = [f"{folded_name(ep, y)}, whole experts on each chip"] if folded else []
    extra += [f"ZeRO-{e.zero}"] if x > 1 else []
    shared = int(e.layout.fsdp_pods)
    extra += [f"FSDP across {shared} pods over DCN"] if shared > 1 else []
    spans = int(e.layout.pp_pods)  # Z counts the pipeline's stages, in all the pods it spans
    each = f"{z // spans} stage{'s' * (z // spans > 1)} in each"
    extra += [f"PP across {spans} pods over DCN, {each}"] if spans > 1 else []
    T = int(e.layout.tp_pods)  # Y counts TP's chips, in all the pods it spans (MODEL.md §B.11)
    extra += [f"TP across {T} pods over DCN, {y // T} chip{'s' * (y // T > 1)} in each"] * (T > 1)
    for name, n, pods in (("EP", ep, E), ("CP", cp, C)):  # a pod's share of each group
        extra += [f"{name} {n} across {pods} pods over DCN, {n // pods} chip{'s' * (n > pods)} in"
                  " each"] * (pods > 1)  # fmt: skip
    if z > 1:
        virtual = (
            f" x {e.virtual_stages} virtual" if SCHEDULES[e.schedule].takes_virtual_stages else ""
        )
        extra.append(f"{e.schedule}{virtual}, {int(e.microbatches)} microbatches")
        if e.layout.ends_as_layers != "none":
            extra.append(f"{ENDS_NAMED[e.layout.ends_as_layers]} as layers")
        given = {"first": e.layout.first_stage_layers, "last": e.layout.last_stage_layers}
        extra += [f"the {end} stage {n} layers" for end, n in given.items() if n is not None]
    elif int(e.microbatches) > 1:
        extra.append(f"{int(e.microbatches)} microbatches accumulated")
    if e.remat != "checkpoints":
        named = "custom (nothing kept on the chip)" if e.remat == "custom:" else e.remat
        extra.append("no recompute" if e.remat == "none" else f"{named} recompute")
    if e.sequence_parallel and y > 1:
        extra.append("sequence parallel")
    if e.layout.ep_overlap:
        extra.append("all-to-alls paired (combined 1F1B)")
    return ", ".join([" x ".join(groups) or "one chip", *extra])


def group_places(e: Estimate) -> list[str]:
    """Where X and Y sit: axes spanned and rings on a TPU; inside or across nodes on GPUs.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    places : list of str
        One phrase for X and one for Y, each where the group is larger than one chip.
    """
    out = []
    # on a GPU slice (nodes, GPUs in each): the X and Y shares of the nodes' axis; only there
    gpu = e.chip.is_gpu
    nodes = span_axes(slice_shape=e.slice_shape, x=e.x, y=e.y, z=e.z).shares[0] if gpu else (1, 1)
    for name, size, m, wraps, across in (
        ("X", int(e.x), float(e.mx), e.wrap_x, nodes[0] > 1),
        ("Y", int(e.y), float(e.my), e.wrap_y, nodes[1] > 1),
    ):
        if size == 1:
            continue
        if not gpu:
            out.append(f"{name} spans {m:g} axes ({'ring' if wraps else 'no wraparound'})")
        elif not across:
            out.append(f"{name} inside a node (NVLink)")
        elif m == 1:  # its GPUs' NICs in a node carry as much as NVLink
            out.append(f"{name} across nodes at NVLink's bandwidth")
        else:
            out.append(f"{name} across nodes at {m:.2f}x NVLink")
    return out


def verdict(e: Estimate) -> Line:
    """What binds and by how much, in one sentence; first of all whether it fits at all.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A strong "verdict" line: the peak against the HBM it may use when the layout does not
        fit, then the layer's verdict by the chapter's roofline (MODEL.md §A.10).
    """
    said = str(e.verdict)
    if said == "fits":
        return _bound(e)
    total, limit = float(e.peak.reserved), float(e.memory_limit)
    words = {
        "tight": f"Tight: a peak of {units.nbytes(total)} per chip against the"
        f" {units.nbytes(limit)} it may use, within the peak's ±{UNCERTAINTY:.0%}. ",
        "does not fit": f"Does not fit: a peak of {units.nbytes(total)} per chip, over the"
        f" {units.nbytes(limit)} it may use. ",
    }
    return Line.of("verdict", words[said] + plain(_bound(e)), strong=True)


def _beside_the_roofline(e: Estimate) -> str:
    """The chapter's layer is its MLP: context parallelism's keys and values, attention's traffic,
    are not in its verdict; say so where they outweigh the compute (their own line has the rule)."""
    cp_ratio = float(e.layer.comm_ratio("cp")) if int(e.layout.cp) > 1 else 0.0
    if cp_ratio <= 1:
        return ""
    return (
        f" Attention's context-parallel keys and values, which the chapter's layer leaves out,"
        f" take {cp_ratio:.2f}x (below)."
    )


def step_verdict(e: Estimate) -> Line:
    """The step's view beside the layer's: what, besides the matmuls, takes most of the step
    (predicted) or whether the communication shows at the MFU given. The two never contradict:
    one is a layer at peak, the other the whole step.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A "verdict" line: how the step was had (an MFU given, measured or predicted) and what
        binds it (``step.binds``).
    """
    # the MFU given, not the one the step achieves (lower where communication shows)
    given, measured = e.options.mfu, e.options.measured_step_time
    how = (
        f"at {float(given):.0%} MFU given"
        if given is not None
        else "as measured"
        if measured is not None
        else "predicted"
    )
    return Line.of("verdict", f"The step ({how}): {binds(e)}.")


def _bound(e: Estimate) -> Line:
    ratio = float(e.layer.worst_ratio)
    axis = AXIS_NAMES[str(e.layer.worst_axis)]
    layer = "Per layer (the chapter's roofline): "
    if ratio == 0:
        return Line.of(
            "verdict",
            layer + "compute-bound: nothing is communicated (one chip per layer).",
            strong=True,
        )
    if e.compute_bound:
        return Line.of(
            "verdict",
            layer + f"compute-bound: the slowest communication, {axis}, takes {ratio:.2f}x the"
            " compute time." + _beside_the_roofline(e),
            strong=True,
        )
    return Line.of(
        "verdict",
        layer + f"communication-bound on {axis}: it takes {ratio:.2f}x the compute time.",
        strong=True,
    )
