"""The predicted step time (MODEL.md §C.1, §C.2): one microbatch on the busiest stage, then a step.

Per layer and microbatch of b = B/(X·P·m) tokens on a chip:
- matmuls: 2·b·Ψ_layer/Y FLOPs forward plus the attention scores 4·b·s·N_h·H·c/Y (c = 1/2,
  causal), twice that backward, and the recomputed forward; at C·e_mm(g), where
  e_mm(g) = e_max·g/(g + g_half) and g = 2·b·D·F/Y is the FLOPs of the layer's typical GEMM;
- memory-bound work: κ·b·D bytes per pass (÷ Y under sequence parallelism) at HBM bandwidth;
  without flash attention also the scores, κ_s·b·s·N_h/Y bytes per pass (softmax, mask and
  dropout of the full s x s matrix, computed whole: no causal saving);
- TP collectives: two all-reduces of b·D·2 bytes a pass (two more under full recompute), each
  2·(Y − 1)/Y·bytes/(W_Y·e_link) + 2·log2(Y)·λ (a latency per step of a tree); they hide
  under at most o_tp of the layer's matmuls, and what is left is on the critical path.
The last stage also runs the output layer, 6·b·D·V/Y FLOPs. Activations cross each stage
boundary, b·D·2 bytes each way, each of the Y chips sending its 1/Y (scatter/gather).

A step is (m + (Z − 1)/v)·T_mb plus what sticks out of the last backward pass: the gradient
reduction over X (ZeRO 0-2) and over the pods, the ZeRO-3 gathers and scatters of every layer and
microbatch beyond that layer's compute, and the optimizer's pass over its state at HBM bandwidth.
Across pods the gradient shard is reduced in a tree over the data-center network: each doubling
of the pods adds one exchange of the shard, log2(P)·shard/(W_dcn·e_dcn), of which o_dcn hides.
Last, a synchronous step waits for the slowest of its N chips: if one chip's step varies by a
share σ, the slowest of N is late by about σ·sqrt(2·ln N) of the step ("stragglers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..transformer.experts import ep_of_data, folds_over_tp, in_node, mlp_tp_share, routed_params
from .collectives import collective_time, crosses_nodes, group_bandwidth, link_efficiency
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
    "stragglers",
)


def matmul_efficiency(*, gemm_flops: ArrayLike, e_max: float, g_half: float) -> float | np.ndarray:
    """e_mm(g) = e_max·g/(g + g_half): small GEMMs (high TP, tiny microbatches) run less well.

    Parameters
    ----------
    gemm_flops : g, the per-chip FLOPs of the GEMM [FLOP]
    e_max, g_half : the profile's efficiency of large GEMMs, and the g that reaches half of it
        [FLOP]

    Returns
    -------
    efficiency : float or np.ndarray
        The share of the chip's peak the GEMM runs at.

    Examples
    --------
    >>> matmul_efficiency(gemm_flops=[1e8, 1e9, 1e12], e_max=0.8, g_half=1e9).round(3)
    array([0.073, 0.4  , 0.799])
    """
    g = np.asarray(gemm_flops, dtype=float)
    return e_max * g / (g + g_half)


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
    s = e.seq_len or 1
    b = e.batch / (X * P * m)  # tokens of one microbatch on one data replica
    l = busiest_stage_layers(layers=L, stages=Z, virtual_stages=v)  # noqa: E741 - the busiest stage's layers
    sp = np.where(np.asarray(layout.sequence_parallel) & (Y > 1), Y, 1)
    layer_matmul, head_matmul, backward_last = _matmuls(
        e, profile, b, remat_forward, attention_forward, rest_forward
    )
    passes = 3 + remat_forward
    scores = 0.0 if profile.flash_attention else profile.kappa_scores * b * s * model.heads / Y
    layer_memory = (
        profile.kappa * b * D / sp * passes + scores * (passes + attention_forward)
    ) / chip.hbm_bw
    layer_tp = _tp_exposed(e, profile, b, remat_forward, layer_matmul, rest_forward)
    boundary = chip.scaleout_bw if chip.is_gpu else chip.ici_bw
    stage_to_stage = np.where(Z > 1, v * 2 * (2 * b * D / Y) / boundary, 0.0)
    t_mb = l * (layer_matmul + layer_memory + layer_tp) + head_matmul + stage_to_stage
    # experts that live on other EP chips: of a chip's TP share, all but 1/e (MODEL.md §D.2)
    elsewhere = routed_params(model) * (1 - 1 / ep_of_data(layout.ep, Y, layout.etp))
    psi_layer = (
        e.params.mlp - elsewhere + e.params.attention
    ) / L  # the weights a chip's layer holds: FSDP's
    data = _data_parallel(e, profile, psi_layer, l, m, layer_matmul, l * backward_last, elsewhere)
    terms = {
        "matmul": m * (l * layer_matmul + head_matmul),
        "memory_bound": m * l * layer_memory,
        "tp_exposed": m * l * layer_tp,
        "stage_to_stage": m * stage_to_stage,
        "bubble": (Z - 1) / v * t_mb,
        **data,
        "ep_exposed": m * _all_to_alls(e, profile, l, remat_forward),
        "cp_exposed": m * _context(e, profile, l, remat_forward + rest_forward),
        "optimizer": 2 * (e.memory.params + e.memory.grads + e.memory.optimizer) / chip.hbm_bw,
    }
    terms["stragglers"] = profile.jitter * np.sqrt(2 * np.log(e.chips)) * sum(terms.values())
    # Every term in the shape of all of them: a knob given as a list of one name still makes an
    # array.
    shape = np.broadcast_shapes(np.shape(e.step_time), *(np.shape(t) for t in terms.values()))
    return {k: np.broadcast_to(np.asarray(t, dtype=float), shape) for k, t in terms.items()}


def _matmuls(e, profile, b, remat_forward, attention_forward, rest_forward=0.0):
    """One layer's matmuls on a chip for a microbatch of b tokens, recompute included; the output
    layer's; and one layer's backward pass without recompute (what the reductions hide under) [s].

    A layer's matmuls are the MLP a token goes through (a MoE layer's k + S experts, MODEL.md §D.1)
    and the rest, attention scores included. Current MoE kernels (grouped GEMMs: MegaBlocks,
    megablox) run the routed experts as one GEMM of b·k tokens by F_e, not E small ones: its size
    sets their efficiency."""
    chip, model, Y = e.chip, e.model, e.y
    D, L, s = model.d_model, model.layers, e.seq_len or 1
    # unfused attention computes every score
    causal = 0.5 if profile.flash_attention and model.causal else 1.0
    attention = 4 * b * s * model.heads * model.head_dim * causal / Y
    forward_mlp = 2 * b * e.params.mlp_used / L / Y * model.padded_work
    forward_rest = 2 * b * e.params.attention / L / Y + attention
    e_mm = matmul_efficiency(
        gemm_flops=2 * b * D * model.d_ff / Y, e_max=profile.e_max, g_half=profile.g_half
    )
    e_mlp = (
        e_mm
        if model.moe is None
        else matmul_efficiency(
            gemm_flops=2 * b * model.moe.top_k * D * model.moe.d_ff / Y,
            e_max=profile.e_max,
            g_half=profile.g_half,
        )
    )
    recomputed_rest = (remat_forward + rest_forward) * forward_rest + attention_forward * attention
    layer = (
        (3 * forward_rest + recomputed_rest) / e_mm + (3 + remat_forward) * forward_mlp / e_mlp
    ) / chip.flops
    head = 6 * b * D * model.vocab / Y / (chip.flops * e_mm)  # the output layer, on the last stage
    backward = 2 * (forward_rest / e_mm + forward_mlp / e_mlp) / chip.flops
    return layer, head, backward


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
        bandwidth=group_bandwidth(chip, e.my, crosses),
        efficiency=link_efficiency(chip, profile, e.my, crosses),
        latency=profile.latency,
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
    if chip.is_gpu:  # the group's own tier: NVLink while it fits in a node, else the NIC
        crosses = EP > in_node(chip, EP, e.y, folds_over_tp(e.layout.etp, e.y))
        seconds = seconds / np.where(crosses, profile.link_nic, profile.link_nvlink)
    else:
        seconds = seconds / profile.link_ici
    moe_layers = stage_layers * (model.layers - model.moe.dense_layers) / model.layers
    latency = (EP > 1) * profile.latency * np.log2(np.maximum(EP, 1))
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
    """The reductions over X and the pods, and ZeRO-3's per-layer traffic, beyond what hides."""
    chip, X, Y, P = e.chip, e.x, e.y, e.pods
    x_crosses = crosses_nodes(chip, X, Y) if chip.is_gpu else False
    W_x = group_bandwidth(chip, e.mx, x_crosses)
    link_x = link_efficiency(chip, profile, e.mx, x_crosses)
    # a replica's bf16 gradients
    shard = (e.params.total - elsewhere) / (Y * e.model.layers / stage_layers) * 2
    sharded = np.asarray(e.zero) == 3
    reduce = collective_time(
        nbytes=shard, group=X, bandwidth=W_x, efficiency=link_x, latency=profile.latency
    )
    dp = np.where(sharded, 0.0, np.maximum(0.0, reduce - profile.o_dp * backward_last))
    # ZeRO-3: per layer and microbatch, gather the weights forward and again backward, scatter the
    # grads.
    layer_bytes = psi_layer / Y * 2
    gather = collective_time(
        nbytes=layer_bytes,
        group=X,
        bandwidth=W_x,
        efficiency=link_x,
        latency=profile.latency,
        kind="all-gather",
    )
    fsdp = np.where(
        sharded, m * stage_layers * np.maximum(0.0, 3 * gather - profile.o_dp * layer_matmul), 0.0
    )
    over_pods = np.log2(P) * (shard / X / (chip.dcn_bw * profile.link_dcn) + profile.latency)
    dcn = np.maximum(0.0, over_pods - profile.o_dcn * backward_last)
    return {"dp_exposed": dp, "fsdp_exposed": fsdp, "dcn_exposed": dcn}
