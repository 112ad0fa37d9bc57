"""Our layout in the frameworks' terms and back (docs/MODEL.md §G): one place for every counting
convention a launch file has.

- **Degrees.** A framework counts data parallelism without context parallelism, over every pod:
  world = DP x CP x TP x PP, and our data axis X (per pod) holds DP's and CP's chips: X = DP x CP /
  pods. Expert parallelism is carved out of DP x CP (and out of TP too when the experts' own TP is
  1), as in Megatron Core and torchtitan.
- **Batch.** Frameworks count sequences: the global batch B/T, and a micro-batch of B/(T·DP·m)
  sequences per data-parallel rank, m microbatches a step (accumulated, or pipelined).
- **ZeRO.** Stage 1 is Megatron-LM's distributed optimizer; torchtitan's FSDP2 shards all three
  (ZeRO-3), or keeps the weights gathered after the forward pass (ZeRO-2); MaxText's fsdp axis is
  ZeRO-3, its data axis ZeRO-0.
"""

from __future__ import annotations

import math

from ..cost import Estimate
from ..cost.ground.records import record
from ..cost.ground.refusals import refuse
from ..cost.hardware.slices import slice_for
from ..cost.stacks import feature_names
from ..cost.values import SPANS
from ..text.explain import ENDS_NAMED


@record
class Degrees:
    """A layout as the frameworks count it (docs/MODEL.md §G)."""

    world: int  # chips in all, every pod
    pods: int  # the pods across the data-center network
    dp: int  # data parallelism, context parallelism left out: world = dp·cp·tp·pp
    cp: int
    tp: int
    pp: int
    vp: int  # virtual stages a device (chunks)
    ep: int
    etp: int  # the routed experts' tensor parallelism: 1 (whole experts) or tp
    zero: int
    seq_len: int
    global_batch: int  # sequences a step
    micro_batch: int  # sequences a microbatch, on each data-parallel rank
    schedule: str  # one of ours
    remat: str
    sequence_parallel: bool = False
    ep_overlap: bool = False
    fp8: bool = False
    compile: bool | None = None
    compile_loss: bool | None = None  # None: with the layers (torchtitan's compile.components)
    grad_dtype: str | None = None  # None: the stack's
    weight_dtype: str | None = None  # None: the stack's
    fp8_params: bool = False
    moment_dtype: str | None = None  # None: fp32
    optimizer_impl: str | None = None  # None: fused ("foreach": torch's AdamW without fused)
    swiglu_input_fp8: bool = False  # Megatron-Core's activation_func_fp8_input_store
    accumulate_unsharded: bool = False  # PyTorch FSDP's no_sync over the microbatches
    loss_chunks: int = 1  # the loss run in chunks over the sequence (torchtitan's 2026 configs)
    cp_kind: str = "ring"  # ours: "ring", "all-gather" or "ulysses"
    features: str | None = None  # the stack's features on ("none"); None: its release's defaults
    ends_as_layers: str = "none"  # the ends that take a layer's place in the pipeline split
    first_stage_layers: int | None = None  # given; None: the split's share
    last_stage_layers: int | None = None
    fsdp_pods: int = 1  # the pods each FSDP group spans; the rest data-parallel replicas
    pp_pods: int = 1  # the pods each pipeline spans, pp/pp_pods stages in each; the rest replicas
    tp_pods: int = 1  # the pods each TP group spans, tp/tp_pods chips in each; the rest replicas
    ep_pods: int = 1  # the pods each EP group spans, ep/ep_pods chips in each; all replicas
    cp_pods: int = 1  # the pods each CP group spans, cp/cp_pods chips in each; all replicas
    steps: int | None = None  # to train on the workload's tokens

    @property
    def tokens(self) -> float | None:
        return None if self.steps is None else float(self.steps * self.global_batch * self.seq_len)

    @property
    def microbatches(self) -> int:
        """Microbatches a step on each data-parallel rank (accumulated or pipelined)."""
        return self.global_batch // (self.micro_batch * self.dp)


def degrees_of(e: Estimate) -> Degrees:
    """The frameworks' degrees of one evaluated layout.

    DP = X·R/CP data-parallel ranks share the global batch of B/T sequences, each rank's share
    m microbatches of B/(T·DP·m) sequences; world = X·Y·Z·R = DP·CP·TP·PP, Z the stages in all
    and R the replicas over DCN, the pods or their groups a pipeline or a TP group spans
    (MODEL.md §B.10, §B.11), Y the TP group in all its pods. The
    experts' TP is Y unless the layout gives its own with EP > 1; ZeRO is 0 where each replica
    holds one data rank.

    Parameters
    ----------
    e : Estimate
        One evaluated layout, its workload's sequence length T given.

    Returns
    -------
    d : Degrees
        The layout as the frameworks count it.

    Raises
    ------
    InputError
        For a batch that is not whole sequences, or microbatches that are not whole sequences on
        each data-parallel rank: no framework can run those.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch and ZeRO in the frameworks' counts).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (``validate_args``: data_parallel_size = world_size //
       (TP·PP·CP); expert_tensor_parallel_size defaults to TP).
    .. [3] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/core/num_microbatches_calculator.py`` (``ConstantNumMicroBatchesCalculator``:
       microbatches = global batch / (micro batch·DP)).
    .. [4] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/distributed/parallel_dims.py`` (``ParallelDims._validate``:
       dp_replicate·dp_shard·cp·tp·pp = world size).
    """
    if e.workload.seq_len is None:
        raise refuse("seq_len", "given, for a launch file counts sequences", None)
    x, y, z, pods, replicas = int(e.x), int(e.y), int(e.z), int(e.cluster.pods), int(e.pods)
    cp, m, T = int(e.layout.cp), int(e.microbatches), int(e.workload.seq_len)
    sequences = float(e.batch) / T
    if abs(sequences - round(sequences)) > 1e-9 * sequences:
        raise refuse("batch", f"whole sequences of {T} for a launch file", float(e.batch))
    dp = x * replicas // cp
    whole_sequences = round(sequences)
    if whole_sequences % dp:
        low, high = whole_sequences // dp * dp, (whole_sequences // dp + 1) * dp
        raise refuse(
            "batch",
            f"the same whole sequences for each of the {dp:,} data-parallel ranks, as frameworks"
            f" run them: e.g. {low * T:,} or {high * T:,} tokens ({low:,} or {high:,} sequences)",
            f"{whole_sequences:,} sequences",
        )
    per_rank = whole_sequences // dp
    if per_rank % m:
        counts = [c for c in range(1, per_rank + 1) if per_rank % c == 0]
        near = sorted(sorted(counts, key=lambda c: abs(c - m))[:2])
        raise refuse(
            "microbatches",
            f"a count splitting each data-parallel rank's {per_rank:,} sequences into whole"
            f" microbatches (e.g. {' or '.join(map(str, near))})",
            m,
        )
    options = e.options
    return Degrees(
        world=x * y * z * replicas,
        pods=pods,
        dp=dp,
        cp=cp,
        tp=y,
        pp=z,
        vp=int(e.virtual_stages) if z > 1 else 1,
        ep=int(e.layout.ep) * int(e.layout.ep_pods),  # the group in all its pods
        etp=y if e.layout.etp is None or int(e.layout.ep) == 1 else int(e.layout.etp),
        # one data rank a pod, as replicas: nothing to shard
        zero=int(e.zero) if dp // replicas * int(e.layout.fsdp_pods) > 1 else 0,
        **{name: int(getattr(e.layout, name)) for name in SPANS},
        seq_len=T,
        global_batch=whole_sequences,
        micro_batch=per_rank // m,
        schedule=_schedule(str(e.schedule), z, int(e.virtual_stages)),
        remat=str(e.remat),
        sequence_parallel=bool(e.layout.sequence_parallel) and y > 1,
        ep_overlap=bool(e.layout.ep_overlap),
        fp8=options.matmul_dtype == "fp8",
        compile=options.torch_compile,
        fp8_params=bool(options.fp8_params),
        swiglu_input_fp8=bool(options.swiglu_input_fp8),
        accumulate_unsharded=bool(options.accumulate_unsharded),
        loss_chunks=int(options.loss_chunks),
        cp_kind=str(e.layout.cp_kind) if cp > 1 else "ring",
        **(_split(e.layout) if z > 1 else {}),
        steps=_steps(e.workload.tokens, round(sequences) * T),
        **{name: getattr(options, name) for name in AS_GIVEN},
    )


# the pipeline split: the ends that take a layer's place, the first and the last stage's layers
SPLIT = ("ends_as_layers", "first_stage_layers", "last_stage_layers")


def _split(layout) -> dict:
    """The layout's pipeline split, as the degrees carry it."""
    return {name: getattr(layout, name) for name in SPLIT}


# options a launch file carries as they are given (None: the framework's default)
AS_GIVEN = ("compile_loss", "grad_dtype", "weight_dtype", "moment_dtype", "optimizer_impl",
            "features")  # fmt: skip
SAYABLE = ("gradients", "Adam's moments", "the weights", "fp8 weights", "foreach", "features",
           "ends as layers", "stage layers", "pods")  # fmt: skip


def own_features(d: Degrees, offered: dict, framework: str, cannot: list) -> tuple | None:
    """The features ``d`` turns on, where all are ``framework``'s (``offered``: its stack's
    FEATURES); None where they are the release's defaults, or another stack's (said in
    ``cannot``: the file keeps the framework's defaults).

    Parameters
    ----------
    d : Degrees
        What is written, its ``features``.
    offered : dict
        The framework's stack's features, by name.
    framework : str
        Its name, for the note.
    cannot : list of str
        Where another stack's features are said.

    Returns
    -------
    on : tuple of str or None
        The names on ("none": empty), or None where nothing is to be written.
    """
    if d.features is None:
        return None
    on = feature_names(d.features)
    if not set(on) <= set(offered):
        cannot.append(f"the features {d.features}: another stack's, {framework}'s defaults kept")
        return None
    return on


def unwritten(d: Degrees, says: tuple = ()) -> list[str]:
    """What a framework's file cannot say, of what it does not list in ``says``: gradients
    ("gradients"), Adam's moments ("Adam's moments") or weights ("the weights") kept in another
    dtype than its default (Megatron-LM's flags say the first two, MaxText's weight_dtype all
    three at once), fp8 weights ("fp8 weights": Megatron-LM's), Adam as torch's foreach ops
    ("foreach": torchtitan's), FSDP across some of the pods ("pods": MaxText's and torchtitan's;
    the others shard over every data rank), and a loss run in chunks, the SwiGLU's input in fp8
    or microbatches accumulated unsharded, which no file we write says (docs/MODEL.md §B.9,
    §E.1, §E.4).

    Parameters
    ----------
    d : Degrees
        The layout as the frameworks count it.
    says : tuple of str, default ()
        What the file can say, of ``SAYABLE``: "gradients", "Adam's moments", "the weights",
        "fp8 weights", "foreach", "features", "ends as layers", "stage layers", "pods".

    Returns
    -------
    cannot : list of str
        One line for each option set that the file cannot say.
    """
    assert set(says) <= set(SAYABLE), says
    weights = d.weight_dtype and f"{d.weight_dtype} with no fp32 copy"
    said = {"gradients": d.grad_dtype, "Adam's moments": d.moment_dtype, "the weights": weights}
    lines = [f"{what} in {dtype}: written as its default" for what, dtype in said.items()
             if dtype and what not in says]  # fmt: skip
    fp8 = d.fp8_params and "fp8 weights" not in says
    lines += ["the weights in fp8: written as its default"] * fp8
    lines += [f"the loss in {d.loss_chunks} chunks: written whole"] * (d.loss_chunks > 1)
    lines += ["the SwiGLU's input in fp8: written in bf16"] * d.swiglu_input_fp8
    lines += ["microbatches accumulated unsharded: written reduced each"] * d.accumulate_unsharded
    foreach = d.optimizer_impl == "foreach" and "foreach" not in says
    features = d.features is not None and "features" not in says
    lines += [f"the features {d.features}: written as the framework's defaults"] * features
    ends = d.ends_as_layers != "none" and "ends as layers" not in says
    named = ENDS_NAMED.get(d.ends_as_layers)
    lines += [f"{named} as layers in the pipeline split: written as layers alone"] * ends
    counts = {"first": d.first_stage_layers, "last": d.last_stage_layers}
    given = "stage layers" not in says
    lines += [f"the {end} stage's {n} layers: written as the even split" for end, n in
              counts.items() if n is not None and given]  # fmt: skip
    some_pods = 1 < d.fsdp_pods < d.pods and "pods" not in says
    lines += [f"FSDP across {d.fsdp_pods} of the {d.pods} pods: written across all"] * some_pods
    return lines + ["Adam as torch's foreach ops: written as the framework's fused Adam"] * foreach


def _schedule(name: str, stages: int, chunks: int) -> str:
    """One stage has no schedule; interleaving one chunk a device is 1F1B."""
    return "1f1b" if stages == 1 or (name == "interleaved" and chunks == 1) else name


def _steps(tokens, per_step: int) -> int | None:
    """The steps that train on ``tokens``: whole, the last one full."""
    return None if tokens is None else max(1, math.ceil(float(tokens) / per_step))


def _check_world(d: Degrees) -> None:
    """TP, PP and CP divide the world, and DP is what they leave of it (Megatron-LM's count)."""
    for name, degree in (("tp", d.tp), ("pp", d.pp), ("cp", d.cp)):
        if degree < 1 or d.world % degree:
            raise refuse(name, f"a degree dividing the {d.world:,} chips", degree)
    if d.dp * d.cp * d.tp * d.pp != d.world:
        raise refuse(
            "dp",
            f"{d.world:,} chips / (CP {d.cp} x TP {d.tp} x PP {d.pp}) ="
            f" {d.world / (d.cp * d.tp * d.pp):g} ranks, the world the degrees leave",
            d.dp,
        )


def fields_of(d: Degrees, chip) -> dict:
    """The scenario's fields for the degrees on ``chip``: a split by hand, every degree given.

    The inverse of ``degrees_of``: X = DP·CP/pods, Y = TP, Z = PP, the batch B = T times the
    global batch in sequences, m = global batch/(micro batch·DP) microbatches; the slice holds
    each pod's world/pods chips (GPUs in nodes, ``gpu_slice``; or a TPU slice of that many).

    Parameters
    ----------
    d : Degrees
        The layout as the frameworks count it.
    chip : Chip
        The chip the layout runs on.

    Returns
    -------
    fields : dict
        Field name -> value: the strategy "fsdp+tp" split by hand, the groups, ZeRO, pods, batch
        [tokens], sequence length [tokens], microbatches, schedule, recompute, EP, CP, switches,
        the slice, and ``tokens`` [tokens] where the degrees give the steps.

    Raises
    ------
    InputError
        For degrees whose product is not the world, naming the first that does not divide it; a
        micro batch whose count on each data-parallel rank does not split the global batch; pods
        that do not divide the data ranks; or a count of chips a pod that no slice of a TPU has.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees and batch in the frameworks' counts).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (``validate_args``: data_parallel_size = world_size //
       (TP·PP·CP)).
    .. [3] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/core/num_microbatches_calculator.py`` (``ConstantNumMicroBatchesCalculator``:
       microbatches = global batch / (micro batch·DP)).
    """
    _check_world(d)
    if d.micro_batch < 1 or d.global_batch % (d.micro_batch * d.dp):
        raise refuse(
            "micro_batch",
            f"sequences a microbatch whose count on each of the {d.dp:,} data-parallel ranks"
            f" splits the global batch of {d.global_batch:,} sequences",
            d.micro_batch,
        )
    # groups of the pods a pipeline or a TP group spans (MODEL.md §B.10, §B.11)
    replicas = d.pods // (d.pp_pods * d.tp_pods)
    if d.pods < 1 or d.world % d.pods or (d.dp * d.cp) % replicas:
        raise refuse(
            "pods", f"a count dividing the {d.dp * d.cp:,} data ranks (CP's included)", d.pods
        )
    x = d.dp * d.cp // replicas
    fields = dict(
        strategy="fsdp+tp",
        optimal_split=False,
        x=x,
        y=d.tp // d.tp_pods,
        z=d.pp // d.pp_pods,
        zero=d.zero,
        pods=d.pods,
        **{name: getattr(d, name) for name in SPANS},
        batch=float(d.global_batch * d.seq_len),
        seq_len=d.seq_len,
        microbatches=d.microbatches,
        schedule=d.schedule,
        virtual_stages=d.vp,
        remat=d.remat,
        sequence_parallel=d.sequence_parallel,
        ep=d.ep // d.ep_pods,
        etp=None if d.etp == d.tp else d.etp,
        cp=d.cp // d.cp_pods,
        cp_kind=d.cp_kind,
        **{name: getattr(d, name) for name in SPLIT},
        ep_overlap=d.ep_overlap,
        matmul_dtype="fp8" if d.fp8 else "bf16",
        torch_compile=d.compile,
        compile_loss=d.compile_loss,
        grad_dtype=d.grad_dtype,
        weight_dtype=d.weight_dtype,
        fp8_params=d.fp8_params,
        moment_dtype=d.moment_dtype,
        optimizer_impl=d.optimizer_impl,
        swiglu_input_fp8=d.swiglu_input_fp8,
        accumulate_unsharded=d.accumulate_unsharded,
        loss_chunks=d.loss_chunks,
        features=d.features,
    )
    if d.tokens is not None:
        fields["tokens"] = d.tokens
    per_pod = d.world // d.pods
    fields["slice_shape"] = slice_for(chip, per_pod)
    return fields
