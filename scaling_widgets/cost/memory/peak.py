"""Peak memory per chip as a framework measures it (MODEL.md §E.1): the busiest pipeline stage.

Part A's memory (``chapter.py``) is the chapter's lower bound. The peak adds what a framework
really holds at its busiest moment, the start of the first backward pass:
- the stage's own weights: the embeddings on the first stage, the output layer on the last;
- gradients in the dtype the stack keeps (``Profile.grad_bytes``);
- the activations of the microbatches that stage holds in flight, by its place in the schedule;
- the working set of one layer being recomputed (or running its backward under op-level
  selective recompute);
- the logits and the loss's fp32 copies, on the last stage;
- communication buffers: ZeRO-3's gathered layers, DP and ZeRO-1/2's gradient buckets; Megatron's
  unfused attention's buffer of one layer's scores;
- the caching allocator's rounding and fragmentation: reserved memory over allocated.

Three devices are evaluated, each with its own layers, ends and microbatches in flight: the first,
the second (a microbatch fewer, and more layers where the first holds the embedding in a layer's
place) and the output layer's; any other holds no more than the second. The busiest is reported.
``Profile`` names what a stack chooses (MODEL.md §E.2). The weights, gradients, optimizer state
and buffers a stage holds between the passes are ``state.py``'s.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..ground.choices import per_choice
from ..ground.records import record
from ..schedules import ends_together, in_flight_microbatches, logits_in_flight
from ..step.pipeline import layout_split, stage_layers
from ..transformer.kept import kept_bytes, tensor_bytes, working_bytes
from ..transformer.recompute import policy
from .outputs import at_the_loss, held_outputs, not_kept
from .state import stage_state

if TYPE_CHECKING:
    from ..layout.placement import Placement
    from ..step.profiles import Profile
    from ..transformer.counts import ParamCount
    from ..values import Layout, Workload

# The threads that run matmuls, each with its cuBLAS handle and workspace, allocated through the
# caching allocator and never freed: the forward's (Python's) and autograd's backward thread
# (PyTorch's CublasHandlePool.cpp, getNewWorkspace: one workspace per handle and stream).
BLAS_THREADS = 2

PARTS = (
    "weights",
    "grads",
    "optimizer",
    "optimizer_step",
    "activations",
    "working_set",
    "logits",
    "outputs_held",
    "buffers",
    "workspaces",
    "overhead",
    "allocator",
)


@record(eq=False)
class PeakMemory:
    """The busiest chip's peak [bytes] by part, and which stage it is (0 the first).

    ``allocator`` is the caching allocator's reserve on top of what is allocated; ``measures``
    says which of the two the stack's own reports count.
    """

    weights: np.ndarray
    grads: np.ndarray
    optimizer: np.ndarray
    optimizer_step: np.ndarray  # the step's fp32 gradients and Adam's temporary, if the peak
    activations: np.ndarray
    working_set: np.ndarray
    logits: np.ndarray
    outputs_held: np.ndarray  # a model's outputs a loop holds: KV caches, fp32 logits (HF's)
    buffers: np.ndarray
    workspaces: np.ndarray  # the matmul library's, one per thread that runs matmuls
    overhead: np.ndarray
    allocator: np.ndarray
    stage: np.ndarray
    measures: str = "allocated"
    # the loss's copies of the logits a compiler recomputes to fit (XLA), left out of ``logits``
    recomputed: np.ndarray | float = 0.0
    # "first" (stage 0's) and "output" (the output layer's) device: (allocated, reserved) [bytes]
    devices: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"PeakMemory(shape={np.shape(self.reserved)})"

    @property
    def allocated(self) -> float | np.ndarray:
        return sum(getattr(self, part) for part in PARTS if part != "allocator")

    @property
    def reserved(self) -> float | np.ndarray:
        return self.allocated + self.allocator

    @property
    def reported(self) -> float | np.ndarray:
        """The peak as the stack reports it: allocated or reserved bytes."""
        return self.reserved if self.measures == "reserved" else self.allocated

    def on(self, device: str = "busiest") -> tuple:
        """One device's peak: the busiest's, the first stage's or the output layer's (a source
        that prints one rank's peak, as Megatron-LM's tests print the last rank's).

        Parameters
        ----------
        device : str, default "busiest"
            "busiest", "first" or "output".

        Returns
        -------
        allocated, reserved : float or np.ndarray
            That device's peak [bytes].
        """
        return (self.allocated, self.reserved) if device == "busiest" else self.devices[device]


def peak_memory(
    *,
    workload: Workload,
    layout: Layout,
    placed: Placement,
    pods: int | np.ndarray,
    params: ParamCount,
    profile: Profile,
    overhead: ArrayLike = 0.0,
    fp8: bool = False,
    fp8_matmuls: bool = False,
    loss_chunks: int = 1,
    swiglu_fp8: bool = False,
    blas_workspace: float = 0.0,
    memory_limit: float = np.inf,
    kv_caches: int = 0,
) -> PeakMemory:
    """The busiest stage's peak per chip (MODEL.md §E.1), from a placed layout and the stack's
    ``profile``.

    Weights, gradients and optimizer state: ``_state``. Activations: ``recompute.kept_bytes``
    x the chip's tokens of a microbatch, B/(X·P·m), x the stage's layers x its microbatches in
    flight. Logits: the last stage's s·b·V/TP logits at ``loss_bytes`` each, for each
    microbatch in flight there (GPipe: all). Each MTP module adds a layer's activations and its
    logits to the last stage. The first and the last stage are compared; the busier one is
    reported.

    Parameters
    ----------
    workload : Workload
        The checked model, precision, global batch B [tokens] and sequence length T [tokens].
    layout : Layout
        The checked layout, its ZeRO stage filled in: recompute, schedule, v, EP, CP,
        sequence parallelism.
    placed : Placement
        X, Y, Z and the microbatches m (``place``).
    pods : int or array_like
        P, the pods.
    params : ParamCount
        The model's parameters by part (``param_count``) [parameters].
    profile : Profile
        What the stack keeps in memory (``profile_of``; MODEL.md §E.2).
    overhead : float or array_like, default 0.0
        The runtime's own bytes per chip (MODEL.md §B.8) [bytes].
    fp8 : bool, default False
        Whether the layers' weights are also held cast to fp8 for fp8 matmuls, a byte each.
    fp8_matmuls : bool, default False
        Whether the layers' matmuls run in fp8: a stack that keeps their inputs as read
        (``Profile.fp8_inputs_kept``) keeps them a byte each.
    loss_chunks : int, default 1
        The chunks the loss runs in over the sequence (torchtitan's ChunkedLossWrapper).
    swiglu_fp8 : bool, default False
        Whether the SwiGLU's input is kept in fp8 for the backward, a byte an element
        (Megatron-Core's ``activation_func_fp8_input_store``).
    blas_workspace : float, default 0.0
        The matmul library's workspace of one handle (``Chip.blas_workspace``), held for each of
        the ``BLAS_THREADS`` threads that run matmuls [bytes].
    memory_limit : float, default inf
        The HBM a compiler plans the program within (``Chip.usable_hbm``): a stack that
        recomputes to fit (``Profile.recomputes_to_fit``) holds the loss's copies of the logits
        only as far as they fit, down to the logits its matmul wrote [bytes].
    kv_caches : int, default 0
        The steps' outputs the training loop holds (``Options.kv_caches_held``): their KV
        caches and fp32 logits (``outputs.py``).

    Returns
    -------
    peak : PeakMemory
        The busiest chip's peak by part, and which stage it is on [bytes].

    References
    ----------
    .. [1] docs/MODEL.md §E.1 (what the peak holds), §E.2 (stacks), §B.3 (ZeRO stages), §B.6
       (the microbatches a schedule holds), §D.2 (expert parallelism) and §F.4 (fp8).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.
    .. [3] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
       Parameter Models", SC 2020.
    """
    model = workload.model
    X, Y, m, v = placed.x, placed.y, placed.microbatches, layout.virtual_stages
    Z = np.asarray(placed.z)
    layers_of = _stage_layers(model, layout, Z)  # the first device's, a middle one's, the last's
    layers = np.maximum.reduce(np.broadcast_arrays(*layers_of))
    tokens = workload.batch / (X * pods * m)  # a chip's tokens of one microbatch
    sizes = _layer_tensors(workload, layout, Y, profile, fp8_matmuls, swiglu_fp8)
    compiled, moe = profile.torch_compile, model.moe is not None
    held = (sizes, compiled, profile.gradients)  # what a layer's working set is of

    def each_policy(what):  # over each layout's recompute policy, as the stack names it
        return per_choice(layout.remat, lambda name: what(policy(name, profile.selective, moe)))

    per_layer = each_policy(lambda rule: kept_bytes(rule, *held[:2], layers / v))  # a token's

    def on_stage(stage, its_layers):
        held = in_flight_microbatches(
            schedule=layout.schedule, stage=stage, stages=Z, microbatches=m, virtual_stages=v
        )
        return profile.activation_factor * per_layer * tokens * its_layers * held

    # the stage whose device runs the output layer: the last, or the first in a V or both ways
    last = np.where(ends_together(layout.schedule), 0, Z - 1)
    at_the_end, logits = _output_stage(
        model, layout, profile, Y, Z, m, tokens, per_layer, loss_chunks
    )
    working = each_policy(lambda rule: working_bytes(rule, *held))
    # of a KV cache the model returns, what the layers do not keep (none held: no policy asked)
    beyond_kept = each_policy(lambda rule: not_kept(rule, layers / v)) if kv_caches else 0.0

    def device(stage, its_layers, beside=0.0, its_logits=0.0):
        """One device's parts: its own layers' and ends' state, its microbatches in flight."""
        state, step = stage_state(
            workload, layout, placed, pods, params, profile, (stage, its_layers, last), fp8
        )
        in_backward, loss = held_outputs(
            workload, Y, tokens, (its_layers, its_logits), kv_caches, beyond_kept
        )
        transient = dict(
            activations=on_stage(stage, its_layers) + beside,
            working_set=profile.activation_factor * working * tokens,
            logits=its_logits,
            outputs_held=in_backward,
        )
        return _phases(state, step, transient, loss, (overhead, memory_limit), workload, profile)

    devices = _devices(device, Z, last, layers_of, (at_the_end, logits))
    parts, busiest = _busiest(devices)
    recomputed = parts.pop("recomputed")
    parts["workspaces"] = np.asarray(BLAS_THREADS * blas_workspace, dtype=float)
    cached = sum(parts.values())  # what the caching allocator holds: not the runtime's own overhead
    return PeakMemory(
        **parts,
        overhead=np.asarray(overhead, dtype=float),
        allocator=cached * (profile.allocator - 1),
        stage=busiest,
        measures=profile.measures,
        recomputed=recomputed,
        devices=_ends(devices, parts["workspaces"], overhead, profile.allocator),
    )


def _ends(devices: list, workspaces, overhead, allocator: float) -> dict:
    """The first stage's and the output layer's device, each (allocated, reserved) [bytes], as
    ``PeakMemory`` adds them up for the busiest."""

    def peak(parts: dict) -> tuple:
        cached = sum(v for k, v in parts.items() if k != "recomputed") + workspaces
        return cached + overhead, cached * allocator + overhead

    output = peak(devices[-1][1])
    stage, parts, there = devices[0]
    if len(devices) == 1 or stage != 0:  # the first stage holds the output layer: one device
        return {"first": output, "output": output}
    first = tuple(np.where(there, f, o) for f, o in zip(peak(parts), output))
    return {"first": first, "output": output}


def _phases(state, step, transient, loss, limits, workload, profile) -> dict:
    """A device's peak parts, and what a compiler recomputed to fit (MODEL.md §E.1): the
    backward fitted to the limit first (``limits``: the runtime's overhead and the HBM limit);
    then the optimizer step's phase, or this step's loss where a loop holds the last step's
    outputs (``loss``, their bytes there; None where it holds none), where either is higher."""
    transient, recomputed = _recompute_to_fit(state, transient, *limits, workload, profile)
    parts = _busier_phase(state, step, transient)
    if loss is not None:
        parts = at_the_loss(parts, state, transient, loss, profile.step_keeps_grads)
    return {**parts, "recomputed": recomputed}


def _recompute_to_fit(state, transient, overhead, limit, workload, profile) -> tuple:
    """The backward pass's ``transient`` parts with the loss's fp32 copies of the logits a
    compiler recomputes, from the logits its matmul wrote, for the program to fit its HBM limit:
    as much as the backward's peak (``state`` and ``transient``) is over it, at most the copies
    (MODEL.md §E.1); none for a stack that does not. The parts, and what was recomputed [bytes]."""
    written = workload.precision.activation_bytes  # the matmul's output, bytes a logit
    copies = transient["logits"] * max(0.0, 1 - written / profile.loss_bytes)
    over = sum(state.values()) + sum(transient.values()) + overhead - limit
    recomputed = np.clip(over, 0.0, copies) if profile.recomputes_to_fit else np.zeros(())
    return {**transient, "logits": transient["logits"] - recomputed}, recomputed


def _devices(device, Z, last, layers_of, output) -> list:
    """The devices a peak compares, each its stage, its parts (``device``) and the layouts that
    have it: the first (where the output layer's is another), the second (a microbatch fewer in
    flight, more layers where the first holds the embedding in a layer's place) and the output
    layer's, with what it holds beside its layers (``output``); a device no layout has is
    skipped."""
    first_layers, middle_layers, last_layers = layers_of
    has_second = (Z > 2) | ((Z == 2) & (last == 0))
    devices = [(0, lambda: device(0, first_layers), last != 0)]
    devices += [(1, lambda: device(1, middle_layers), has_second)]
    devices = [(stage, parts(), there) for stage, parts, there in devices if np.any(there)]
    return devices + [(last, device(last, last_layers, *output), True)]


def _busiest(devices: list) -> tuple:
    """The busiest of ``devices`` (each its stage, its peak's parts, and the layouts that have
    it), the earliest of equals: its parts, and its stage. What a compiler recomputes
    ("recomputed") is not held."""
    stages, parts_of, present = zip(*devices)
    held = [sum(v for k, v in parts.items() if k != "recomputed") for parts in parts_of]
    totals = [np.where(there, total, -np.inf) for total, there in zip(held, present)]
    busiest = np.argmax(np.broadcast_arrays(*totals), axis=0)
    parts = {k: np.choose(busiest, [parts[k] for parts in parts_of]) for k in parts_of[0]}
    return parts, np.choose(busiest, stages)


def _stage_layers(model, layout, Z) -> tuple:
    """The layers of the first device, a middle one and the output layer's (MODEL.md §A.6)."""
    return stage_layers(
        layers=model.layers,
        stages=Z,
        **layout_split(layout),
    )


def _layer_tensors(workload, layout, Y, profile, fp8_matmuls, swiglu_fp8) -> dict:
    """Each tensor of a layer per token of a microbatch on the chip, as the stack keeps it
    (``kept.tensor_bytes``)."""
    A = workload.precision.activation_bytes
    return tensor_bytes(
        workload.model,
        (workload.seq_len or 1) / layout.cp,
        Y,
        layout.sequence_parallel,
        profile.flash_attention,
        A,
        fp8_inputs=fp8_matmuls and profile.fp8_inputs_kept,
        swiglu_fp8=swiglu_fp8,
        softmax_bytes=profile.softmax_bytes,
        eager_glu=profile.eager_glu,
        combine_bytes=profile.combine_kept(A),
        gathered_inputs=profile.gathered_inputs,
        kv_gathered=_kv_gathered(layout, profile),
    )


def _kv_gathered(layout, profile):
    """The chips whose keys and values a layer keeps: CP where the stack keeps what an all-gather
    CP gathered (``Profile.cp_gathered_kept``), else its own (MODEL.md §E.1)."""
    if not profile.cp_gathered_kept or np.all(np.asarray(layout.cp) == 1):
        return 1  # off the default path: no comparison of names
    return np.where(np.asarray(layout.cp_kind) == "all-gather", layout.cp, 1)


def _busier_phase(state: dict, step: dict, transient: dict) -> dict:
    """The backward pass's peak, or the optimizer step's where that is higher (MODEL.md §E.1).
    Once the activations, the working set and the logits (``transient``) are freed, a stack may
    copy the gradients of its optimizer shard to fp32 (``step["copy"]``). DeepSpeed's ZeRO frees
    the other shards' gradients first and the shard's own once copied (``stage_1_and_2.py``,
    ``stage3.py``); Megatron-LM's gradient buffer stays beside the copy (``step["keeps"]``).
    Then Adam runs, an unfused one with a temporary of the shard's size (``step["temp"]``) beside
    the gradients it reads, and ZeRO's all-gather of the updated weights may hold flattened
    copies (``step["gather"]``). The parts [bytes], ``optimizer_step`` the step's own buffers."""
    keeps, copy, temp = step["keeps"], step["copy"], step["temp"]
    kept = np.minimum(step["grads"], state["grads"])  # ZeRO-1's shard, or all Megatron-LM held
    copied = (copy > 0) & (temp > kept) & (not keeps)  # the copy and the temporary, grads freed
    grads = np.where(copied, 0.0, kept)
    freed_first = np.where(copy > 0, copy, temp)  # the copy, or the temporary once it is freed
    buffers = np.where(copied | keeps, copy + temp, freed_first)
    buffers = np.maximum(buffers, step["gather"])  # the weights' all-gather, after Adam
    freed = {k: v for k, v in transient.items() if k != "outputs_held"}  # outputs outlive the step
    stepping = grads + buffers > state["grads"] + sum(freed.values())
    parts = {**state, **transient, **{k: np.where(stepping, 0.0, v) for k, v in freed.items()}}
    parts["grads"] = np.where(stepping, grads, state["grads"])
    parts["optimizer_step"] = np.where(stepping, buffers, 0.0)
    return parts


def _output_stage(model, layout, profile, Y, Z, m, tokens, per_layer, chunks=1) -> tuple:
    """What the output layer's stage holds beside its layers, for each microbatch whose logits
    are held there (GPipe: all): its s·b·V/TP logits at ``loss_bytes`` each, and each MTP
    module's layer and logits more (MODEL.md §D.1); the MTP layers' activations, and the logits
    [bytes]. A loss run in ``chunks`` over the sequence (torchtitan's ChunkedLossWrapper) holds
    one chunk's logits at a time, its backward run at once, and an fp32 gradient of the hidden
    states, 4·D a token (its GradAccumulator), in their place (MODEL.md §E.1)."""
    held = profile.activation_factor * logits_in_flight(
        schedule=layout.schedule, stages=Z, microbatches=m
    )
    mtp_layers = held * tokens * model.mtp_layers * per_layer
    one = tokens * model.vocab / Y * profile.loss_bytes * (1 + model.mtp_layers)
    chunked = profile.activation_factor * (one / chunks + 4 * model.d_model * tokens)
    return mtp_layers, np.where(chunks > 1, chunked, held * one)
