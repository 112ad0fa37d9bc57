"""torchtitan's job TOML written from degrees (docs/MODEL.md §G): the keys of
``torchtitan/config/job_config.py``; and the names the reader (``formats/torchtitan.py``) shares
with it: torchtitan's model flavors of our presets, its schedules, what [compile] compiles."""

from __future__ import annotations

import math

from .. import catalog
from ..cost.hardware.chip import Chip
from ..cost.stacks.fsdp2 import FEATURES
from ..cost.step.pipeline import ENDS_AS_LAYERS
from ..cost.transformer.shapes import Model
from .conventions import Degrees, own_features, unwritten

# our presets as torchtitan's model name and flavor (torchtitan/models/*/__init__.py)
FLAVORS = {
    "llama-2-7b": ("llama2", "7B"),  # torchtitan's llama2 of 2024 (models/llama/__init__.py)
    "llama-2-13b": ("llama2", "13B"),
    "llama-2-70b": ("llama2", "70B"),
    "llama-3-8b": ("llama3", "8B"),
    "llama-3-70b": ("llama3", "70B"),
    "llama-3-405b": ("llama3", "405B"),
    "qwen3-30b-a3b": ("qwen3", "30B-A3B"),
    "qwen3-235b-a22b": ("qwen3", "235B-A22B"),
    "deepseek-v3": ("deepseek_v3", "671B"),
}
CUSTOM = "custom"  # the flavor we write for a model torchtitan has none of
# torch.distributed.pipelining's schedule names (get_schedule_class) and ours
SCHEDULES = {
    "gpipe": "GPipe",
    "1f1b": "1F1B",
    "interleaved": "Interleaved1F1B",
    "zbv": "ZBVZeroBubble",
    "dualpipev": "DualPipeV",
}
# what [compile] compiles unless its components say (job_config.py, Compile, since 08b8b244f)
BOTH = ("model", "loss")


def write(d: Degrees, *, model: Model, chip: Chip) -> tuple[str, list[str], list[str]]:
    """The degrees as a job TOML: its text, the knobs chosen for it, and what it cannot say.

    Data parallelism is HSDP's replicas over the pods and a shard within each (ZeRO 2 or 3), or
    replicas alone (ZeRO-0); ZeRO-1 is written as ZeRO-2. Pipelined, the local batch is a rank's
    share of the global batch, cut into microbatches of ``d.micro_batch`` sequences; otherwise it is
    one microbatch, and global/(local·DP) of them are accumulated. More than two virtual stages a
    device are written as the layers a stage, where ceil(S/(Z·v)) gives back Z·v stages, S the
    layers and the ends that take a layer's place (torchtitan's default: both).

    Parameters
    ----------
    d : Degrees
        The layout as the frameworks count it.
    model : Model
        The model, written as torchtitan's name and flavor (``FLAVORS``; else "custom").
    chip : Chip
        The chip; not read (a job file names no hardware).

    Returns
    -------
    text : str
        The job TOML.
    chosen : list of str
        The knobs chosen for it (the layers a stage, the microbatches), one line each.
    cannot : list of str
        What torchtitan cannot express (ZeRO-1, another schedule, TP without sequence
        parallelism, CP other than a ring…), one line each.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch, ZeRO and recompute in torchtitan's keys).
    .. [2] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/config/job_config.py`` (``Parallelism``: the keys written).
    .. [3] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/distributed/pipeline_parallel.py`` (``pipeline_llm``: the virtual stages of
       ``pipeline_parallel_layers_per_stage``).
    """
    chosen, cannot, layers, mtp = [], [], model.layers, model.mtp_layers
    model = catalog.model_name_of(model) or model.name
    name, flavor = FLAVORS.get(model, (model, CUSTOM))
    if flavor == CUSTOM:
        cannot.append(f"the model {model}: torchtitan has no flavor of it; register one")
    if mtp:
        cannot.append(f"{mtp} MTP module(s): a job TOML's flavor has none (num_mtp_layers)")
    if d.zero == 1:
        cannot.append("ZeRO-1: FSDP2 shards the gradients too; written as ZeRO-2")
    # HSDP: a shard within each group of pods FSDP spans, replicas across the groups (§B.9);
    # a pipeline across pods leaves their groups as the replicas (§B.10)
    replicas = d.pods // (d.pp_pods * d.tp_pods)  # and TP's groups of pods (§B.11)
    shard = d.dp // replicas * d.fsdp_pods if d.zero else 1
    replicate = replicas // d.fsdp_pods if d.zero else d.dp
    if d.schedule not in SCHEDULES:
        cannot.append(f"the schedule {d.schedule}; written as 1F1B")
    schedule = SCHEDULES.get(d.schedule, "1F1B")
    per_rank = d.global_batch // d.dp
    lines = [
        "[model]",
        f'name = "{name}"',
        f'flavor = "{flavor}"',
        f"converters = {['float8'] if d.fp8 else []}".replace("'", '"'),
        "",
        "[training]",
        f"local_batch_size = {per_rank if d.pp > 1 else d.micro_batch}",
        f"global_batch_size = {d.global_batch}",
        f"seq_len = {d.seq_len}",
        "",
        "[parallelism]",
        f"data_parallel_replicate_degree = {replicate}",
        f"data_parallel_shard_degree = {shard}",
        f'fsdp_reshard_after_forward = "{"always" if d.zero == 3 else "never"}"',
        f"tensor_parallel_degree = {d.tp}",
        f"pipeline_parallel_degree = {d.pp}",
        f'pipeline_parallel_schedule = "{schedule}"',
        f"pipeline_parallel_microbatch_size = {d.micro_batch}",
        f"context_parallel_degree = {d.cp}",
        f"expert_parallel_degree = {d.ep}",
        f"expert_tensor_parallel_degree = {1 if d.etp == 1 and d.ep > 1 else d.tp}",
    ]
    on = own_features(d, FEATURES, "torchtitan", cannot)  # None: the defaults, unwritten
    if on is not None:
        lines += [f"{f.flag.removeprefix('parallelism.')} = {'true' if name in on else 'false'}"
                  for name, f in FEATURES.items()]  # fmt: skip
    lines += _split_lines(d, layers, chosen, cannot)
    implementation = _implementation(d)
    cannot += _unsaid(d, implementation)
    lines += ["", "[activation_checkpoint]", *_remat_lines(d.remat, cannot)]
    lines += ["", "[optimizer]", f'implementation = "{implementation}"'] * (
        implementation != "fused"
    )
    lines += ["", "[compile]", *_compile_lines(d)]
    if d.steps:
        lines.insert(lines.index("[parallelism]") - 1, f"steps = {d.steps}")
    if d.pp == 1 and d.microbatches > 1:
        chosen.append(f"{d.microbatches} microbatches accumulated (global / local / DP)")
    return "\n".join(lines) + "\n", chosen, cannot


def _split_lines(d: Degrees, layers: int, chosen: list, cannot: list) -> list:
    """The pipeline split's keys: the ends that take a layer's place where they are not
    torchtitan's default (both), and more than two virtual stages a device as the layers a stage,
    where ceil(S/(Z·v)) gives back Z·v stages of the S slots."""
    embedding, loss = ENDS_AS_LAYERS[d.ends_as_layers]
    lines = []
    if d.pp > 1 and d.ends_as_layers != "both":
        lines += [
            f"pipeline_parallel_first_stage_less_layers = {embedding}",
            f"pipeline_parallel_last_stage_less_layers = {loss}",
        ]
    slots = layers + embedding + loss
    if d.pp > 1 and d.vp > 2:
        per_stage = math.ceil(slots / (d.pp * d.vp))
        if math.ceil(slots / per_stage) == d.pp * d.vp:
            lines.append(f"pipeline_parallel_layers_per_stage = {per_stage}")
            chosen.append(f"{per_stage} layers a stage, for {d.vp} chunks a device")
        else:
            other = "none" if d.ends_as_layers == "both" else "both"
            cannot.append(
                f"{d.vp} chunks a device over {layers} layers (ends_as_layers '{other}' may split)"
            )
    return lines


def _remat_lines(remat: str, cannot: list) -> list:
    """[activation_checkpoint] for a policy of ours: torchtitan's own, or its nearest."""
    head, _, option = remat.partition(":")
    if remat in ("none", "full") or (head == "selective" and option.isdigit()):
        lines = [f'mode = "{head}"']
        return lines + ([f'selective_ac_option = "{option}"'] if option else [])
    if remat not in ("selective", "selective:op"):
        nearest = "full" if head == "full" else "selective"
        cannot.append(f"recompute {remat}; written as torchtitan's {nearest}")
        if nearest == "full":
            return ['mode = "full"']
    return ['mode = "selective"', 'selective_ac_option = "op"']


def _unsaid(d: Degrees, implementation: str) -> list:
    """What a job TOML cannot say of the degrees' parallelism and options, one line each."""
    cannot = ["TP without sequence parallelism: torchtitan's TP always shards it"] * (
        d.tp > 1 and not d.sequence_parallel
    )
    cannot += [
        f"CP by {d.cp_kind}: torchtitan's TOML names no CP kind; its CP is a ring under SDPA and"
        " an all-gather under a FlexAttention model flavor"
    ] * (d.cp > 1 and d.cp_kind != "ring")
    says = ("foreach", "ends as layers", "features", "pods")
    says += ("Adam's moments",) * ("bf16" in implementation)
    cannot += unwritten(d, says=says)
    return cannot + ["pairing the expert all-to-alls (Megatron-LM's combined 1F1B)"] * d.ep_overlap


def _implementation(d: Degrees) -> str:
    """``optimizer.implementation`` for the degrees: foreach, or fused with the moments in bf16
    where they are, else fused (MODEL.md §E.1, §E.4)."""
    if d.optimizer_impl == "foreach":
        return "foreach"
    return "fused_opt_states_bf16" if d.moment_dtype == "bf16" else "fused"


def _compile_lines(d: Degrees) -> list[str]:
    """[compile]'s keys: on where the layers or the loss are compiled, with the components."""
    loss = d.compile if d.compile_loss is None else d.compile_loss  # with the layers: default
    components = [name for name, on in zip(BOTH, (d.compile, loss)) if on]
    if components == list(BOTH):
        return ["enable = true"]
    listed = ", ".join(f'"{name}"' for name in components)
    return ["enable = true", f"components = [{listed}]"] if components else ["enable = false"]
