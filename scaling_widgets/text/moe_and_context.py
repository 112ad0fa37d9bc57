"""Mixtures of experts and long sequences in words (MODEL.md §D): a model's parameters, a MoE
layer's two widths, where expert parallelism stays compute-bound, and whether context parallelism's
keys and values hide, with the numbers substituted."""

from __future__ import annotations

import numpy as np

from ..cost import Estimate
from ..cost.transformer.context import cp_bandwidth, ring_hides
from ..cost.transformer.counts import param_count
from ..cost.transformer.experts import ep_of_data, folds_over_tp, held_width, in_node
from . import units
from .lines import Line, Math


def params(e: Estimate) -> str:
    """ "13.0B params", or "671B params, 37.6B active" for a mixture of experts, and the weights of
    its multi-token-prediction modules (MODEL.md §D.1) beside them.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    text : str
        Ψ, the model's parameters, and for a MoE model the active ones beside it.
    """
    total = f"{units.count(float(e.params.total))} params"
    active = "" if e.model.moe is None else f", {units.count(float(e.params.active))} active"
    return total + active + _mtp(e.model, e.params)


def _mtp(model, p) -> str:
    """ "; + 11.6B in 1 MTP module" for a model trained with multi-token prediction."""
    n = model.mtp_layers
    if not n:
        return ""
    return f"; + {units.count(float(p.mtp))} in {n} MTP module{'s' * (n > 1)}"


def model_summary(model) -> str:
    """A model in one line: its parameters, and its experts and attention when they are not
    dense.

    Parameters
    ----------
    model : Model
        The model.

    Returns
    -------
    text : str
        Ψ; for a MoE model the active parameters, E experts of width F_e, top k, and the
        shared experts and first dense layers where there are any; "multi-head latent
        attention" where the model has it.
    """
    p = param_count(**model.dims())
    text = f"{units.count(float(p.total))} params"
    if model.moe is not None:
        moe = model.moe
        shared = f" + {moe.shared} shared" if moe.shared else ""
        dense = f"; the first {moe.dense_layers} layers dense" if moe.dense_layers else ""
        text += (
            f", {units.count(float(p.active))} active: {moe.experts} experts of {moe.d_ff}, top "
            f"{moe.top_k}"
            f"{shared}{dense}"
        )
    if model.mla is not None:
        text += "; multi-head latent attention"
    return text + _mtp(model, p)


def held(e: Estimate) -> float:
    """The MLP width a chip holds of a layer before TP: (E/e + S)·F_e with e the EP group's
    extent over the data axis (``ep_of_data``), F for a dense model.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    width : float
        F_w, the MLP width one chip holds of each layer before TP [features].
    """
    return float(held_width(e.model, _ep_of_data(e)))


def _ep_of_data(e: Estimate) -> float:
    """e over the data axis, the group in all the pods it spans (MODEL.md §D.2, §B.12)."""
    return float(ep_of_data(e.layout.ep, e.y, e.layout.etp)) * int(e.layout.ep_pods)


def _group(e: Estimate) -> int:
    """EP, the chips that split the experts in all the pods the group spans."""
    return int(e.layout.ep) * int(e.layout.ep_pods)


def weights_per_compute(e: Estimate) -> tuple[float, tuple[str, str]]:
    """r = F_w/F, and how a formula writes it: ("·r", "·28.6"), or nothing for a dense model.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    r : float
        F_w/F, the width a chip holds (``held``) over the width a token goes through; 1.0 for a
        dense model.
    written : tuple of str
        The factor in symbols and in numbers, to follow a term of a formula; ("", "") for a
        dense model.
    """
    if e.model.moe is None:
        return 1.0, ("", "")
    r = held(e) / e.model.active_width
    return r, ("·r", f"·{r:.3g}")


def width(value: float) -> str:
    """A width as the formulas write it: 13824, or 16896.5 with a capacity factor's padding.

    Parameters
    ----------
    value : float
        The width, F, F_w or F_e [features].

    Returns
    -------
    text : str
        No decimals when whole, else one.
    """
    return f"{value:.0f}" if value == round(value) else f"{value:.1f}"


def thresholds(e: Estimate) -> list[Line]:
    """The two widths and what their ratio does to DP and FSDP; with EP, its own limit.

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    lines : list of Line
        A "note": F_w, F and r = F_w/F with the numbers substituted; with EP > 1, a "threshold"
        line: the all-to-alls over the layer's compute and, on GPUs across nodes, the GPU
        chapter's rule on F_e.

    References
    ----------
    .. [1] docs/MODEL.md §D.1 (a MoE layer's two widths) and §D.2 (expert parallelism).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP).
    .. [3] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    """
    moe, model, r = e.model.moe, e.model, weights_per_compute(e)[0]
    ep, e_x = _group(e), _ep_of_data(e)
    pad = f"·CF {moe.capacity_factor:g}" if moe.capacity_factor else ""
    folded = ep > 1 and e_x != ep  # whole experts on each chip, E/EP of them
    how = f" (e = EP/Y = {ep}/{int(e.y)}: the EP group folds over TP x X)" if folded else ""
    if folded:
        held_by = f"(E/e + S)·F_e = ({moe.experts}/{e_x:g} + {moe.shared})"
    elif ep > 1:
        held_by = f"(E/EP + S)·F_e = ({moe.experts}/{ep} + {moe.shared})"
    else:
        held_by = f"(E + S)·F_e = ({moe.experts} + {moe.shared})"
    out = [
        Line.of(
            "note",
            f"MoE: a chip holds F_w = {held_by}·{moe.d_ff} = {width(held(e))} of each MoE layer's "
            f"MLP{how},"
            f" and a token goes through F = (k{pad} + S)·F_e = {width(model.active_width)}: the "
            "weights move"
            f" r = F_w/F = {r:.3g}x the bytes per FLOP of a dense layer, so DP and FSDP need r "
            "times the tokens"
            " (docs/MODEL.md §D.2)",
        )
    ]
    if ep > 1:
        out.append(_expert_parallel(e))
    return out


def _expert_parallel(e: Estimate) -> Line:
    """EP's all-to-alls against the MoE layer's compute: both grow with the batch, so EP has no
    critical batch; its limit is on F_e (the GPU chapter's rule on GPUs)."""
    ratio = float(np.max(e.layer.comm_ratio("ep")))
    verdict = "compute-bound" if ratio <= 1 else "communication-bound at any batch"
    chip, moe, ep, pods = e.chip, e.model.moe, _group(e), int(e.layout.ep_pods)
    across = f" across {pods} pods" if pods > 1 else ""
    out = [
        f"EP {ep}{across}: its all-to-alls take {ratio:.2f}x the layer's compute, {verdict}"
        " (both grow with the batch: EP's limit is on F_e, not on B)"
    ]
    if pods > 1:  # the copies bound for other pods leave on the chip's DCN link (MODEL.md §B.12)
        return Line.of("threshold", out[0] + "; the copies bound for other pods cross DCN")
    if chip.is_gpu and ep <= in_node(chip, ep, e.y, folds_over_tp(e.layout.etp, e.y)):
        return Line.of("threshold", out[0] + "; the group stays inside an NVLink node")
    if chip.is_gpu:
        node = chip.node_size
        # C over a node's egress, as the GPU chapter counts
        alpha = chip.flops / (chip.scaleout_bw * node)
        rule = Math(
            f"F_e > α_node·(EP − {node})/k = {alpha:,.0f}·{ep - node}/{moe.top_k} = "
            f"{alpha * max(ep - node, 0) / moe.top_k:,.0f} (k > EP/{node}), or F_e > {node}α_node ="
            f" {node * alpha:,.0f} (EP ≫ k); F_e = {moe.d_ff}",
            rf"F_e > \alpha_{{node}}(EP - {node})/k = {alpha:,.0f}\cdot {ep - node}/{moe.top_k} ="
            rf" {alpha * max(ep - node, 0) / moe.top_k:,.0f}\ (k > EP/{node}),\ \text{{or}}\ F_e > "
            rf"{node}"
            rf"\alpha_{{node}} = {node * alpha:,.0f}\ (EP \gg k);\ F_e = {moe.d_ff}",
        )
        return Line.of("threshold", out[0] + ". Across nodes the GPU chapter asks ", rule)
    return Line.of("threshold", out[0])


def context(e: Estimate) -> Line:
    """CP: the ring hides under the attention when s/CP ≥ (K/N_h)·C/W, doubled under causal
    masking; the all-gather and Ulysses never hide (MODEL.md §D.3).

    Parameters
    ----------
    e : Estimate
        The estimate of one layout.

    Returns
    -------
    line : Line
        A "threshold" line: CP and how it splits each sequence, why CP was chosen when the user
        did not ask for it, and for the ring the rule with the numbers substituted and whether
        it hides; for the all-gather and Ulysses their traffic over the layer's compute.
    """
    cp, kind, ratio = int(e.layout.cp), e.layout.cp_kind, float(np.max(e.layer.comm_ratio("cp")))
    head = f"CP {cp} ({kind}): each sequence of {e.seq_len} split over {cp} chips"
    head += f" in {int(e.layout.cp_pods)} pods" * (int(e.layout.cp_pods) > 1)
    if e.cp_implied:  # not asked for: the batch gives a replica less than a sequence
        m = int(e.microbatches)
        per_replica = float(e.batch) / (e.seq_len * int(e.x) * int(e.pods) * m)
        head += (
            f" (context parallelism, chosen for you: {units.batch_echo(float(e.batch))} give"
            f" {per_replica:.2g} sequences per data replica{' and microbatch' * (m > 1)};"
            " --cp 1 refuses instead)"
        )
    if kind != "ring":
        return Line.of(
            "threshold",
            f"{head}; its keys and values are not overlapped: {ratio:.2f}x the layer's compute",
        )
    # the links the group passes at: a GPU's NIC off its node, DCN's across pods (§B.13)
    placed = dict(x=e.x, y=e.y, mx=e.mx, pods=e.layout.cp_pods)
    need, have = (
        float(v) for v in ring_hides(chip=e.chip, model=e.model, seq_len=e.seq_len, cp=cp, **placed)
    )
    causal, tex_causal = ("2·", r"2\cdot ") if e.model.causal else ("", "")
    W = float(cp_bandwidth(chip=e.chip, cp=cp, **placed))
    K, N_h, alpha = e.model.kv_heads, e.model.heads, e.chip.flops / W
    rule = Math(
        f"s/CP ≥ {causal}(K/N_h)·C/W = {causal}({K}/{N_h})·{alpha:,.0f} = {need:,.0f}",
        rf"s/CP \ge {tex_causal}(K/N_h)\,C/W = {tex_causal}({K}/{N_h})\cdot {alpha:,.0f} = "
        rf"{need:,.0f}",
    )
    verdict = "hidden" if have >= need else f"not hidden: {ratio:.2f}x the layer's compute shows"
    return Line.of(
        "threshold",
        f"{head}; the ring's K/V passes hide under the attention when ",
        rule,
        f"; s/CP = {have:,.0f}: {verdict}",
    )
