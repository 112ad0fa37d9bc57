"""The predicted step time (MODEL.md §C.1, §C.2, §F): one microbatch on the busiest stage, then a
step, with the chip's measured physics and the stack's behaviour (``Profile``).

Per layer and microbatch of b = B/(X·P·m) tokens on a chip:
- matmuls: 2·b·Ψ_layer/Y FLOPs forward, twice that backward, and the recomputed forward, at
  C·k·e_mm(g), where e_mm(g) = e_max·g/(g + g_half) is the chip's GEMM curve, g = 2·b·D·F/Y the
  FLOPs of the layer's typical GEMM and k the share of it the stack's kernels reach; in fp8 the
  layers' linear matmuls run at C_fp8·k·e_fp8(g) instead, the output layer staying in bf16;
- attention scores and values, 4·b·s·N_h·H·c/Y FLOPs forward (c = 1/2, causal): fused, at the
  chip's attention curve for the keys a query sees (s·c) and the head dimension, the backward
  pass at its own share; without flash attention at the GEMM curve;
- memory-bound work: κ·b·D bytes per pass (÷ Y under sequence parallelism) at the HBM bandwidth
  memory-bound kernels reach; without flash attention also the scores, κ_s·b·s·N_h/Y bytes per
  pass (softmax, mask and dropout of the full s x s matrix, computed whole: no causal saving);
- TP collectives: two all-reduces of b·D·2 bytes a pass (two more under full recompute), each
  2·(Y − 1)·(bytes/(Y·W_Y·e_link) + λ) (a ring's steps, each a latency); they hide
  under at most o_tp of the layer's matmuls, and what is left is on the critical path;
- the stack's fixed cost per layer and pass (launches the host cannot queue ahead).
The last stage also runs the output layer, 6·b·D·V/Y FLOPs, and the loss over its b·V/Y logits,
about 2 + 2·(the stack's bytes a logit) bytes each at HBM bandwidth. Activations cross each stage
boundary, b·D·2 bytes each way, each of the Y chips sending its 1/Y (scatter/gather).

A step is (m + (Z − 1)/v)·T_mb plus what sticks out of the last backward pass: the gradient
reduction over X (ZeRO 0-2) and over the pods, the ZeRO-3 gathers and scatters of every layer and
microbatch beyond that layer's compute, the optimizer's pass over its state at HBM bandwidth, and
the stack's fixed cost per step. Across pods the gradient shard is reduced in a tree over the
data-center network: each doubling of the pods adds one exchange of the shard,
log2(P)·shard/(W_dcn·e_dcn), of which o_dcn hides. Whatever hides, the first layer's reduction
and ZeRO-3's first gather and last scatter stick out. Last, the step waits for the slowest of
its N chips: the matmuls take σ·z(N) longer, σ the spread of identical chips' speed and z(N) the
largest of N normal draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..transformer.experts import ep_of_data, folds_over_tp, in_node, mlp_tp_share, routed_params
from .collectives import (
    collective_time,
    crosses_nodes,
    group_bandwidth,
    link_efficiency,
    ring_costs,
)
from .physics import attention_efficiency, matmul_efficiency, slowest_of
from .pipeline import busiest_stage_layers
from .profiles import Profile

if TYPE_CHECKING:
    from ..result import Estimate

TERMS = (
    "matmul",
    "memory_bound",
    "tp_exposed",
    "stage_to_stage",
    "bubble",
    "dp_exposed",
    "fsdp_exposed",
    "dcn_exposed",
    "ep_exposed",
    "cp_exposed",
    "optimizer",
    "overhead",
    "slowest_chip",
)


# What torch.compile's fused kernels still move of a layer's eager memory-bound bytes (MODEL.md
# §F.5), counted on a Llama 3 layer's forward pass: eager PyTorch runs the fp32 norms op by op, the
# rotary embedding, the SwiGLU and the residual adds, about 150 bytes a token per unit of d_model;
# Inductor fuses each chain of pointwise work into one kernel that reads its inputs and writes its
# outputs once, about 50.
COMPILED_SHARE = 1 / 3


def predict(
    *,
    e: Estimate,
    profile: Profile,
    remat_forward: float | np.ndarray,
    attention_forward: float | np.ndarray,
    rest_forward: float | np.ndarray = 0.0,
) -> dict[str, np.ndarray]:
    """The step's terms [s] (MODEL.md §C.5) for an estimate's placement: the step is their sum.

    ``remat_forward`` is the share of the forward pass recomputed (1 full, 0 none),
    ``attention_forward`` whether the attention core is recomputed (selective), and
    ``rest_forward`` whether everything but the MLP is (the chapter's checkpoints keep only the
    MLP's matmul outputs: the attention block is run again from the layer's input).

    Returns
    -------
    terms : dict of str to np.ndarray
        Each of ``TERMS`` by name, all in one shape [s]; the step is their sum.
    """
    chip, model, layout = e.chip, e.model, e.layout
    X, Y, Z, P, m, v = e.x, e.y, e.z, e.pods, e.microbatches, layout.virtual_stages
    D, L = model.d_model, model.layers
    b = e.batch / (X * P * m)  # tokens of one microbatch on one data replica
    l = busiest_stage_layers(layers=L, stages=Z, virtual_stages=v)  # noqa: E741 - the busiest stage's layers
    layer_matmul, head_matmul, backward_last = _matmuls(
        e, profile, b, remat_forward, attention_forward, rest_forward
    )
    layer_memory = _layer_traffic(e, profile, b, remat_forward, attention_forward) / (
        chip.hbm_bw * profile.hbm_efficiency
    )
    layer_tp = _tp_exposed(e, profile, b, remat_forward, layer_matmul, rest_forward)
    layer_fixed = profile.layer_overhead * (2 + remat_forward)  # forward, backward, recompute
    boundary = chip.scaleout_bw if chip.is_gpu else chip.ici_bw
    stage_to_stage = np.where(Z > 1, v * 2 * (2 * b * D / Y) / boundary, 0.0)
    head_memory = _loss_traffic(e, profile, b) / (chip.hbm_bw * profile.hbm_efficiency)
    head = head_matmul + head_memory  # the output layer and the loss, on the last stage
    t_mb = l * (layer_matmul + layer_memory + layer_tp + layer_fixed) + head + stage_to_stage
    # experts that live on other EP chips: of a chip's TP share, all but 1/e (MODEL.md §D.2)
    elsewhere = routed_params(model) * (1 - 1 / ep_of_data(layout.ep, Y, layout.etp))
    psi_layer = (
        e.params.mlp - elsewhere + e.params.attention
    ) / L  # the weights a chip's layer holds: FSDP's
    data = _data_parallel(e, profile, psi_layer, l, m, layer_matmul, l * backward_last, elsewhere)
    terms = {
        "matmul": m * (l * layer_matmul + head_matmul),
        "memory_bound": m * (l * layer_memory + head_memory),
        "tp_exposed": m * l * layer_tp,
        "stage_to_stage": m * stage_to_stage,
        "bubble": e.bubble * m * t_mb,  # the schedule's idle over the stage's m microbatches
        **data,
        "ep_exposed": m * _all_to_alls(e, profile, l, remat_forward),
        "cp_exposed": m * _context(e, profile, l, remat_forward + rest_forward),
        "optimizer": 2
        * (e.memory.params + e.memory.grads + e.memory.optimizer)
        / (chip.hbm_bw * profile.hbm_efficiency),
        "overhead": m * l * layer_fixed + profile.step_overhead,
        # identical chips differ in speed, and every step waits for the slowest of the job's
        # (MODEL.md §F.1): its matmuls lag by the chips' spread times the slowest's draw
        "slowest_chip": profile.speed_spread
        * slowest_of(e.chips)
        * m
        * (l * layer_matmul + head_matmul),
    }
    # Every term in the shape of all of them: a knob given as a list of one name still makes an
    # array.
    shape = np.broadcast_shapes(np.shape(e.step_time), *(np.shape(t) for t in terms.values()))
    return {k: np.broadcast_to(np.asarray(t, dtype=float), shape) for k, t in terms.items()}


def _matmuls(e, profile, b, remat_forward, attention_forward, rest_forward=0.0):
    """One layer's matmuls on a chip for a microbatch of b tokens, recompute included; the output
    layer's; and one layer's backward pass without recompute (what the reductions hide under) [s].

    A layer's matmuls are the MLP a token goes through (a MoE layer's k + S experts, MODEL.md §D.1),
    the attention block's projections, and the attention core (fused: at the chip's attention
    curve, MODEL.md §F.1). Current MoE kernels (grouped GEMMs: MegaBlocks, megablox) run the routed
    experts as one GEMM of b·k tokens by F_e, not E small ones: its size sets their efficiency."""
    chip, model, Y = e.chip, e.model, e.y
    D, L, s = model.d_model, model.layers, e.seq_len or 1
    share = profile.kernel_share  # of the microbenchmarks' rates, in training
    # fused attention skips the masked half of the scores; unfused computes every one
    causal = 0.5 if profile.flash_attention and model.causal else 1.0
    attention = 4 * b * s * model.heads * model.head_dim * causal / Y
    forward_mlp = 2 * b * e.params.mlp_used / L / Y * model.padded_work
    forward_dense = 2 * b * e.params.attention / L / Y
    typical = 2 * b * D * model.d_ff / Y  # the FLOPs of the layer's typical GEMM
    e_bf16 = share * _gemm(profile, typical)  # what stays in bf16: unfused attention, the head
    fp8 = e.options.matmul_dtype == "fp8"
    e_mm = share * _linear(profile, chip, typical, fp8)
    e_mlp = (
        e_mm
        if model.moe is None
        else share * _linear(profile, chip, 2 * b * model.moe.top_k * D * model.moe.d_ff / Y, fp8)
    )
    e_att, e_att_back = e_bf16, e_bf16  # unfused: batched GEMMs
    if profile.flash_attention:
        e_att = share * attention_efficiency(
            keys=s * causal,
            head_dim=model.head_dim,
            attention_max=profile.attention_max,
            attention_half=profile.attention_half,
            attention_head_half=profile.attention_head_half,
        )
        e_att_back = e_att * profile.attention_backward
    forward_rest = forward_dense / e_mm + attention / e_att  # [FLOP per unit of the peak]
    forward = forward_rest + forward_mlp / e_mlp
    backward = 2 * (forward_dense / e_mm + attention / e_att_back + forward_mlp / e_mlp)
    recomputed = (
        (remat_forward + rest_forward) * forward_rest
        + attention_forward * attention / e_att
        + remat_forward * forward_mlp / e_mlp
    )
    layer = (forward + backward + recomputed) / chip.flops
    head = 6 * b * D * model.vocab / Y / (chip.flops * e_bf16)  # the output layer, last stage
    return layer, head, backward / chip.flops


def _gemm(profile, gemm_flops):
    """The chip's bf16 GEMM curve at a GEMM of ``gemm_flops`` (MODEL.md §F.1)."""
    return matmul_efficiency(gemm_flops=gemm_flops, e_max=profile.e_max, g_half=profile.g_half)


def _linear(profile, chip, gemm_flops, fp8: bool):
    """A linear layer's GEMM as a share of the bf16 peak: the bf16 curve, or in fp8 the fp8 curve
    at the fp8 peak (MODEL.md §F.4)."""
    if not fp8:
        return _gemm(profile, gemm_flops)
    e8 = matmul_efficiency(
        gemm_flops=gemm_flops, e_max=profile.e_max_fp8, g_half=profile.g_half_fp8
    )
    return chip.flops_fp8 / chip.flops * e8


def _layer_traffic(e, profile, b, remat_forward, attention_forward):
    """One layer's memory-bound bytes for a microbatch on a chip: κ·b·D a pass (÷ Y under
    sequence parallelism), compiled a third of it (MODEL.md §F.5), and without flash
    attention the scores, κ_s·b·s·N_h/Y a pass [bytes]."""
    Y, s = e.y, e.seq_len or 1
    sp = np.where(np.asarray(e.layout.sequence_parallel) & (Y > 1), Y, 1)
    passes = 3 + remat_forward
    kappa = profile.kappa * (COMPILED_SHARE if profile.torch_compile else 1.0)
    scores = 0.0 if profile.flash_attention else profile.kappa_scores * b * s * e.model.heads / Y
    return kappa * b * e.model.d_model / sp * passes + scores * (passes + attention_forward)


def _loss_traffic(e, profile, b):
    """The loss's memory-bound bytes for a microbatch on a chip, forward and backward: its b·V/Y
    logits written in bf16 and read, the stack's fp32 copies (``logits_bytes`` a logit with the
    bf16 ones) written and read again backward, and the logits' gradient written: about
    2 + 2·logits_bytes bytes a logit [bytes]."""
    return (2 + 2 * profile.logits_bytes) * b * e.model.vocab / e.y


def _tp_exposed(e, profile, b, remat_forward, layer_matmul, rest_forward=0.0):
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


def _all_to_alls(e, profile, stage_layers, remat_forward):
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


def _context(e, profile, stage_layers, remat_forward):
    """One microbatch's context-parallel traffic on a stage (MODEL.md §D.3): what the ring does not
    hide under the attention, or all of the all-gather's or Ulysses', forward, about twice backward,
    again under full recompute: the layer's forward CP time (``LayerTimes.cp``) over m
    microbatches."""
    if np.all(np.asarray(e.layout.cp) == 1):
        return 0.0
    efficiency = profile.link_ici if not e.chip.is_gpu else profile.link_nvlink
    return stage_layers * (3 + remat_forward) * e.layer.cp[0] / e.microbatches / efficiency


def _data_parallel(
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
