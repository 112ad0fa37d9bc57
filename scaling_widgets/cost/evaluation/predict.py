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

A step is m·(1 + the schedule's bubble)·T_mb (``schedules/``) plus what sticks out of the last
backward pass: the gradient reduction over X (ZeRO 0-2) and over the pods, the ZeRO-3 gathers and
scatters of every layer and microbatch beyond that layer's compute, the optimizer's pass over its
state at HBM bandwidth, and the stack's fixed cost per step. Across pods the gradient shard is
reduced in a tree over the data-center network: each doubling of the pods adds one exchange of the
shard, log2(P)·shard/(W_dcn·e_dcn), of which o_dcn hides. Whatever hides, the first layer's
reduction and ZeRO-3's first gather and last scatter stick out. Last, the step waits for the
slowest of its N chips: the matmuls take σ·z(N) longer, σ the spread of identical chips' speed and
z(N) the largest of N normal draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..step.exposed import all_to_alls, context_exchange, data_parallel, tp_exposed, under_pairs
from ..step.physics import attention_efficiency, matmul_efficiency, slowest_of
from ..step.pipeline import layout_split, stage_layers
from ..step.profiles import Profile, hidden_share
from ..transformer.experts import ep_of_data, routed_params

if TYPE_CHECKING:
    from ..transformer.recompute import Rerun
    from .result import Estimate

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
    rerun: Rerun,
) -> dict[str, np.ndarray]:
    """The step's terms [s] (MODEL.md §C.5) for an estimate's placement: the step is their sum.

    ``rerun`` holds the shares of a layer's forward work its recompute policy runs again: the
    attention's projections and core, the MLP, and the rest of the layer with them.

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its placement (X, Y, Z, P, m, v), parameters, memory and bubble.
    profile : Profile
        The chip's physics and the stack's behaviour (MODEL.md §C.3, §F.1, §F.2).
    rerun : Rerun
        The shares of a layer's forward work run again (``transformer/recompute.py``), each a
        float or an array over the layouts.

    Returns
    -------
    terms : dict of str to np.ndarray
        Each of ``TERMS`` by name, all in one shape [s]; the step is their sum. Beside them,
        "ep_hidden" and "cp_hidden": the expert and context-parallel traffic the schedule's
        paired passes hide, not in the step [s].

    References
    ----------
    .. [1] docs/MODEL.md §C.1 (one microbatch on one stage), §C.2 (a step), §C.5 (what the
       step reports), §B.6 (what pairs hide) and §F (the chip's physics, the stack's
       behaviour).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.
    .. [3] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.
    """
    chip, model, layout = e.chip, e.model, e.layout
    X, Y, Z, P, m, v = e.x, e.y, e.z, e.pods, e.microbatches, layout.virtual_stages
    D, L = model.d_model, model.layers
    b = e.batch / (X * P * m)  # tokens of one microbatch on one data replica
    layer_matmul, head_matmul, backward_last = _matmuls(e, profile, b, rerun)
    layer_memory, layer_tp, layer_fixed = _layer_rest(
        e, profile, b, (layer_matmul, backward_last), rerun
    )
    head_memory = _loss_traffic(e, profile, b) / (chip.hbm_bw * profile.hbm_efficiency)
    layer = layer_matmul + layer_memory + layer_tp + layer_fixed
    l, with_head = _busiest_stage(e, layer, head_matmul + head_memory)  # noqa: E741 - its layers
    head_matmul, head_memory = head_matmul * with_head, head_memory * with_head
    boundary = _between_stages(chip, layout.pp_pods)
    stage_to_stage = np.where(Z > 1, v * 2 * (2 * b * D / Y) / boundary, 0.0)
    # an interleaved schedule's sends overlap the other virtual stages' work where the stack's
    # feature does (Megatron-LM's overlap_p2p_comm, MODEL.md §F.2): a few MB under a layer's pass
    stage_to_stage = stage_to_stage * (1 - hidden_share(profile, "p2p", 0.0) * (v > 1))
    head = head_matmul + head_memory  # the output layer and the loss, on the last stage
    t_mb = l * layer + head + stage_to_stage
    elsewhere = _routed_elsewhere(model, layout, Y)
    psi_layer = (e.params.mlp - elsewhere + e.params.attention) / L  # a chip's layer's: FSDP's
    data = data_parallel(e, profile, psi_layer, l, m, layer_matmul, l * backward_last, elsewhere)
    all_to_all = all_to_alls(e, profile, l, rerun.mlp)
    exchange = context_exchange(e, profile, l, rerun.dense)
    # a schedule's pairs hide part of them under the other pass's matmuls (forward half a backward)
    hidden = under_pairs(
        e,
        all_to_all,
        exchange,
        l * backward_last / 2,
        l * (layer_matmul - backward_last / 2),
        rerun,
    )
    terms = {
        "matmul": m * (l * layer_matmul + head_matmul),
        "memory_bound": m * (l * layer_memory + head_memory),
        "tp_exposed": m * l * layer_tp,
        "stage_to_stage": m * stage_to_stage,
        "bubble": e.bubble * m * t_mb,  # the schedule's idle over the stage's m microbatches
        **data,
        "ep_exposed": m * (all_to_all - hidden[0]),
        "cp_exposed": m * (exchange - hidden[1]),
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
    # beside the terms, what the schedule's pairs hid (MODEL.md §B.6); every term in the shape of
    # all of them: a knob given as a list of one name still makes an array
    terms |= {"ep_hidden": m * hidden[0], "cp_hidden": m * hidden[1]}
    shape = np.broadcast_shapes(np.shape(e.step_time), *(np.shape(t) for t in terms.values()))
    return {k: np.broadcast_to(np.asarray(t, dtype=float), shape) for k, t in terms.items()}


def _busiest_stage(e, layer, head) -> tuple:
    """The stage that sets the pace: its layers, and whether it runs the output layer (of time
    ``head`` [s]) beside its layers of time ``layer`` [s] each. The output layer's stage, or one
    without it that holds more layers, where the ends take a layer's place (MODEL.md §A.6)."""
    first, middle, last = stage_layers(
        layers=e.model.layers,
        stages=e.z,
        **layout_split(e.layout),
    )
    other = np.maximum(first, middle)
    with_head = last * layer + head >= other * layer
    return np.where(with_head, last, other), with_head


def _layer_rest(e, profile, b, matmuls, rerun) -> tuple:
    """A layer's passes on a microbatch of ``b`` tokens beside its matmuls [s]: its memory-bound
    work, its exposed TP traffic (against its ``matmuls``: all of them, and the backward's) and
    its fixed costs."""
    hbm = e.chip.hbm_bw * profile.hbm_efficiency
    memory = _layer_traffic(e, profile, b, rerun) / hbm
    tp = tp_exposed(e, profile, b, rerun, *matmuls)
    fixed = profile.layer_overhead * (2 + rerun.whole)  # forward, backward, recompute
    return memory, tp, fixed


def _matmuls(e, profile, b, rerun):
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
        rerun.dense * forward_dense / e_mm
        + rerun.core * attention / e_att
        + rerun.mlp * forward_mlp / e_mlp
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


def _layer_traffic(e, profile, b, rerun):
    """One layer's memory-bound bytes for a microbatch on a chip: κ·b·D a pass (÷ Y under
    sequence parallelism), compiled a third of it (MODEL.md §F.5), and without flash
    attention the scores, κ_s·b·s·N_h/Y a pass [bytes]."""
    Y, s = e.y, e.seq_len or 1
    sp = np.where(np.asarray(e.layout.sequence_parallel) & (Y > 1), Y, 1)
    passes = 3 + rerun.whole
    kappa = profile.kappa * (COMPILED_SHARE if profile.torch_compile else 1.0)
    scores = 0.0 if profile.flash_attention else profile.kappa_scores * b * s * e.model.heads / Y
    # the scores once more with the attention core, when it runs again without the whole layer
    scores_passes = passes + rerun.core * (1 - rerun.dense)
    return kappa * b * e.model.d_model / sp * passes + scores * scores_passes


def _loss_traffic(e, profile, b):
    """The loss's memory-bound bytes for a microbatch on a chip, forward and backward: its b·V/Y
    logits written in bf16 and read, the stack's fp32 copies (``logits_bytes`` a logit with the
    bf16 ones) written and read again backward, and the logits' gradient written: about
    2 + 2·logits_bytes bytes a logit [bytes]."""
    return (2 + 2 * profile.logits_bytes) * b * e.model.vocab / e.y


def _between_stages(chip, pp_pods) -> np.ndarray:
    """The link between a pipeline's stages: the NIC between a GPU cluster's nodes, ICI in a TPU
    slice, the data-center network where the pipeline spans pods (MODEL.md §B.10) [bytes/s]."""
    inside = chip.scaleout_bw if chip.is_gpu else chip.ici_bw
    return np.where(np.asarray(pp_pods) > 1, chip.dcn_bw, inside)


def _routed_elsewhere(model, layout, Y) -> float | np.ndarray:
    """The routed experts' parameters on other EP chips, of the group's other pods too: of a
    chip's TP share, all but 1/e (MODEL.md §D.2, §B.12)."""
    return routed_params(model) * (1 - 1 / (ep_of_data(layout.ep, Y, layout.etp) * layout.ep_pods))
