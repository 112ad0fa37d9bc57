"""What a chip holds of its stage between the passes (MODEL.md §E.1): its weights, gradients
and optimizer state at the bytes its stack keeps, what ZeRO shards of them, the communication
buffers beside them (ZeRO-3's gathered units, gradient buckets, torch DDP's copies, Megatron's
scores buffer), and what the optimizer step holds of its own.

``peak.py`` adds to it what a pass holds at its busiest.
"""

from __future__ import annotations

import numpy as np

from ..schedules import ends_together, weight_copies
from ..transformer.experts import ep_of_data, routed_params


def stage_state(workload, layout, placed, pods, params, profile, stage, fp8=False) -> tuple:
    """Weights, gradients, optimizer state and communication buffers of a stage, per chip.

    The stage's parameters (its layers, twice under DualPipe, and its embeddings: the input's on
    the first stage, the output layer's and the MTP modules on the last, both on a single stage or
    on the first device of a V-shaped or two-way schedule) over TP, routed experts over EP too
    (whole where EP folds over TP), and over X (X/e for experts, e = EP over its share of TP) what
    the ZeRO stage shards: from 1 the optimizer state, from 2 the
    gradients, at 3 the weights; at the bytes the stack keeps (the precision's where it says 0).
    With fp8 matmuls the layers' weights are also held cast to fp8, a byte each: the stage's
    (cast once a step, kept across its microbatches), or under ZeRO-3 the layer gathered
    (MODEL.md §F.4). Accumulating unsharded (FSDP's no_sync), the stage's whole gradients in the
    compute dtype are there too.

    Parameters
    ----------
    workload : Workload
        The model, its precision and the tokens of a step.
    layout : Layout
        The layout: ZeRO stage, schedule, EP and the pods FSDP spans.
    placed : Placement
        X, Y and Z as placed on the slice.
    pods : int or np.ndarray
        P, the pods the data axis spans.
    params : ParamCount
        The model's parameters: in all, in the embeddings, routed, in the MTP modules.
    profile : Profile
        The bytes and buffers the stack keeps (MODEL.md §E.2).
    stage : tuple
        (index, layers, last): the device's stage, its layers and the last stage's index.
    fp8 : bool, default False
        Whether the matmuls run in fp8, the weights held cast beside them.

    Returns
    -------
    state : dict of str to np.ndarray
        "weights", "grads", "optimizer" and "buffers" per chip [bytes].
    step : dict
        What the optimizer step holds (``_step``) and the weights' all-gather after it,
        "gather" [bytes].

    References
    ----------
    .. [1] docs/MODEL.md §E.1 (what the peak holds), §E.2 (stacks), §B.3 (ZeRO stages) and
       §F.4 (fp8).
    """
    model, precision = workload.model, workload.precision
    X, Y, Z, zero = placed.x, placed.y, placed.z, layout.zero
    shards = X * np.asarray(layout.fsdp_pods)  # ZeRO's group: X, across F pods (MODEL.md §B.9)
    weight_bytes = profile.weight_bytes or precision.weight_bytes
    grad_bytes = profile.grad_bytes or max(precision.grad_bytes, weight_bytes)
    # Adam's two moments, counted as fp32 in either, at the bytes they are kept in (§E.4)
    optimizer_bytes = (profile.optimizer_bytes or precision.optimizer_bytes) - 2 * (
        4.0 - profile.moment_bytes
    )
    index, layers, last = stage
    routed, embedding = routed_params(model), float(model.vocab * model.d_model)
    # an end's device holds its embeddings; one stage, or a V's or DualPipe's first device, both
    ends = np.where((Z == 1) | ends_together(layout.schedule), params.embeddings, embedding)
    holds_end = (index == 0) | (index == last)
    stage_embedding = np.where(holds_end, ends, 0.0)
    layers = layers * weight_copies(layout.schedule)  # DualPipe: a stage of each direction
    layer = (params.total - params.embeddings - routed) / model.layers  # on every EP chip
    e = ep_of_data(layout.ep, Y, layout.etp)  # EP over its share of TP (MODEL.md §D.2)
    split = e * layout.ep_pods  # the experts split over the group in all its pods (§B.12)
    layer_routed = routed / model.layers / split

    # the MTP modules, on the output layer's stage (MODEL.md §D.1)
    mtp, mtp_routed = (
        np.where(index == last, n, 0.0)
        for n in (params.mtp - params.mtp_routed, params.mtp_routed / split)
    )

    def over_x(first_stage):
        sharded = np.asarray(zero) >= first_stage
        return (
            (layer * layers + stage_embedding + mtp) / np.where(sharded, shards, 1)
            + (layer_routed * layers + mtp_routed) / np.where(sharded, shards / e, 1)
        ) / Y

    layer_unit = _gathered(model, profile, layer + layer_routed, split) / Y  # ZeRO-3's unit
    unit = np.maximum(layer_unit, embedding / Y)  # or the output layer
    gathered = _at_once(profile, precision.activation_bytes, grad_bytes, layer_unit, embedding / Y)
    bucket = np.where(X * pods > 1, profile.bucket_bytes, 0.0)
    fsdp = profile.pipeline_unsharded  # PyTorch FSDP: its ZeRO-2 is ZeRO-3 not resharded
    if fsdp:  # the whole stage gathered from its forward on, its gradients unsharded under PP
        stage = ((layer + layer_routed) * layers + stage_embedding) / Y
        held = (precision.activation_bytes + grad_bytes * (Z > 1)) * stage
        gathered = np.where(Z > 1, held, gathered)
        bucket = np.where((np.asarray(zero) == 2) & (X > 1), held, bucket)
    buffers = np.where(np.asarray(zero) == 3, np.where(shards > 1, gathered, 0.0), bucket)
    buffers = buffers + _ddp_buckets(profile, zero, X * pods, weight_bytes * over_x(1))
    buffers = buffers + _scores_buffer(workload, layout, profile, placed, pods)
    cast = np.where(np.asarray(zero) == 3, unit, (layer + layer_routed) * layers / Y) * float(fp8)
    unsharded = np.where(
        _accumulating(profile, zero, placed), precision.activation_bytes * over_x(4), 0.0
    )
    state = dict(
        weights=weight_bytes * over_x(2 if fsdp else 3) + cast,
        grads=grad_bytes * over_x(2) + unsharded,
        optimizer=optimizer_bytes * over_x(1),
        buffers=buffers,
    )
    gather = _step_gather(profile, zero, X * pods, over_x(4), weight_bytes * over_x(1))
    return state, {**_step(profile, grad_bytes, over_x(1), state["grads"]), "gather": gather}


def _at_once(profile, A, G, layer, output):
    """What ZeRO-3 holds gathered at once [bytes]: ``profile.gathered_units`` units (one
    computing, the next prefetched) in the compute dtype, A bytes a parameter, and the gradients
    of the one computing at G, while they are reduce-scattered. A unit is a layer (or, under XLA,
    its largest weight) of ``layer`` parameters, and once in the step the output layer, of
    ``output``: the output layer then computes with the layers next to it prefetched, not
    another output layer (MODEL.md §E.1)."""
    n = profile.gathered_units
    with_output = A * (output + (n - 1) * layer) + G * output
    return np.maximum((n * A + G) * layer, with_output)


def _ddp_buckets(profile, zero, replicas, stage_weights):
    """torch DDP's buckets, which wrap a stack's model without ZeRO over more than one data
    replica (across pods too): without ``gradient_as_bucket_view`` they copy every gradient, in
    the weights' dtype, the bytes of the stage's weights (``Profile.ddp_buckets``; nanotron's
    ``make_ddp``; MODEL.md §E.1) [bytes]."""
    ddp = profile.ddp_buckets & (np.asarray(zero) == 0) & (replicas > 1)
    return np.where(ddp, stage_weights, 0.0)


def _scores_buffer(workload, layout, profile, placed, pods):
    """Megatron's attention without flash: one layer's scores of a microbatch, b·N_h/TP·s² at
    the activations' bytes, in its global memory buffer all step (``Profile.scores_buffer``;
    MODEL.md §E.1) [bytes]."""
    if not profile.scores_buffer or profile.flash_attention:
        return 0.0
    tokens = workload.batch / (placed.x * pods * placed.microbatches)
    seq = (workload.seq_len or 1) / layout.cp
    return workload.precision.activation_bytes * workload.model.heads * seq / placed.y * tokens


def _accumulating(profile, zero, placed):
    """Where FSDP's no_sync holds the stage's whole gradients, in the compute dtype, beside the
    shard's: from a step's second microbatch on, where ZeRO shards the gradients (torch FSDP1's
    no_sync "will accumulate the full model gradients (instead of gradient shards)"; MODEL.md
    §E.1). Under pipelining the stage accumulates unsharded anyway (``pipeline_unsharded``)."""
    pipelined = profile.pipeline_unsharded & (np.asarray(placed.z) > 1)
    many = np.asarray(placed.microbatches) > 1
    return profile.accumulate_unsharded & (np.asarray(zero) >= 2) & many & ~pipelined


def _step_gather(profile, zero, replicas, stage, shard_weights):
    """After Adam, ZeRO-1 and 2 all-gather the updated weights over the data replicas: a stack
    that gathers through flattened copies holds ``Profile.step_gather_bytes`` a parameter of the
    stage, and its own shard flattened (nanotron's ``all_gather_coalesced``: the output list
    flattened, and NCCL's flat output for a list; MODEL.md §E.1) [bytes]."""
    gathers = (profile.step_gather_bytes > 0) & np.isin(zero, (1, 2)) & (replicas > 1)
    return np.where(gathers, profile.step_gather_bytes * stage + shard_weights, 0.0)


def _step(profile, grad_bytes, shard, held) -> dict:
    """At the optimizer step (MODEL.md §E.1): the gradients it keeps, the shard's (``shard``
    parameters; DeepSpeed's ZeRO frees the others first) or all it ``held`` (Megatron-LM's
    gradient buffer persists, ``step_keeps_grads``); the fp32 copy the stack's optimizer makes of
    the shard's where they are held below its ``step_grad_bytes`` (none of fp32 gradients:
    ``.float()`` returns the tensor; without ZeRO the shard is the stage, Megatron-LM's
    ``optimizer.py``, ``_copy_model_grads_to_main_grads``: "main_param.grad =
    model_param.grad.float()"); and foreach AdamW's √v, a moment's bytes a parameter
    (pytorch/pytorch v2.5.0 ``torch/optim/adam.py``, ``_multi_tensor_adam``: "exp_avg_sq_sqrt =
    torch._foreach_sqrt(device_exp_avg_sqs)") [bytes]."""
    copy = np.where(grad_bytes < profile.step_grad_bytes, profile.step_grad_bytes * shard, 0.0)
    temp = np.asarray(float(profile.adam_foreach) * profile.moment_bytes * shard)
    keeps = profile.step_keeps_grads
    return dict(grads=held if keeps else grad_bytes * shard, copy=copy, temp=temp, keeps=keeps)


def _gathered(model, profile, layer, e):
    """ZeRO-3's unit of gathering [parameters]: a layer, as PyTorch's FSDP wraps each block, or
    under XLA (``profile.gathered`` "weight") the largest weight of a layer, each gathered just
    before the matmul that reads it: a projection D·N_h·H, the MLP's D·F, or one of the experts'
    three weights over the E/e experts a chip holds (MODEL.md §E.1)."""
    if profile.gathered == "layer":
        return layer
    D = model.d_model
    weights = [D * model.heads * model.head_dim, D * model.d_ff]
    if model.moe is not None:
        weights.append(model.moe.experts / e * D * model.moe.d_ff)
    return np.maximum.reduce(np.broadcast_arrays(*map(np.asarray, weights)))
