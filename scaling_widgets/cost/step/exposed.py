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
    ring_costs,
)


def tp_exposed(e, profile, b, remat_forward, layer_matmul, rest_forward=0.0):
    """One layer's TP collectives for a microbatch beyond what hides under its matmuls [s]: two
    all-reduces of b·D·2 bytes a pass, two more under full recompute (the attention's one more
    under the chapter's checkpoints); the MLP's only where its experts are TP-sharded
    (``experts.mlp_tp_share``)."""
    chip, Y = e.chip, e.y
    per_pass = 1 + mlp_tp_share(e.model, folds_over_tp(e.layout.etp, Y))  # attention's, MLP's
    crosses = crosses_nodes(chip, Y) if chip.is_gpu else False
    one = collective_time(
        nbytes=2 * b * e.model.d_model,
        group=Y,
        bandwidth=group_bandwidth(chip, e.my, crosses, chip.node_size),
        efficiency=link_efficiency(chip, profile, e.my, crosses),
        latency=np.where(crosses, profile.latency_nic, profile.latency),
        axes=1 if chip.is_gpu else e.my,
    )
    count = per_pass * (2 + remat_forward) + rest_forward
    return np.maximum(0.0, one * count - profile.o_tp * layer_matmul)


def all_to_alls(e, profile, stage_layers, remat_forward):
    """One microbatch's expert all-to-alls on a stage (MODEL.md §D.2): dispatch and combine each
    pass (again under full recompute) in each MoE layer, over the chip's b/Y tokens, none hidden.
    One all-to-all is half the layer's forward EP time (``LayerTimes.ep``) over the m
    microbatches."""
    model, chip, EP = e.model, e.chip, np.asarray(e.layout.ep)
    if model.moe is None:
        return 0.0
    seconds = e.layer.ep[0] / (2 * e.microbatches)
    crosses = False
    if chip.is_gpu:  # the group's own tier: NVLink while it fits in a node, else the NIC
        crosses = EP > in_node(chip, EP, e.y, folds_over_tp(e.layout.etp, e.y))
        seconds = seconds / np.where(crosses, profile.link_nic, profile.link_nvlink)
    else:
        seconds = seconds / profile.link_ici
    moe_layers = stage_layers * (model.layers - model.moe.dense_layers) / model.layers
    step = np.where(crosses, profile.latency_nic, profile.latency)
    latency = np.maximum(EP - 1, 0) * step  # one message to each other chip of the group
    return moe_layers * (4 + 2 * remat_forward) * (seconds + latency)


def context_exchange(e, profile, stage_layers, remat_forward):
    """One microbatch's context-parallel traffic on a stage (MODEL.md §D.3): what the ring does not
    hide under the attention, or all of the all-gather's or Ulysses', forward, about twice backward,
    again under full recompute: the layer's forward CP time (``LayerTimes.cp``) over m
    microbatches."""
    if np.all(np.asarray(e.layout.cp) == 1):
        return 0.0
    efficiency = profile.link_ici if not e.chip.is_gpu else profile.link_nvlink
    return stage_layers * (3 + remat_forward) * e.layer.cp[0] / e.microbatches / efficiency


def under_pairs(e, all_to_all, context, forward, backward, remat_forward, rest_forward):
    """What of one microbatch's expert all-to-alls and CP exchange hides under a paired pass
    (MODEL.md §B.6), each [s]: in a pair of one microbatch's forward and another's backward, the
    forward's traffic hides under the backward's compute and the backward's under the forward's,
    up to that compute, on the share of the passes that are paired: DualPipe's pairs hide both,
    Megatron-LM's combined 1F1B (``ep_overlap``) the all-to-alls alone. The forward's share is 2
    of an MoE layer's 4 + 2r all-to-alls (r the recompute) and 1 of the 3 + r CP exchanges.

    Returns
    -------
    hidden : tuple of two np.ndarray
        The all-to-alls' and the exchange's seconds that hide [s].
    """
    Z, m, v = e.z, e.microbatches, e.layout.virtual_stages
    both = paired_share(schedule=e.layout.schedule, stages=Z, microbatches=m)
    combined = combined_share(stages=Z, microbatches=m, virtual_stages=v) * e.layout.ep_overlap
    a_share, c_share = np.maximum(both, combined), both
    a_ahead = all_to_all * 2 / (4 + 2 * remat_forward)
    c_ahead = context / (3 + remat_forward + rest_forward)
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
    torchtitan's reduce dtype and MaxText's), weights in bf16."""
    chip, X, Y, P = e.chip, e.x, e.y, e.pods
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

    reduce = over_x(shard, rounds=2)
    # The gradients of the stage's first layer come last, with no compute left to hide under:
    # at least that layer's reduction sticks out (MODEL.md §C.2).
    last = over_x(shard / stage_layers, rounds=2)
    sharded = np.asarray(e.zero) == 3
    dp = np.where(sharded, 0.0, np.maximum(last, reduce - profile.o_dp * backward_last))
    # ZeRO-3: per layer and microbatch, gather the bf16 weights forward and again backward, and
    # reduce-scatter the gradients in the stack's dtype; a step's first gather and last scatter
    # have nothing to hide under.
    gather, scatter = over_x(psi_layer / Y * 2), over_x(psi_layer / Y * grad_bytes)
    traffic = 2 * gather + scatter
    per_layer = m * stage_layers * np.maximum(0.0, traffic - profile.o_dp * layer_matmul)
    fsdp = np.where(sharded, per_layer + gather + scatter, 0.0)
    # across pods, a tree of log2(P) exchanges of the shard; the first layer's share sticks out
    exchange = shard / X / (chip.dcn_bw * profile.link_dcn)
    over_pods = np.log2(P) * (exchange + profile.latency)
    last_pods = np.log2(P) * (exchange / stage_layers + profile.latency)
    dcn = np.maximum(last_pods, over_pods - profile.o_dcn * backward_last)
    return {"dp_exposed": dp, "fsdp_exposed": fsdp, "dcn_exposed": dcn}
