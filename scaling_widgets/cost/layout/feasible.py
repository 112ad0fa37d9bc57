"""Whether a layout can run: the checks that need more than one value, and the physics of a
placed layout (MODEL.md §A.3, §A.6, §D.2, §D.3).

``together`` refuses values that contradict each other (a recompute policy without sequences,
arrays of layouts that do not broadcast); ``possible`` refuses a placed layout that cannot run: a
data replica needs a whole sequence per microbatch, TP must divide the attention heads, every
(virtual) pipeline stage needs a layer, EP and CP must divide what they split. Each refusal is an
``InputError`` that names the field, the value and what is allowed (``rule_refusals``).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from numpy.typing import ArrayLike

from .. import schedules
from ..ground.checks import first, per_layout
from ..ground.refusals import refuse
from ..stacks import (
    COMPILING,
    COMPILING_LOSS,
    MASTER_WEIGHTS,
    NO_SYNC,
    PAIRING,
    REGISTRY,
    TORCH_ADAM,
    feature_names,
)
from ..step.pipeline import ENDS_AS_LAYERS
from ..step.profiles import default_stack, runs_on
from ..strategies import STRATEGIES
from ..transformer.experts import folds_over_tp
from ..transformer.shapes import Model
from ..values import SPANS, Cluster, Layout, Options, Workload
from . import rule_refusals


def together(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> None:
    """Refuse values that each check out but contradict each other.

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip, one pod's slice and P, the pods.
    workload : Workload
        The model, B the global batch [tokens], T the sequence length (None: no sequences).
    layout : Layout
        The layout as asked for.
    options : Options
        How the numbers are read: attention FLOPs, matmul precision, stack, profile.

    Returns
    -------
    None
        Nothing: the values go together.

    Raises
    ------
    InputError
        Naming the first field that contradicts the others: ``seq_len`` absent where attention
        FLOPs, microbatch sizes, a recompute policy or context parallelism need it; fp8 matmuls
        on a chip without them; torch.compile or ``ep_overlap`` with a stack that has not it, or
        ``ep_overlap`` on a dense model; a profile made for another chip; as many ``axis_roles`` as
        slice axes; arrays of layouts that do not broadcast together.
    """
    if workload.seq_len is None:
        if options.attention_flops:
            raise refuse("seq_len", "given to count attention FLOPs (12·L·T·N_h·H a token)", None)
        if np.any(np.asarray(layout.remat) != "checkpoints") or layout.microbatch_seqs is not None:
            raise refuse(
                "seq_len",
                "given for microbatch sizes or a recompute policy other than 'checkpoints'",
                None,
            )
        if layout.cp is not None and np.any(np.asarray(layout.cp) > 1):
            raise refuse(
                "seq_len", "given to split sequences over chips (context parallelism)", None
            )
    chip = cluster.chip
    if options.matmul_dtype == "fp8" and not chip.flops_fp8:
        raise refuse(
            "matmul_dtype",
            f"'bf16' on the {chip.name}, which has no fp8 matmuls (fp8 runs on the H100, H200,"
            " B200 and GB200)",
            "'fp8'",
        )
    stack = options.stack or (default_stack(chip) if options.profile is None else None)
    if options.torch_compile and stack not in (None, *COMPILING):
        raise refuse(
            "torch_compile",
            f"off with {stack}, which fuses its own kernels (torch.compile runs with"
            f" {', '.join(COMPILING)})",
            True,
        )
    if options.compile_loss and stack not in (None, *COMPILING_LOSS):
        raise refuse(
            "compile_loss",
            f"off with {stack}, whose loss is its own kernel (a compiled loss runs with"
            f" {', '.join(COMPILING_LOSS)})",
            True,
        )
    if layout.ep_overlap and stack not in (None, *PAIRING):
        raise refuse(
            "ep_overlap",
            f"off with {stack}, which does not pair passes (it runs with {', '.join(PAIRING)})",
            True,
        )
    if layout.ep_overlap and workload.model.moe is None:
        raise refuse("ep_overlap", "off for a dense model: it has no expert all-to-alls", True)
    _precision_together(options, stack)
    _features_known(options, stack)
    if options.profile is not None and not runs_on(options.profile, chip):
        raise refuse(
            "profile",
            f"a profile made for the {chip.name} (calibrate one on it, or drop the profile to"
            " use the chip's own)",
            f"one made for the {options.profile.chip}",
        )
    _cluster_together(cluster, layout)
    _experts_across_pods(workload.model, layout)
    _broadcast(cluster, workload, layout, options)


def _experts_across_pods(model: Model, layout: Layout) -> None:
    """An EP group across pods: a MoE model's, taken from the data axis (not folded over TP);
    ``runs`` checks that its EP·E chips divide the experts (MODEL.md §B.12)."""
    E = np.asarray(layout.ep_pods)
    if not np.any(E > 1):
        return
    if model.moe is None:
        raise refuse("ep_pods", "1 for a dense model: it has no experts to split", layout.ep_pods)
    if layout.etp is not None and np.any((np.asarray(layout.etp) == 1) & (E > 1)):
        raise refuse(
            "ep_pods", "1 with EP folded over TP (etp 1): fold it inside a pod", layout.ep_pods
        )


# The groups that may span pods, by field, and their names (MODEL.md §B.9 to §B.13)
NAMED = dict(zip(SPANS, ("FSDP", "a pipeline", "TP", "EP", "CP")))


def _cluster_together(cluster, layout) -> None:
    """As many axis roles as slice axes; each group across a count of pods that divides P, one
    group at a time: FSDP under ZeRO-3, whose FSDP it is; TP only where the strategy has TP, and
    not with EP folded over it; TP and EP across TPU pods only (MODEL.md §A.7, §B.9 to §B.12)."""
    if layout.axis_roles is not None and len(layout.axis_roles) != len(cluster.slice_shape):
        raise refuse(
            "axis_roles",
            f"one of 'x', 'y', 'z' for each of the {len(cluster.slice_shape)} slice axes",
            tuple(layout.axis_roles),
        )
    P, before = np.asarray(cluster.pods), []
    for name, what in NAMED.items():
        given = getattr(layout, name)
        n = np.asarray(given)
        if np.any(P % n != 0):
            raise refuse(
                name, f"a count of pods dividing the {cluster.pods} pods (1: {what} inside a pod)",
                given,
            )  # fmt: skip
        spanning = [b for b, m in before if np.any((n > 1) & (m > 1))]
        if spanning:
            raise refuse(
                name,
                f"1 with {' or '.join(NAMED[b] for b in spanning)} across pods"
                f" ({' or '.join(spanning)} > 1): one group spans pods at a time",
                given,
            )
        before.append((name, n))
    if np.any((np.asarray(layout.fsdp_pods) > 1) & (np.asarray(layout.zero) != 3)):
        raise refuse(
            "fsdp_pods",
            "1 unless the ZeRO stage is 3: across pods the weights are sharded as FSDP shards them",
            f"{layout.fsdp_pods} with ZeRO-{layout.zero}",
        )
    _tp_across_pods(cluster, layout)


def _tp_across_pods(cluster, layout) -> None:
    """TP, EP or CP across pods: on TPU pods, TP where the strategy has a TP group and no EP
    group folds over it, CP where it is given and passes keys and values around a ring or
    gathers them (MODEL.md §B.11 to §B.13)."""
    T = np.asarray(layout.tp_pods)
    for name, group in (("tp_pods", "TP"), ("ep_pods", "EP"), ("cp_pods", "CP")):
        if cluster.chip.is_gpu and np.any(np.asarray(getattr(layout, name)) > 1):
            raise refuse(
                name,
                f"1 on GPUs: a cluster's {group} group spans its nodes as --{group.lower()} says;"
                " across clusters over DCN it is not priced",
                getattr(layout, name),
            )
    if np.any(T > 1) and STRATEGIES[layout.strategy].on == "x":
        raise refuse(
            "tp_pods", f"1 for strategy {layout.strategy!r}, which has no TP group", layout.tp_pods
        )
    C = np.asarray(layout.cp_pods)
    if np.any(C > 1) and layout.cp is None:
        raise refuse("cp", "given with cp_pods > 1: the CP chips in each pod", None)
    if np.any((C > 1) & (np.asarray(layout.cp_kind) == "ulysses")):
        raise refuse(
            "cp_kind", "'ring' or 'all-gather' across pods (as MaxText, no Ulysses over DCN)",
            "'ulysses'",
        )  # fmt: skip
    folded = layout.etp is not None and np.any(
        (np.asarray(layout.etp) == 1) & (np.asarray(layout.ep) > 1) & (T > 1)
    )
    if folded:
        raise refuse(
            "tp_pods", "1 with EP folded over TP (etp 1): fold it over TP in a pod", layout.tp_pods
        )


def _features_known(options, stack) -> None:
    """Features the stack has, by name, and those that run only compiled with torch.compile on
    (MODEL.md §F.2)."""
    if options.features is None:
        return
    offered = REGISTRY[stack].features if stack else {}
    compiled = options.torch_compile
    if compiled is None:
        compiled = options.profile is not None and options.profile.torch_compile
    for name in feature_names(options.features):
        if name not in offered:
            allowed = ", ".join(offered) if offered else f"none ({stack or 'a profile'} has none)"
            raise refuse(
                "features",
                f"'none' or names of {stack or 'the stack'}'s features: {allowed}",
                repr(name),
            )
        if offered[name].compiled and not compiled:
            raise refuse(
                "features",
                f"without {name} unless torch_compile is on ({stack} runs it only compiled)",
                repr(name),
            )


def _precision_together(options, stack) -> None:
    """Adam as foreach ops on a stack whose Adam is torch's, unsharded accumulation on PyTorch's
    FSDP, a weight dtype where the weights are the optimizer's own copy, and not both a weight
    dtype and fp8 weights (MODEL.md §E.1, §E.4)."""
    if options.optimizer_impl == "foreach" and stack not in (None, *TORCH_ADAM):
        raise refuse(
            "optimizer_impl",
            f"'fused' with {stack}, whose Adam is one fused kernel (torch's foreach Adam runs"
            f" with {', '.join(TORCH_ADAM)})",
            "'foreach'",
        )
    if options.weight_dtype is not None and stack not in (None, *MASTER_WEIGHTS):
        raise refuse(
            "weight_dtype",
            f"unset with {stack}, whose optimizer keeps an fp32 copy beside its bf16 weights"
            f" (a weight dtype is for {', '.join(MASTER_WEIGHTS[:-1])} or {MASTER_WEIGHTS[-1]})",
            repr(options.weight_dtype),
        )
    if options.accumulate_unsharded and stack not in (None, *NO_SYNC):
        raise refuse(
            "accumulate_unsharded",
            f"off with {stack}: it is PyTorch FSDP's no_sync ({', '.join(NO_SYNC)})",
            True,
        )
    if options.weight_dtype is not None and options.fp8_params:
        raise refuse("weight_dtype", "unset with fp8 weights", repr(options.weight_dtype))


def _broadcast(*values) -> None:
    """Refuse arrays of layouts that do not broadcast together, naming the first that does not."""
    shape = ()
    for value in values:
        for name in _per_layout_fields(type(value)):
            got = np.shape(getattr(value, name))
            if not got:  # one value broadcasts with anything
                continue
            try:
                shape = np.broadcast_shapes(shape, got)
            except ValueError:
                raise refuse(
                    name,
                    f"one value, or an array that broadcasts with the shape {shape} of the others",
                    f"an array of shape {got}",
                ) from None


@functools.cache
def _per_layout_fields(kind: type) -> tuple[str, ...]:
    """The fields of a value that may hold one entry per layout (``pods`` among them)."""
    return tuple(
        field.name
        for field in dataclasses.fields(kind)
        if field.name == "pods" or per_layout(field.metadata.get("check"))
    )


def runs(
    *,
    model: Model,
    seq_len: int | None,
    batch: ArrayLike,
    pods: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    z: ArrayLike,
    virtual_stages: ArrayLike,
    microbatches: ArrayLike,
    ep: ArrayLike = 1,
    etp: ArrayLike | None = None,
    cp: ArrayLike = 1,
    cp_kind: str | np.ndarray = "ring",
    schedule: str | np.ndarray = "1f1b",
    remat: str | np.ndarray = "checkpoints",
    ep_overlap: bool = False,
    ends_as_layers: str = "none",
    first_stage_layers: int | None = None,
    last_stage_layers: int | None = None,
    cp_pods: ArrayLike = 1,
    ep_pods: ArrayLike = 1,
) -> dict[str, np.bool_ | np.ndarray]:
    """Which layouts can run, rule by rule: name -> boolean array (MODEL.md §A.3, §A.6, §B.6).

    - "sequences": a data replica gets at least one whole sequence (one token without
      ``seq_len``) per microbatch: B / (T·X·P·m) >= 1, its CP chips sharing each sequence:
      B·CP / (T·X·P·m) >= 1;
    - "whole": where a replica's share of the batch is whole sequences S, the microbatches
      split it into whole ones: m divides S (frameworks take a microbatch in sequences; a share
      that is not whole is the chapter's average over replicas, and stands as it is);
    - "heads": TP divides the attention heads, and the KV heads divide it or it divides them
      (KV heads fewer than Y are replicated Y/K times, as Megatron-LM does);
    - "stages": every (virtual) stage gets a layer: Z·v ≤ L, the embedding and the loss each
      counting as one where they take a layer's place (``ends_as_layers``); uneven stages are
      charged by the busiest, ``pipeline.busiest_stage_layers``;
    - "schedule": the pipeline schedule can run m microbatches on Z stages (e.g. DualPipe's
      even Z and m ≥ 2Z);
    - "experts": EP divides the experts E (a dense model: EP = 1) and the data axis X it is
      taken from; folded over TP (``etp`` 1), the group takes TP's chips first: EP divides Y, or
      Y divides EP and EP/Y divides X; ``etp`` is 1 or Y (MODEL.md §D.2);
    - "context": CP divides the data axis and the sequence, and under Ulysses the KV heads of
      each TP shard (MODEL.md §D.3);
    - "pairs": with ``ep_overlap``, experts split over EP > 1 chips, no full recompute, and one
      stage or an interleaved schedule of v ≥ 2 (Megatron-LM's combined 1F1B, MODEL.md §B.6).

    Parameters
    ----------
    model : Model
        The model: L its layers, N_h and K its heads and KV heads, E its experts.
    seq_len : int, optional
        T, the sequence length [tokens]; None: the chapter's token count (T = 1).
    batch : float or array_like
        B, the global batch [tokens].
    pods : int or array_like
        P, the pods over the data-center network.
    x : int or array_like
        X, the data axis of a stage, its CP and EP chips included [chips].
    y : int or array_like
        Y, the tensor-parallel degree [chips].
    z : int or array_like
        Z, the pipeline stages.
    virtual_stages : int or array_like
        v, the virtual stages a device (interleaved schedules).
    microbatches : int or array_like
        m, the microbatches a step.
    ep : int or array_like, default 1
        EP, the expert-parallel degree [chips].
    etp : int or array_like, optional
        The routed experts' tensor parallelism: 1 folds the EP group over TP x X, Y splits the
        experts over TP as the rest; None: as Y, the EP group taken from X alone.
    cp : int or array_like, default 1
        CP, the chips of the data axis that share each sequence.
    cp_kind : str or array_like of str, default "ring"
        How CP passes keys and values: "ring", "all-gather" or "ulysses".
    schedule : str or array_like of str, default "1f1b"
        The pipeline schedule, a name of ``SCHEDULES``.
    remat : str or array_like of str, default "checkpoints"
        The recompute policy ("full" breaks combined 1F1B's pairs).
    ep_overlap : bool, default False
        Whether combined 1F1B pairs the passes to hide the expert all-to-alls.
    ends_as_layers : str, default "none"
        Which ends of the model take a layer's place in the pipeline split.
    first_stage_layers : int, optional
        The first stage's layers, given (``_stages_hold_layers``).
    last_stage_layers : int, optional
        The last stage's layers, given.
    cp_pods : int or array_like, default 1
        The pods the CP group spans, CP/cp_pods of its chips in each pod's X.
    ep_pods : int or array_like, default 1
        The pods the EP group spans, EP of its chips in each pod's X, EP·ep_pods in all.

    Returns
    -------
    ok : dict of str to np.bool_ or np.ndarray
        Per rule ("sequences", "whole", "heads", "stages", "schedule", "experts", "context",
        "pairs"):
        True where the layout keeps it, one boolean per layout.

    References
    ----------
    .. [1] docs/MODEL.md "Layouts that cannot run" (after §A.10), §A.6 (uneven stages), §B.6
       (DualPipe; Megatron-LM's combined 1F1B), §D.2 (expert parallelism) and §D.3 (context
       parallelism).
    .. [2] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/core/transformer/transformer_config.py`` (``TransformerConfig.__post_init__``:
       TP divides the attention heads, the KV heads divide it or it them; the checks of
       ``overlap_moe_expert_parallel_comm``).
    .. [3] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024 (DualPipe).
    """
    T = 1 if seq_len is None else seq_len
    H, K = model.heads, model.kv_heads
    E, EP, CP = (1 if model.moe is None else model.moe.experts), np.asarray(ep), np.asarray(cp)
    heads_per_shard = np.maximum(K // np.asarray(y), 1)
    share = np.asarray(batch) * CP / (T * np.asarray(x) * pods)  # sequences a replica gets
    return {
        "sequences": share >= microbatches,
        "whole": True if seq_len is None else _whole_microbatches(share, microbatches),
        "heads": (H % np.asarray(y) == 0) & ((np.asarray(y) % K == 0) | (K % np.asarray(y) == 0)),
        "stages": _stages_hold_layers(
            model.layers,
            z,
            virtual_stages,
            ends_as_layers,
            (first_stage_layers, last_stage_layers),
            schedule,
        ),
        "schedule": schedules.runs(schedule=schedule, stages=z, microbatches=microbatches),
        "experts": _experts_fit(E, EP, np.asarray(x), np.asarray(y), etp)
        & (E % (EP * np.asarray(ep_pods)) == 0),  # the group in all its pods (§B.12)
        # a CP group across pods: CP/cp_pods of its chips in each pod's X (MODEL.md §B.13)
        "context": (np.asarray(x) % (CP // np.asarray(cp_pods)) == 0)
        & (T % CP == 0)
        & ((cp_kind != "ulysses") | (heads_per_shard % CP == 0)),
        "pairs": ~np.asarray(ep_overlap) | _pairs(EP, z, virtual_stages, schedule, remat),
    }


def _pairs(EP, z, virtual_stages, schedule, remat) -> np.ndarray:
    """The "pairs" rule of ``runs``: where combined 1F1B can run."""
    staged = (np.asarray(schedule) == "interleaved") & (np.asarray(virtual_stages) > 1)
    return (EP > 1) & (np.asarray(remat) != "full") & ((np.asarray(z) == 1) | staged)


def _experts_fit(E, EP, X, Y, etp) -> np.ndarray:
    """The "experts" rule of ``runs``."""
    over_data = X % EP == 0
    if etp is None:
        return over_data & (E % EP == 0)
    over_tp = np.where(EP <= Y, Y % EP == 0, (EP % Y == 0) & (X % np.maximum(EP // Y, 1) == 0))
    ETP = np.asarray(etp)
    return (
        np.where(folds_over_tp(ETP, Y), over_tp, over_data)
        & (E % EP == 0)
        & ((ETP == 1) | (ETP == Y))
    )


def _whole_microbatches(share: np.ndarray, microbatches: ArrayLike) -> np.ndarray:
    """Where a replica's share is whole sequences S (to rounding), m divides S; elsewhere True."""
    whole = np.round(share)
    part = np.abs(share - whole) > 1e-9 * share
    return part | (whole % microbatches == 0)


def implied_cp(
    *, batch: ArrayLike, seq_len: int | None, x: ArrayLike, pods: ArrayLike, microbatches: ArrayLike
) -> np.ndarray:
    """The context parallelism a layout takes when none is asked for (MODEL.md §D.3): the
    smallest power of two CP that gives each data replica a whole sequence a microbatch,
    B·CP/(T·X·P) ≥ m; 1 where each has one already.

    The chapter counts tokens and never sequences: a replica's share of the batch may be part of
    one sequence, and these are the chips that share it.

    Parameters
    ----------
    batch : float or array_like
        B, the global batch [tokens].
    seq_len : int, optional
        T, the sequence length [tokens]; None: the chapter's token count (T = 1).
    x : int or array_like
        X, the data axis of a stage, its CP chips included [chips].
    pods : int or array_like
        P, the pods over the data-center network.
    microbatches : int or array_like
        m, the microbatches a step (or the sequences a microbatch, where ``microbatch_seqs``
        gives them).

    Returns
    -------
    cp : np.ndarray
        CP per layout [chips].
    """
    T = 1 if seq_len is None else seq_len
    short = np.asarray(microbatches) * T * np.asarray(x) * np.asarray(pods) / np.asarray(batch)
    # The rule ``runs`` checks, exactly: a batch a hair short of whole sequences needs the next CP.
    return (2 ** np.ceil(np.log2(np.maximum(short, 1)))).astype(np.int64)


def possible(*, given: Layout, **layout) -> None:
    """Refuse a placed layout that cannot run (``runs``, whose keywords ``layout`` are); in an
    array of them, the first that cannot, by the first rule it breaks.

    ``given`` is the layout as asked for: whether its microbatches were given names the field.

    Parameters
    ----------
    given : Layout
        The layout as asked for; its ``remat``, ``ep_overlap``, ``cp``, ``microbatches`` and
        ``microbatch_seqs``.
    **layout
        The placed layout, the keywords of ``runs`` but ``remat`` and ``ep_overlap``:
        ``model``, ``seq_len``, ``batch``, ``pods``, ``x``, ``y``, ``z``, ``virtual_stages``,
        ``microbatches`` and any of ``ep``, ``etp``, ``cp``, ``cp_kind``, ``schedule``.

    Returns
    -------
    None
        Nothing: every layout can run.

    Raises
    ------
    InputError
        Naming the field of the first rule the first layout breaks (``microbatches``, ``batch``,
        ``y``, ``z``, ``virtual_stages``, ``ep`` or ``cp``).
    """
    names = ("batch", "pods", "x", "y", "z", "virtual_stages", "microbatches", "ep", "cp")
    names += ("etp",) * (layout.get("etp") is not None)
    arrays = np.broadcast_arrays(*(np.asarray(layout.get(name, 1)) for name in names))
    placed = {**layout, **dict(zip(names, arrays))}
    ok = runs(
        **placed,
        remat=given.remat,
        ep_overlap=given.ep_overlap,
        ends_as_layers=given.ends_as_layers,
        first_stage_layers=given.first_stage_layers,
        last_stage_layers=given.last_stage_layers,
    )
    if given.cp is None:  # sequences split for the user count tokens, as the chapter does
        ok["whole"] = ok["whole"] | (placed["cp"] > 1)
    for rule, refusal in rule_refusals.REFUSALS.items():  # in the order a user would mend them
        if not ok[rule].all():
            raise refusal(first(~ok[rule]), given=given, **placed)


def stages(*, model: Model, z: ArrayLike, given: Layout) -> None:
    """Refuse more (virtual) pipeline stages than layers (see ``runs``).

    Parameters
    ----------
    model : Model
        The model; L, its layers.
    z : int or array_like
        Z, the pipeline stages.
    given : Layout
        The layout as asked for: v, its virtual stages a device, and the ends that take a
        layer's place (``ends_as_layers``).

    Returns
    -------
    None
        Nothing: every (virtual) stage gets a layer.

    Raises
    ------
    InputError
        Naming ``z`` (or ``virtual_stages``) where Z·v exceeds the model's layers.
    """
    z, virtual_stages = np.broadcast_arrays(np.asarray(z), np.asarray(given.virtual_stages))
    ends = (given.first_stage_layers, given.last_stage_layers)
    empty = ~_stages_hold_layers(
        model.layers, z, virtual_stages, given.ends_as_layers, ends, given.schedule
    )
    if empty.any():
        raise rule_refusals.stages(
            first(empty),
            model=model,
            z=z,
            virtual_stages=virtual_stages,
            given=given,
            schedule=given.schedule,
        )


def _stages_hold_layers(layers, z, virtual_stages, ends_as_layers, given, schedule) -> np.ndarray:
    """Whether every (virtual) stage gets a layer: Z·v ≤ L and the ends that take a layer's place
    (MODEL.md §A.6). With the first or the last stage's layers ``given`` (a pair, each None or
    a count), the stages between them need a layer each of the rest, which they exactly take
    where there are none between; a V, whose ends share a device, takes no such counts."""
    Z, v = np.asarray(z), np.asarray(virtual_stages)
    first, last = given
    if first is None and last is None:
        return Z * v <= layers + (Z > 1) * sum(ENDS_AS_LAYERS[ends_as_layers])
    k = (first is not None) + (last is not None)
    rest = layers - (first or 0) - (last or 0)
    between = Z - k
    ok = (between >= 0) & (between * v <= rest) & ((between > 0) | (rest == 0))
    return (Z == 1) | (ok & ~np.asarray(schedules.ends_together(schedule)))
