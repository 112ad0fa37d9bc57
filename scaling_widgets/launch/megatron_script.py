"""Megatron-LM's launch script written from degrees (docs/MODEL.md §G): one ``torchrun …
pretrain_gpt.py`` line of the flags ``megatron/training/arguments.py`` adds; and the flag names
the reader (``formats/megatron.py``) shares with it."""

from __future__ import annotations

import math

from ..cost.hardware.chip import Chip
from ..cost.stacks.megatron_lm import FEATURES, RECOMPUTE_MODULES
from ..cost.step.pipeline import ENDS_AS_LAYERS
from ..cost.transformer.shapes import Model
from .conventions import Degrees, own_features, unwritten
from .megatron_shape import shape_flags

# the ends that take a layer's place in the pipeline split, and the first and the last stage's
# layers given (transformer_block.py, get_num_layers_to_build)
ENDS_FLAGS = ("--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split")
STAGE_FLAGS = ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers")
CP_KINDS = {"p2p": "ring", "all_gather": "all-gather", "a2a": "ulysses"}
# what Megatron-LM's flags say of the options no other file says (conventions.unwritten)
SAYS = ("gradients", "Adam's moments", "fp8 weights", "features", "ends as layers", "stage layers")
SHARDING = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}


def write(d: Degrees, *, model: Model, chip: Chip) -> tuple[str, list[str], list[str]]:
    """The degrees as a script of one ``torchrun … pretrain_gpt.py`` line: its text, the knobs
    chosen for it, and what it cannot say.

    The world in nodes: ``GPUS_PER_NODE`` the greatest common divisor of a node's GPUs and the world
    (a chip without nodes: the whole world), ``NUM_NODES`` the rest. ZeRO-1 is the distributed
    optimizer, ZeRO-2 and 3 Megatron FSDP's sharding strategies; the chapter's checkpoints are
    written as selective recompute.

    Parameters
    ----------
    d : Degrees
        The layout as the frameworks count it.
    model : Model
        The model, written as its shape's flags (``shape_flags``).
    chip : Chip
        The chip; its ``node_size`` sets the GPUs a node.

    Returns
    -------
    text : str
        The script.
    chosen : list of str
        The knobs chosen for it (the microbatches), one line each.
    cannot : list of str
        What Megatron-LM cannot express (another schedule, torch.compile, the checkpoints), one
        line each.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch, ZeRO and recompute in Megatron-LM's flags).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (the flags written, each added by name;
       ``--data-parallel-sharding-strategy``'s ``optim``, ``optim_grads`` and
       ``optim_grads_params``).
    """
    chosen, cannot = [], []
    per_node = math.gcd(chip.node_size or d.world, d.world)  # whole nodes (a TPU: one host)
    layout = [
        f"--seq-length {d.seq_len}",
        f"--max-position-embeddings {d.seq_len}",
        f"--micro-batch-size {d.micro_batch}",
        f"--global-batch-size {d.global_batch}",
        f"--tensor-model-parallel-size {d.tp}",
        f"--pipeline-model-parallel-size {d.pp}",
        f"--context-parallel-size {d.cp}",
        f"--expert-model-parallel-size {d.ep}",
        f"--expert-tensor-parallel-size {d.etp}",
        "--bf16",
    ]
    if d.cp > 1:
        layout.append(f"--cp-comm-type {_their(CP_KINDS, d.cp_kind)}")
    if d.schedule not in ("1f1b", "interleaved"):
        cannot.append(f"the schedule {d.schedule}: Megatron-LM runs 1F1B or interleaved")
    if d.vp > 1 and d.schedule == "interleaved":
        layout.append(f"--num-virtual-stages-per-pipeline-rank {d.vp}")
    embedding, loss = ENDS_AS_LAYERS[d.ends_as_layers]
    slots = model.layers + embedding + loss
    if embedding + loss and (slots % d.pp or (slots // d.pp) % max(d.vp, 1)):
        cannot.append(  # Megatron-LM asserts the slots divide over the stages and their chunks
            f"the ends as layers over {d.pp} stages of {d.vp}: {slots} slots do not divide;"
            " written as layers alone"
        )
        embedding = loss = 0
    layout += [ENDS_FLAGS[0]] * embedding + [ENDS_FLAGS[1]] * loss
    for flag, n in zip(STAGE_FLAGS, (d.first_stage_layers, d.last_stage_layers), strict=True):
        layout += [f"{flag} {n}"] * (n is not None)
    layout += ["--sequence-parallel"] * d.sequence_parallel
    if d.zero == 1:
        layout.append("--use-distributed-optimizer")
    elif d.zero > 1:
        sharding = _their(SHARDING, d.zero)
        layout += ["--use-megatron-fsdp", f"--data-parallel-sharding-strategy {sharding}"]
    layout += _remat_flags(d.remat, cannot)
    layout += ["--fp8-format hybrid"] * d.fp8 + ["--fp8-param-gather"] * d.fp8_params
    layout += ["--grad-reduce-in-bf16"] * (d.grad_dtype == "bf16")
    if d.moment_dtype == "bf16":
        layout += ["--use-precision-aware-optimizer", "--exp-avg-dtype bf16",
                   "--exp-avg-sq-dtype bf16"]  # fmt: skip
    layout += ["--overlap-moe-expert-parallel-comm"] * d.ep_overlap
    layout += _feature_flags(d, cannot)
    layout += [f"--train-iters {d.steps}"] * bool(d.steps)
    if d.compile or d.compile_loss:
        cannot.append("torch.compile: Megatron-LM fuses its own kernels")
    cannot += unwritten(d, says=SAYS)
    lines = [
        "#!/bin/bash",
        f"GPUS_PER_NODE={per_node}",
        f"NUM_NODES={d.world // per_node}",
        "torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES pretrain_gpt.py \\",
    ]
    body = [*shape_flags(model), *layout]
    lines += [f"    {flag} \\" for flag in body[:-1]] + [f"    {body[-1]}"]
    if d.microbatches > 1:
        chosen.append(f"{d.microbatches} microbatches of {d.micro_batch} (global / micro / DP)")
    return "\n".join(lines) + "\n", chosen, cannot


def _remat_flags(remat: str, cannot: list) -> list[str]:
    """A policy of ours as Megatron-LM's recompute flags: its own, or the nearest it has."""
    head, _, rest = remat.partition(":")
    if remat == "none":
        return []
    if head == "full":
        method, _, count = (rest or "uniform:1").partition(":")
        return [f"--recompute-granularity {head}", f"--recompute-method {method}",
                f"--recompute-num-layers {count}"]  # fmt: skip
    mine = head == "selective" and bool(rest) and set(rest.split(",")) <= set(RECOMPUTE_MODULES)
    modules = rest.split(",") if mine else ["core_attn"]
    if not mine and remat != "selective":  # another framework's own, or the chapter's
        cannot.append(f"recompute {remat}: written as selective recompute of the attention core")
    extra = [f"--recompute-modules {' '.join(modules)}"] * (modules != ["core_attn"])
    return ["--recompute-granularity selective", *extra]


def _feature_flags(d: Degrees, cannot: list) -> list[str]:
    """The flags that set ``d.features`` (None: the release's defaults, no flag; another
    stack's said in ``cannot``)."""
    on = own_features(d, FEATURES, "Megatron-LM", cannot)
    if on is None:
        return []
    return [f.flag for name, f in FEATURES.items() if (name in on) != f.default]


def _their(names: dict, ours):
    """The framework's name of one of ours."""
    return next(theirs for theirs, mine in names.items() if mine == ours)
