"""Memory per chip: weights, gradients, optimizer state, activation checkpoints (MODEL.md §A.4,
§A.10)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..ground.choices import per_choice
from ..ground.records import record
from ..schedules import in_flight_microbatches, weight_copies
from ..step.pipeline import layout_split, stage_share
from ..transformer.activations import activation_bytes_per_layer
from ..transformer.experts import dispatch_bytes, ep_of_data, routed_params
from ..transformer.kept import kept_bytes, tensor_bytes
from ..transformer.recompute import policy as policy_of

if TYPE_CHECKING:
    from ..layout.placement import Placement
    from ..values import Layout, Options, Workload


@record(eq=False)
class MemoryPerChip:
    """Bytes per chip of each kind, after sharding."""

    params: np.ndarray
    grads: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray
    overhead: np.ndarray | float = (
        0.0  # framework, collective buffers, fragmentation (MODEL.md §B.8)
    )

    def __repr__(self) -> str:
        return f"MemoryPerChip(shape={np.shape(self.total)})"

    @property
    def total(self) -> float | np.ndarray:
        return self.params + self.grads + self.optimizer + self.activations + self.overhead


def memory_per_chip(
    *,
    params: ArrayLike,
    layers: ArrayLike,
    d_model: ArrayLike,
    d_ff: ArrayLike,
    batch: ArrayLike,
    x: ArrayLike = 1,
    y: ArrayLike = 1,
    z: ArrayLike = 1,
    pods: ArrayLike = 1,
    zero: ArrayLike = 0,
    gated: ArrayLike = True,
    weight_bytes: float | np.ndarray = 2.0,
    grad_bytes: float | np.ndarray = 0.0,
    optimizer_bytes: float | np.ndarray = 8.0,
    activation_bytes: float | np.ndarray = 2.0,
) -> MemoryPerChip:
    """Bytes per chip under a layout (MODEL.md §A.4).

    Weights, gradients and optimizer state: Ψ·bytes / (Y·Z), and also / X for what the ZeRO
    stage shards over the data axis (MODEL.md §B.3): 1 the optimizer state, 2 the gradients too, 3
    the weights too (FSDP). The defaults are the chapter's 2 + 0 + 8 = 10 bytes per parameter.
    Activation checkpoints, one after each big matmul: bytes·L·B·(D + 2F)
    for a gated MLP (D + F ungated) over the batch shards (X, P), the hidden shards (Y) and the
    layer shards (Z).

    Parameters
    ----------
    params : float or array_like
        Ψ, the parameters [parameters].
    layers : float or array_like
        L, the layers [layers].
    d_model : float or array_like
        D, the model width [features].
    d_ff : float or array_like
        F, the MLP width a token goes through [features].
    batch : float or array_like
        B, the global batch [tokens].
    x : float or array_like, default 1
        X, the data (FSDP) degree [chips].
    y : float or array_like, default 1
        Y, the tensor degree [chips].
    z : float or array_like, default 1
        Z, the pipeline stages; uneven stages pass ``stage_share``'s count, L over the busiest
        stage's layers.
    pods : float or array_like, default 1
        P, the pods over the data-center network.
    zero : int or array_like, default 0
        The ZeRO stage, 0 to 3.
    gated : bool or array_like, default True
        Whether the MLP has a gate (two up-projections).
    weight_bytes : float or array_like, default 2.0
        Bytes a parameter of the weights [bytes].
    grad_bytes : float or array_like, default 0.0
        Bytes a parameter of the gradients [bytes].
    optimizer_bytes : float or array_like, default 8.0
        Bytes a parameter of the optimizer state [bytes].
    activation_bytes : float or array_like, default 2.0
        Bytes an element of an activation checkpoint [bytes].

    Returns
    -------
    memory : MemoryPerChip
        The bytes per chip of the weights, gradients, optimizer state and activations [bytes].

    References
    ----------
    .. [1] docs/MODEL.md §A.4 (memory per chip), §B.2 (precision and optimizer bytes) and §B.3
       (ZeRO stages).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP).
    .. [3] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
       Parameter Models", SC 2020.

    Examples
    --------
    >>> m = memory_per_chip(params=13e9, layers=40, d_model=5120, d_ff=13_824, batch=16e6)
    >>> round(float(m.params + m.optimizer) / 1e9), round(float(m.activations) / 1e12)
    (130, 42)
    """
    Psi, L, D, F, B, X, Y, Z, P = (
        np.asarray(v, dtype=float) for v in (params, layers, d_model, d_ff, batch, x, y, z, pods)
    )
    stage = np.asarray(zero)
    replica = Psi / (Y * Z)  # one data-parallel replica's share of a chip

    def sharded_from(first_stage):  # ZeRO shards this over X from ``first_stage`` on
        return replica / np.where(stage >= first_stage, X, 1)

    # [B, D] after W_out, [B, F] after each up-projection
    checkpoint_width = D + np.where(gated, 2, 1) * F
    return MemoryPerChip(
        params=weight_bytes * sharded_from(3),
        grads=grad_bytes * sharded_from(2),
        optimizer=optimizer_bytes * sharded_from(1),
        activations=B * (activation_bytes * L * checkpoint_width) / (X * Y * Z * P),
    )


def largest_replicated_model(
    *, hbm_bytes: ArrayLike, bytes_per_param: ArrayLike = 10.0
) -> float | np.ndarray:
    """Parameters that fit on one chip with a full copy each, as in pure DP: HBM / bytes (MODEL.md
    §A.4).

    Parameters
    ----------
    hbm_bytes : float or array_like
        A chip's HBM [bytes].
    bytes_per_param : float or array_like, default 10.0
        Bytes a parameter: the chapter's bf16 weights and two fp32 Adam moments, 2 + 8 [bytes].

    Returns
    -------
    params : float or np.ndarray
        The largest model a chip holds whole [parameters].

    References
    ----------
    .. [1] docs/MODEL.md §A.4 (memory per chip) and §A.8 (example 3).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism.

    Examples
    --------
    >>> largest_replicated_model(hbm_bytes=[96e9, 16e9]) / 1e9
    array([9.6, 1.6])
    """
    return np.asarray(hbm_bytes, dtype=float) / bytes_per_param


def layout_memory(
    workload: Workload,
    layout: Layout,
    options: Options,
    placed: Placement,
    P: int | np.ndarray,
    Psi: float | np.ndarray,
) -> MemoryPerChip:
    """Memory per chip (MODEL.md §A.4, §B.3, §B.4, §B.8, §D.2), the activations of the microbatches
    in flight.

    A MoE model's routed experts are split over EP chips of the data axis, and what ZeRO shards of
    them is sharded over the X/EP chips that hold the same experts.

    Parameters
    ----------
    workload : Workload
        The checked model, precision, global batch B [tokens] and sequence length T [tokens].
    layout : Layout
        The checked layout, its ZeRO stage filled in: recompute, schedule, v, EP, CP.
    options : Options
        The checked options: the runtime's ``overhead_bytes`` per chip [bytes].
    placed : Placement
        X, Y, Z and the microbatches m (``place``).
    P : int or array_like
        P, the pods.
    Psi : float or array_like
        Ψ, all the model's parameters (``ParamCount.total``) [parameters].

    Returns
    -------
    memory : MemoryPerChip
        The bytes per chip of each kind, the runtime's overhead included [bytes].

    References
    ----------
    .. [1] docs/MODEL.md §A.4 (memory per chip), §B.3 (ZeRO stages), §B.4 (activation memory
       and recompute), §B.8 (memory headroom) and §D.2 (expert parallelism).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP).
    .. [3] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.
    .. [4] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
       Parameter Models", SC 2020.
    """
    # The busiest stage holds v·ceil(L/(Z·v)) layers: it counts as L over that many stages.
    Z_busiest = stage_share(
        layers=workload.model.layers,
        stages=placed.z,
        **layout_split(layout),
    )
    memory = _state(workload, layout, placed, P, Psi, Z_busiest)
    copies = weight_copies(layout.schedule)  # DualPipe's devices hold a stage of each direction
    memory = dataclasses.replace(
        memory, **{k: getattr(memory, k) * copies for k in ("params", "grads", "optimizer")}
    )
    return dataclasses.replace(
        memory,
        activations=_activations(workload, layout, placed, P, Z_busiest, memory.activations),
        overhead=np.asarray(options.overhead_bytes, float),
    )


def _state(workload, layout, placed, P, Psi, Z_busiest) -> MemoryPerChip:
    """The chapter's count with the routed experts split over EP chips of the data axis (or of
    TP x X, whole experts on each chip), and sharded over the X/e chips that hold the same
    experts, e = EP over its share of TP (MODEL.md §D.2)."""
    model, precision = workload.model, workload.precision
    # FSDP across F pods: ZeRO's group is X·F chips, and P/F groups of pods replicas (§B.9)
    F = np.asarray(layout.fsdp_pods)
    X, Y = placed.x * F, placed.y
    e = ep_of_data(layout.ep, Y, layout.etp)  # EP over its share of TP (MODEL.md §D.2)
    shape = dict(
        layers=model.layers,
        d_model=model.d_model,
        d_ff=model.active_width,
        batch=workload.batch,
        z=Z_busiest,
        pods=P / F,
        zero=layout.zero,
        gated=model.gated,
        weight_bytes=precision.weight_bytes,
        grad_bytes=precision.grad_bytes,
        optimizer_bytes=precision.optimizer_bytes,
        activation_bytes=precision.activation_bytes,
    )
    routed = routed_params(model)
    memory = memory_per_chip(params=Psi - routed, x=X, y=Y, **shape)
    if not routed:
        return memory
    # held by the X/e chips of a pod, split over the group in all its pods (MODEL.md §B.12)
    experts = memory_per_chip(params=routed, x=X / e, y=Y * e * layout.ep_pods, **shape)
    return dataclasses.replace(
        memory,
        params=memory.params + experts.params,
        grads=memory.grads + experts.grads,
        optimizer=memory.optimizer + experts.optimizer,
    )


# the policies §B.4 counts by Korthikanti et al.'s table
KORTHIKANTI = ("none", "selective", "full")


def _activations(workload, layout, placed, P, Z_busiest, checkpoints):
    """The activations of the microbatches a stage holds at once (MODEL.md §B.4, §B.6): the
    chapter's ``checkpoints`` of one microbatch, or Korthikanti et al.'s bytes for a recompute
    policy, plus a MoE layer's dispatch buffers."""
    model, X, Y, m = workload.model, placed.x, placed.y, placed.microbatches
    in_flight = in_flight_microbatches(
        schedule=layout.schedule,
        stages=placed.z,
        microbatches=m,
        virtual_stages=layout.virtual_stages,
    )

    def kept(policy):
        if policy == "checkpoints":
            return checkpoints / m * in_flight
        seq_len = workload.seq_len / layout.cp  # a chip's s/CP tokens of each of its sequences
        seqs = workload.batch / workload.seq_len / (X / layout.cp * P * m)
        if policy in KORTHIKANTI:
            per_layer = activation_bytes_per_layer(
                seq_len=seq_len,
                microbatch_seqs=seqs,
                d_model=model.d_model,
                heads=model.heads,
                tp=Y,
                remat=policy,
                sequence_parallel=layout.sequence_parallel,
            )
        else:  # a framework's own policy: its tensors, the scores kept as §B.4 keeps them
            sizes = tensor_bytes(model, seq_len, Y, layout.sequence_parallel, flash=False)
            chunk = model.layers / Z_busiest / layout.virtual_stages
            per_layer = kept_bytes(policy_of(policy), sizes, chunk_layers=chunk) * seq_len * seqs
        return per_layer * model.layers / Z_busiest * in_flight

    # Full recompute keeps only each layer's input: the dispatch buffers are rebuilt backward; a
    # framework's own policy counts them among its tensors.
    dispatch = _dispatch_buffers(workload, placed, P, in_flight, Z_busiest)
    counted = np.isin(layout.remat, ("checkpoints", "none", "selective"))
    return per_choice(layout.remat, kept) + dispatch * counted


def _dispatch_buffers(workload, placed, P, in_flight, Z_busiest):
    """Each MoE layer keeps its tokens' k copies, sorted by expert, for the backward pass
    (``experts.dispatch_bytes``), on the stage's layers, per microbatch in flight."""
    model = workload.model
    # a chip's, one microbatch
    tokens = workload.batch / (placed.x * placed.y * P * placed.microbatches)
    per_token = dispatch_bytes(model, workload.precision.activation_bytes)
    return per_token * tokens * model.layers / Z_busiest * in_flight
