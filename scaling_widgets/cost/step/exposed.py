"""What of each collective the compute does not hide, per microbatch or step (MODEL.md §C.1, §C.2,
§D.2, §D.3): TP's all-reduces, the expert all-to-alls, context parallelism's K/V exchange, and the
data-parallel reductions with ZeRO-3's gathers and scatters. ``predict`` adds them to the step.
"""

from __future__ import annotations

import numpy as np

from ..schedules import combined_share, paired_share
from ..transformer.experts import folds_over_tp, in_node, mlp_tp_share
from .collectives import (
    collective_time,
    crosses_nodes,
    group_bandwidth,
    link_efficiency,
    nvls_share,
    ring_costs,
)
from .profiles import governs, hidden_share


def tp_exposed(e, profile, b, rerun, layer_matmul, layer_backward):
    """One layer's TP collectives for a microbatch beyond what hides under its matmuls [s]: two
    all-reduces of b·D·2 bytes a pass, two more under full recompute (the attention's one more
    under the chapter's checkpoints); the MLP's only where its experts are TP-sharded
    (``experts.mlp_tp_share``).

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its chip, model, layout and placement.
    profile : Profile
        The chip's link shares and latencies (MODEL.md §F.1) and the stack's overlaps (§F.2).
    b : float or array_like
        b, the tokens of one microbatch on one data replica, B/(X·P·m) [tokens].
    rerun : Rerun
        The shares of the layer's forward work run again (``transformer/recompute.py``): the
        attention's collective once more with its projections, the MLP's with its matmuls.
    layer_matmul : float or array_like
        One layer's matmuls for the microbatch, recompute included: at most o_tp of it hides
        the collectives [s].
    layer_backward : float or array_like
        The backward pass's share of them: where a stack hides only the forward passes'
        collectives ("tp_forward"), the rest hides them [s].

    Returns
    -------
    exposed : np.ndarray
        One layer's TP collectives for the microbatch that do not hide [s].

    References
    ----------
    .. [1] docs/MODEL.md §C.1 (TP collectives) and §D.2 (EP folded over TP).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021.
    """
    chip, Y = e.chip, e.y
    per_pass = 1 + mlp_tp_share(e.model, folds_over_tp(e.layout.etp, Y))  # attention's, MLP's
    in_pod = Y // e.layout.tp_pods  # the group's ring in a pod; across pods a second hop
    crosses = crosses_nodes(chip, in_pod) if chip.is_gpu else False
    # without sequence parallelism all-reduces, which NVLS may run; with it all-gathers and
    # reduce-scatters of the same bytes, which NCCL runs as rings
    sp = np.asarray(e.layout.sequence_parallel)
    nbytes = 2 * b * e.model.d_model
    one = collective_time(
        nbytes=nbytes,
        group=in_pod,
        bandwidth=group_bandwidth(chip, e.my, crosses, chip.node_size),
        efficiency=link_efficiency(chip, profile, e.my, crosses),
        latency=np.where(crosses, profile.latency_nic, profile.latency),
        axes=1 if chip.is_gpu else e.my,
        nvls=np.where(sp, 0.0, nvls_share(chip, profile, crosses)),
    ) + _over_tp_pods(e, profile, nbytes, in_pod)
    mlp = per_pass - 1
    forward = per_pass + rerun.dense + mlp * rerun.mlp  # the forward's and the recompute's
    # a TP overlap feature runs with sequence parallelism alone (Megatron-LM refuses
    # --tp-comm-overlap without --sequence-parallel): without it, nothing hides
    share = hidden_share(profile, "tp", profile.o_tp)
    if governs(profile, "tp"):
        share = np.where(sp, share, 0.0)
    exposed = np.maximum(0.0, one * (forward + per_pass) - share * layer_matmul)
    if hidden_share(profile, "tp_forward", 0.0) == 0:
        return exposed
    # the forward passes' collectives under their own matmuls; the backward's after its matmuls,
    # as PyTorch's async TP fuses them (its backward's reduce-scatters take sums of matmuls)
    forward_exposed = np.maximum(0.0, one * forward - (layer_matmul - layer_backward))
    return np.where(sp, np.minimum(exposed, forward_exposed + one * per_pass), exposed)


def all_to_alls(e, profile, stage_layers, rerun_mlp):
    """One microbatch's expert all-to-alls on a stage (MODEL.md §D.2): dispatch and combine each
    pass (again where the MoE layer is recomputed) in each MoE layer, over the chip's b/Y
    tokens, none hidden.
    One all-to-all is half the layer's forward EP time (``LayerTimes.ep``) over the m
    microbatches.

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its chip, model, layout and placement.
    profile : Profile
        The chip's link shares and latencies (MODEL.md §F.1) and the stack's overlaps (§F.2).
    stage_layers : int or array_like
        The busiest stage's layers, v·ceil(L/(Z·v)) [layers].
    rerun_mlp : float or array_like
        The share of the MLP's forward run again (``Rerun.mlp``): 1 under full recompute.

    Returns
    -------
    seconds : float or np.ndarray
        The stage's expert all-to-alls for one microbatch, latencies included; 0.0 for a dense
        model [s].

    References
    ----------
    .. [1] docs/MODEL.md §D.2 (expert parallelism) and §C.2 (expert all-to-alls, exposed).
    .. [2] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    """
    model, chip, EP = e.model, e.chip, np.asarray(e.layout.ep)
    if model.moe is None:
        return 0.0
    crosses, link = False, profile.link_ici
    if chip.is_gpu:  # the group's own tier: NVLink while it fits in a node, else the NIC
        crosses = EP > in_node(chip, EP, e.y, folds_over_tp(e.layout.etp, e.y))
        link = np.where(crosses, profile.link_nic, profile.link_nvlink)
    # across pods the copies bound for other pods leave on DCN's link (MODEL.md §B.12)
    pods = np.asarray(e.layout.ep_pods)
    seconds = e.layer.ep[0] / (2 * e.microbatches) / np.where(pods > 1, profile.link_dcn, link)
    EP = EP * pods  # the group in all its pods
    moe_layers = stage_layers * (model.layers - model.moe.dense_layers) / model.layers
    step = np.where(crosses, profile.latency_nic, profile.latency)
    latency = np.maximum(EP - 1, 0) * step  # one message to each other chip of the group
    return moe_layers * (4 + 2 * rerun_mlp) * (seconds + latency)


def context_exchange(e, profile, stage_layers, rerun_dense):
    """One microbatch's context-parallel traffic on a stage (MODEL.md §D.3): what the ring does not
    hide under the attention, or all of the all-gather's or Ulysses', forward, about twice backward,
    again where K and V are made again: the layer's forward CP time (``LayerTimes.cp``) over m
    microbatches.

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its chip, model, layout and placement.
    profile : Profile
        The chip's link shares and latencies (MODEL.md §F.1) and the stack's overlaps (§F.2).
    stage_layers : int or array_like
        The busiest stage's layers, v·ceil(L/(Z·v)) [layers].
    rerun_dense : float or array_like
        The share of the attention's projections run again (``Rerun.dense``): 1 under full
        recompute and the chapter's checkpoints, 0 without.

    Returns
    -------
    seconds : float or np.ndarray
        The stage's context-parallel traffic for one microbatch; 0.0 without CP [s].

    References
    ----------
    .. [1] docs/MODEL.md §D.3 (context parallelism) and §C.2 (its traffic, exposed).
    """
    if np.all(np.asarray(e.layout.cp) == 1):
        return 0.0
    efficiency = profile.link_ici if not e.chip.is_gpu else profile.link_nvlink
    # across pods the keys and values cross the data-center network's link (MODEL.md §B.13)
    efficiency = np.where(np.asarray(e.layout.cp_pods) > 1, profile.link_dcn, efficiency)
    return stage_layers * (3 + rerun_dense) * e.layer.cp[0] / e.microbatches / efficiency


def under_pairs(e, all_to_all, context, forward, backward, rerun):
    """What of one microbatch's expert all-to-alls and CP exchange hides under a paired pass
    (MODEL.md §B.6), each [s]: in a pair of one microbatch's forward and another's backward, the
    forward's traffic hides under the backward's compute and the backward's under the forward's,
    up to that compute, on the share of the passes that are paired: DualPipe's pairs hide both,
    Megatron-LM's combined 1F1B (``ep_overlap``) the all-to-alls alone. The forward's share is 2
    of an MoE layer's 4 + 2r all-to-alls (r the MLP's rerun) and 1 of the 3 + r CP exchanges (r
    the projections').

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its schedule, Z, m, v and ``ep_overlap``.
    all_to_all : float or array_like
        One microbatch's expert all-to-alls on the stage (``all_to_alls``) [s].
    context : float or array_like
        One microbatch's context-parallel exchange on the stage (``context_exchange``) [s].
    forward : float or array_like
        The stage's forward matmuls for one microbatch: what the backward's traffic hides
        under [s].
    backward : float or array_like
        The stage's backward matmuls for one microbatch, a recomputed forward included: what
        the forward's traffic hides under [s].
    rerun : Rerun
        The shares of a layer's forward work run again (``transformer/recompute.py``).

    Returns
    -------
    hidden : tuple of two np.ndarray
        The all-to-alls' and the exchange's seconds that hide [s].

    References
    ----------
    .. [1] docs/MODEL.md §B.6 (what pairs hide; Megatron-LM's combined 1F1B).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/pipeline_parallel/combined_1f1b.py``
       (``combined_1f1b_schedule_for_interleaved_pipelining``).
    """
    Z, m, v = e.z, e.microbatches, e.layout.virtual_stages
    both = paired_share(schedule=e.layout.schedule, stages=Z, microbatches=m)
    combined = combined_share(stages=Z, microbatches=m, virtual_stages=v) * e.layout.ep_overlap
    a_share, c_share = np.maximum(both, combined), both
    a_ahead = all_to_all * 2 / (4 + 2 * rerun.mlp)
    c_ahead = context / (3 + rerun.dense)
    a_behind, c_behind = all_to_all - a_ahead, context - c_ahead
    # each side's traffic that pairs share the other pass's compute
    ahead = a_ahead * (a_share > 0) + c_ahead * (c_share > 0)
    behind = a_behind * (a_share > 0) + c_behind * (c_share > 0)
    # the share of each side's traffic the other pass's compute covers (none to cover: 0)
    under_backward = np.minimum(ahead, backward) / np.where(ahead > 0, ahead, 1.0)
    under_forward = np.minimum(behind, forward) / np.where(behind > 0, behind, 1.0)
    return (
        a_share * (a_ahead * under_backward + a_behind * under_forward),
        c_share * (c_ahead * under_backward + c_behind * under_forward),
    )


def data_parallel(
    e, profile, psi_layer, stage_layers, m, layer_matmul, backward_last, elsewhere
) -> dict:
    """The reductions over X and the pods, and ZeRO-3's per-layer traffic, beyond what hides;
    gradients move in the dtype the stack keeps them (fp32 for Megatron-LM's main gradients,
    torchtitan's reduce dtype and MaxText's), weights in bf16.

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its chip, model, layout and placement.
    profile : Profile
        The chip's link shares and latencies (MODEL.md §F.1) and the stack's overlaps (§F.2).
    psi_layer : float or array_like
        Ψ_layer, one layer's parameters a data replica holds before TP splits them, the routed
        experts on other EP chips left out: what ZeRO-3 gathers [parameters].
    stage_layers : int or array_like
        The busiest stage's layers, v·ceil(L/(Z·v)) [layers].
    m : int or array_like
        m, the microbatches a step.
    layer_matmul : float or array_like
        One layer's matmuls for a microbatch, recompute included: what ZeRO-3's traffic hides
        under, a pass under each [s].
    backward_last : float or array_like
        The stage's last backward pass, its layers' matmuls for one microbatch without
        recompute: what the reductions hide under, and half of it the first forward, what the
        weights' all-gather hides under; each up to its share (``profiles.hidden_share``) [s].
    elsewhere : float or array_like
        The routed experts' parameters held on other EP chips, left out of a chip's
        gradients [parameters].

    Returns
    -------
    exposed : dict of str to np.ndarray
        "dp_exposed" (the reduction over X, ZeRO 0–2), "fsdp_exposed" (ZeRO-3's gathers and
        scatters) and "dcn_exposed" (the reduction across pods), each what does not hide [s].

    References
    ----------
    .. [1] docs/MODEL.md §C.2 (a step: data parallelism) and §B.3 (ZeRO stages).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Scaling Between Pods.
    .. [3] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
       Parameter Models", SC 2020.
    .. [4] NVIDIA, "Communication Overlap", NeMo Framework User Guide (24.12): the distributed
       optimizer's traffic in chunks of a layer, "exposes only one DP communication chunk".
    .. [5] Y. Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
       VLDB 2023 (backward and forward prefetching: the next all-gather issued ahead).
    """
    chip, X, Y = e.chip, e.x, e.y
    x_crosses = crosses_nodes(chip, X, Y) if chip.is_gpu else False
    # the DP group's GPUs in one node: the node's share not taken by TP
    per_node = np.maximum(1, chip.node_size // np.maximum(Y, 1)) if chip.is_gpu else 1
    W_x = group_bandwidth(chip, e.mx, x_crosses, np.minimum(per_node, X))
    link_x = link_efficiency(chip, profile, e.mx, x_crosses)
    # a replica's gradients, reduced in the dtype the stack keeps them (bf16 where it says none)
    grad_bytes = profile.grad_bytes or 2.0
    shard = (e.params.total - elsewhere) / (Y * e.model.layers / stage_layers) * grad_bytes
    latency = np.where(x_crosses, profile.latency_nic, profile.latency)
    per_byte, per_round = ring_costs(
        group=X, bandwidth=W_x, efficiency=link_x, latency=latency, axes=1 if chip.is_gpu else e.mx
    )

    def over_x(nbytes, rounds=1):  # a ring over X: 2 rounds an all-reduce, 1 a gather or scatter
        return rounds * (nbytes * per_byte + per_round)

    # Without ZeRO an all-reduce of the gradients; the distributed optimizer (ZeRO 1, 2)
    # reduce-scatters them and all-gathers the updated bf16 weights. The reduction hides under
    # the last backward, the gather under the first forward (half a backward), each in chunks of
    # a layer: at least one chunk sticks out, the first layer's gradients or the first layer's
    # weights, with no compute left to hide under (MODEL.md §C.2, §F.2).
    distributed = np.asarray(e.zero) >= 1
    # an all-reduce inside one NVLink domain may run through the switch (NVLS), if faster
    all_reduce = collective_time(
        nbytes=shard, group=X, bandwidth=W_x, efficiency=link_x, latency=latency,
        axes=1 if chip.is_gpu else e.mx, nvls=nvls_share(chip, profile, x_crosses),
    )  # fmt: skip
    grads = np.where(distributed, over_x(shard), all_reduce)
    weights = np.where(distributed, over_x(shard / grad_bytes * 2), 0.0)
    under_backward = hidden_share(profile, "grad_reduce", profile.o_dp) * backward_last
    under_forward = hidden_share(profile, "param_gather", profile.o_dp) * backward_last / 2
    reduced = np.maximum(grads / stage_layers, grads - under_backward)
    gathered = np.maximum(weights / stage_layers, weights - under_forward)
    sharded = np.asarray(e.zero) == 3
    dp = np.where(sharded, 0.0, reduced + gathered)
    # ZeRO-3: per layer and microbatch, gather the bf16 weights forward and again backward, and
    # reduce-scatter the gradients in the stack's dtype. Each is prefetched a layer ahead (FSDP's
    # prefetch, DeepSpeed's and Megatron's overlap): the next layer's gather hides under this
    # layer's forward, the gather and the scatter of the backward under its backward (recompute
    # included), and only what exceeds that compute shows; a step's first gather and last
    # scatter have nothing to hide under. Accumulating unsharded (FSDP's no_sync), only the last
    # microbatch scatters (MODEL.md §C.2).
    gather = over_x(psi_layer / Y * 2) + _over_fsdp_pods(e, profile, psi_layer / Y * 2)
    scatter = over_x(psi_layer / Y * grad_bytes)
    scatter = scatter + _over_fsdp_pods(e, profile, psi_layer / Y * grad_bytes)
    forward = backward_last / (2 * stage_layers)  # a layer's forward, half its backward
    backward = layer_matmul - forward
    ahead = np.maximum(0.0, gather - forward)
    syncs = np.where(profile.accumulate_unsharded, 1, m)
    per_layer = stage_layers * (
        (m - syncs) * (ahead + np.maximum(0.0, gather - backward))
        + syncs * (ahead + np.maximum(0.0, gather + scatter - backward))
    )
    fsdp = np.where(sharded, per_layer + gather + scatter, 0.0)
    dcn = _across_replicas(e, profile, shard, stage_layers, backward_last)
    return {"dp_exposed": dp, "fsdp_exposed": fsdp, "dcn_exposed": dcn}


def _over_tp_pods(e, profile, nbytes, in_pod):
    """A TP collective of ``nbytes`` across the T pods its group spans, the hop between pods: an
    all-reduce's gather and scatter, each of a pod's Y/T chips sending its share's (T-1)/T over
    its own link of the data-center network, a latency a pod each (MODEL.md §B.11); nothing with
    T = 1."""
    T = np.asarray(e.layout.tp_pods, dtype=float)
    per_byte = 2 * (T - 1) / T / in_pod / (e.chip.dcn_bw * profile.link_dcn)
    return (T > 1) * (nbytes * per_byte + 2 * (T - 1) * profile.latency)


def _over_fsdp_pods(e, profile, nbytes):
    """A ZeRO-3 gather or scatter of ``nbytes`` (a layer's, over TP) across the F pods FSDP
    spans, first of its two hops: each chip sends its 1/X share's (F-1)/F over the data-center
    network, a latency a pod (MODEL.md §B.9); nothing with F = 1."""
    F = np.asarray(e.layout.fsdp_pods, dtype=float)
    per_byte = (F - 1) / F / e.x / (e.chip.dcn_bw * profile.link_dcn)
    return (F > 1) * (nbytes * per_byte + (F - 1) * profile.latency)


def _across_replicas(e, profile, shard, stage_layers, backward_last):
    """The gradients' reduction across the P/F replicas of pods: a tree of log2(P/F) exchanges of
    each chip's 1/(X·F) share of ``shard``, hidden under the last backward as the stack's o_dcn
    says; the first layer's share sticks out (MODEL.md §C.2, §B.9)."""
    F = np.asarray(e.layout.fsdp_pods, dtype=float)
    exchange = shard / (e.x * F) / (e.chip.dcn_bw * profile.link_dcn)
    over_pods = np.log2(e.pods / F) * (exchange + profile.latency)
    last_pods = np.log2(e.pods / F) * (exchange / stage_layers + profile.latency)
    return np.maximum(last_pods, over_pods - profile.o_dcn * backward_last)
