"""torchtitan's job TOML, read into degrees and written from them (docs/MODEL.md §G).

The keys are those of ``torchtitan/config/job_config.py`` (``data/config_keys/``), the TOML
schema torchtitan had until it moved to Python config registries (pytorch/torchtitan#2386). A job
file gives no world size (``data_parallel_shard_degree = -1`` fills it), so reading takes the
chips; it names a model by ``[model] name`` and ``flavor``.
"""

from __future__ import annotations

import functools
import math
import pathlib

from ... import catalog
from ...cost.ground.refusals import refuse
from ...cost.hardware.chip import Chip
from ...cost.stacks.fsdp2 import FEATURES
from ...cost.step.pipeline import ENDS_AS_LAYERS, ENDS_NAMED_BY_SLOTS
from ...cost.transformer.shapes import Model
from ...presets import MODELS
from ..conventions import Degrees, own_features, unwritten
from ..keys import LaunchFile, checked_keys, data_json, flat, layers_of, schema
from ..torchtitan_older import as_current
from ..torchtitan_registry import registry_table

NAME = "torchtitan"
LABEL = "torchtitan"
ORDER = 1
FILE_NAME = "train.toml"
READS = "torchtitan's job TOML or config_registry.py"
STACK = "fsdp2"
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
MULTI_STAGE = ("interleaved", "zbv", "dualpipev")  # two chunks a device unless told otherwise
# what torchtitan's FSDP2 keeps after the forward pass, as a ZeRO stage ("default": gathered
# under pipelining, resharded otherwise; torchtitan/distributed/parallel_dims, fsdp.py)
RESHARD = {"always": 3, "never": 2}
# what [compile] compiles unless its components say (job_config.py, Compile, since 08b8b244f)
BOTH = ("model", "loss")
# keys that change the cost, read into the layout
READ = (
    "model.name", "model.flavor", "model.converters", "model.hf_assets_path",
    "training.local_batch_size",
    "training.global_batch_size", "training.seq_len", "training.steps",
    "parallelism.data_parallel_replicate_degree", "parallelism.data_parallel_shard_degree",
    "parallelism.fsdp_reshard_after_forward", "parallelism.tensor_parallel_degree",
    "parallelism.pipeline_parallel_degree", "parallelism.pipeline_parallel_schedule",
    "parallelism.pipeline_parallel_microbatch_size",
    "parallelism.pipeline_parallel_layers_per_stage", "parallelism.enable_async_tensor_parallel",
    "parallelism.pipeline_parallel_first_stage_less_layers",
    "parallelism.pipeline_parallel_last_stage_less_layers",
    "parallelism.context_parallel_degree", "parallelism.expert_parallel_degree",
    "parallelism.expert_tensor_parallel_degree", "activation_checkpoint.mode",
    "activation_checkpoint.selective_ac_option", "compile.enable", "compile.components",
    "optimizer.implementation",
)  # fmt: skip
# keys that would change the cost in ways the model does not price: refused unless at torchtitan's
# default
UNPRICED = {
    "training.enable_cpu_offload": False,
    "training.mixed_precision_param": "bfloat16",
    "parallelism.pipeline_parallel_schedule_csv": "",
    "parallelism.module_fqns_per_model_part": None,
    "parallelism.context_parallel_load_balancer": "headtail",
    "parallelism.expert_parallel_comm_backend": "standard",
}
# keys that change the cost a little, read as their nearest: said in the notes
APPROXIMATED = {
    "quantize.linear.float8.enable_fsdp_float8_all_gather": "FSDP gathers charged in bf16",
    "parallelism.context_parallel_rotate_method": "charged as a ring",
}


def detects(text: str, name: str) -> bool:
    """A TOML file: by its name, or its first table.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The file's name; "" when it has none.

    Returns
    -------
    found : bool
        Whether the name ends in ``.toml``, the text starts with a table (``[``), or it is a
        Python config registry.
    """
    return name.endswith(".toml") or text.lstrip().startswith("[") or _is_registry(text)


def read(
    text: str,
    *,
    chips: int | None,
    model=None,
    pods: int | None = None,
    entry: str | None = None,
    folder: pathlib.Path | None = None,
) -> LaunchFile:
    """A job TOML's layout on ``chips`` chips, or that of the config ``entry`` of a Python config
    registry (``torchtitan_registry``), its model the flavor's preset unless ``model`` (a preset's
    name or a ``Model``) is given.

    As torchtitan counts: DP = replicate x shard, a shard degree of -1 filling the GPUs the other
    degrees leave; a global batch of -1 is the local batch times DP; FSDP2 reshards after the
    forward pass (ZeRO-3) unless it pipelines or is told ``"never"`` (ZeRO-2), and a shard
    degree of 1 is DDP (ZeRO-0); TP shards the sequence; a multi-stage schedule runs two virtual
    stages a device unless the layers a stage say otherwise. A key left out takes torchtitan's
    default, but for ``model.flavor`` ("8B" here) and ``training.steps`` (none: no tokens).

    Parameters
    ----------
    text : str
        The job TOML.
    chips : int, optional
        The GPUs in all [chips]; a job file does not say, so None is refused.
    model : str or Model, optional
        A preset's name or a ``Model``; None: the preset of ``[model] name`` and ``flavor``.
    pods : int, optional
        Not read here: the degrees are one pod's, and ``read_config`` sets the pods.
    entry : str, optional
        The config of a registry to read (its function's name); a job TOML has none.
    folder : pathlib.Path, optional
        The file's folder, where its ``hf_assets_path`` starts: a flavor neither we nor
        torchtitan's source know is read from the ``config.json`` there.

    Returns
    -------
    read : LaunchFile
        The degrees, the model, the keys ignored, the notes, and the stack "fsdp2".

    Raises
    ------
    InputError
        Naming the key: one torchtitan has not, one whose setting the model cannot price, or
        degrees that do not divide the chips; ``chips`` when none are given.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch, ZeRO and recompute in torchtitan's keys).
    .. [2] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/config/job_config.py`` (``Training``, ``Parallelism``,
       ``ActivationCheckpoint``, ``Compile``: the keys and their defaults).
    .. [3] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/distributed/parallel_dims.py`` (``ParallelDims._validate``: a shard degree of
       -1 fills the world).
    .. [4] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/distributed/pipeline_parallel.py`` (``pipeline_llm``: ceil((L + 2)/layers a
       stage) virtual stages, else two a rank for a multi-stage schedule).
    .. [5] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/models/llama3/infra/parallelize.py`` (``apply_fsdp``: the policy "default"
       reshards unless pipelining; ``apply_tp``: the norms sequence-parallel).
    .. [6] ``pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a,
       torchtitan/components/optimizer/optimizer.py`` (``implementation``: "fused" by default,
       "foreach", "for-loop", "fused_opt_states_bf16").
    """
    table, ignored, notes = _table(text, entry)
    got, costless, approximated = checked_keys(NAME, table, READ, UNPRICED, APPROXIMATED)
    ignored, notes = [*ignored, *costless], [*notes, *approximated]
    if chips is None:
        raise refuse("chips", "given: a torchtitan job file does not say how many GPUs", None)
    hf = got.get("model.hf_assets_path")
    beside = folder / hf / "config.json" if folder is not None and hf else None
    model = model or _preset(got.get("model.name", "llama3"), got.get("model.flavor", "8B"), beside)
    converters = got.get("model.converters", [])
    if any(c != "float8" for c in converters):
        raise refuse(
            "model.converters", "['float8'] or none (mx formats are not priced)", converters
        )
    one = {
        k.removeprefix("parallelism."): v for k, v in got.items() if k.startswith("parallelism.")
    }
    tp, pp, cp = (one.get(f"{k}_parallel_degree", 1) for k in ("tensor", "pipeline", "context"))
    replicate, shard = _data_degrees(one, chips, tp=tp, pp=pp, cp=cp)
    dp, ep = replicate * shard, one.get("expert_parallel_degree", 1)
    schedule = _schedule(one.get("pipeline_parallel_schedule", "1F1B")) if pp > 1 else "1f1b"
    local = got.get("training.local_batch_size", 8)
    global_batch = got.get("training.global_batch_size", -1)
    global_batch = local * dp if global_batch == -1 else global_batch
    if pp > 1 and global_batch != local * dp:
        notes.append("gradient accumulation over pipeline flushes: charged as one pipeline")
    reshard = one.get("fsdp_reshard_after_forward", "default")
    optimizer_impl, moment_dtype = _optimizer(got.get("optimizer.implementation", "fused"), notes)
    compiled, components = got.get("compile.enable", False), got.get("compile.components", BOTH)
    model_compiled = compiled and "model" in components
    ends = _ends(one, notes) if pp > 1 else "none"
    degrees = Degrees(
        world=chips,
        pods=1,
        dp=dp,
        cp=cp,
        tp=tp,
        pp=pp,
        vp=_chunks(one, schedule, pp, layers_of(model) + _less_layers(one) * (pp > 1)),
        ep=ep,
        etp=one.get("expert_tensor_parallel_degree", 1) if ep > 1 else tp,
        zero=0 if shard == 1 else RESHARD.get(reshard, 2 if pp > 1 else 3),
        seq_len=got.get("training.seq_len", 2048),
        global_batch=global_batch,
        micro_batch=one.get("pipeline_parallel_microbatch_size", 1) if pp > 1 else local,
        schedule=schedule,
        remat=_remat(got),
        sequence_parallel=tp > 1,  # torchtitan's TP always shards the sequence
        fp8="float8" in converters,
        compile=model_compiled,
        compile_loss=_loss_compiled(compiled, components),
        steps=got.get("training.steps"),
        optimizer_impl=optimizer_impl,
        moment_dtype=moment_dtype,
        ends_as_layers=ends,
        features=_features(got, model_compiled),
    )
    if replicate > 1 and shard > 1:
        notes.append("HSDP: replicas of a sharded group, charged as ZeRO over all data ranks")
    return LaunchFile(NAME, degrees, model, tuple(ignored), tuple(notes), {"stack": STACK})


def _table(text: str, entry: str | None) -> tuple[dict, list, list]:
    """The file's keys, flat as the job TOML's: the TOML's own, or a registry config's as
    ``torchtitan_registry`` reads it; with what costs nothing and what was approximated."""
    if _is_registry(text):
        return registry_table(text, entry)
    if entry is not None:
        raise refuse(
            "config", "FILE alone for a job TOML (FILE:NAME names a registry's config)", entry
        )
    import tomllib  # here: its parser loads only when a TOML is read (2 ms of every start)

    try:
        table = flat(tomllib.loads(text))
    except tomllib.TOMLDecodeError as err:
        raise refuse("config", f"a TOML file torchtitan reads ({err})", "a file") from None
    return as_current(table, schema(NAME))


def _is_registry(text: str) -> bool:
    """A Python config registry: functions that build a ``Trainer.Config``."""
    return "-> Trainer.Config" in text


def _less_layers(one: dict) -> int:
    """The layers' places the ends take in torchtitan's count of stages, as written (1 each by
    default), whatever the model charges of them."""
    return sum(
        one.get(f"pipeline_parallel_{end}_stage_less_layers", 1) for end in ("first", "last")
    )


def _ends(one: dict, notes: list) -> str:
    """The ends that take a layer's place in torchtitan's pipeline split: the embedding the
    first stage's ``first_stage_less_layers`` (1 by default), the output layer the last's
    (``distributed/pipeline_parallel.py``, since 3c84ce095, 2025-07-30); more than one charged as
    one, and said."""
    less = [one.get(f"pipeline_parallel_{end}_stage_less_layers", 1) for end in ("first", "last")]
    if max(less) > 1:
        notes.append(f"stages {less[0]} and {less[1]} layers lighter at the ends: charged as one")
    embedding, loss = (min(n, 1) for n in less)
    return ENDS_NAMED_BY_SLOTS[int(embedding), int(loss)]


def _data_degrees(one: dict, chips: int, *, tp: int, pp: int, cp: int) -> tuple[int, int]:
    """The data-parallel replicas and the FSDP shard (-1: what fills the GPUs), checked against
    the GPUs and the other degrees."""
    replicate, shard = (
        one.get("data_parallel_replicate_degree", 1),
        one.get("data_parallel_shard_degree", -1),
    )
    for axis, degree in (("tensor", tp), ("pipeline", pp), ("context", cp)):
        if degree < 1 or chips % degree:
            key = f"parallelism.{axis}_parallel_degree"
            raise refuse(key, f"a degree dividing the {chips:,} GPUs", degree)
    others = replicate * cp * tp * pp
    if shard == -1 and chips % others == 0:
        shard = chips // others
    if shard * others != chips:
        raise refuse(
            "parallelism.data_parallel_shard_degree",
            f"{chips / others:g} to fill the {chips:,} GPUs with the other degrees (or -1)"
            if chips % others == 0
            else f"a degree that fills {chips:,} GPUs, which the other degrees' {others} cannot",
            shard,
        )
    return replicate, shard


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
    # HSDP: a shard within each group of pods FSDP spans, replicas across the groups (§B.9)
    shard = d.dp // d.pods * d.fsdp_pods if d.zero else 1
    replicate = d.pods // d.fsdp_pods if d.zero else d.dp
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


def _preset(name: str, flavor: str, beside: pathlib.Path | None = None) -> str | Model:
    """The model of torchtitan's ``name`` and ``flavor``: our preset where we have it, else the
    flavor as torchtitan's source defines it (``data/torchtitan_flavors.json``), else the
    Hugging Face ``config.json`` of the job's ``hf_assets_path`` (``beside``) where it is there."""
    for preset, known in FLAVORS.items():
        if known == (name, flavor):  # a flavor without MTP modules (num_mtp_layers' default)
            return catalog.preset_with_mtp(preset, 0)
    if flavor == CUSTOM and name in MODELS:  # written by us for a model torchtitan has not
        return name
    shipped = _shipped_flavors()
    if (name, flavor) in shipped:
        return catalog.model_from_json(shipped[name, flavor])
    if beside is not None and beside.is_file():  # a flavor of the team's own, its HF config there
        return catalog.model_from_json(beside)
    known = sorted({f"{n} {f}" for n, f in shipped})
    raise refuse(
        "model.flavor",
        f"a flavor torchtitan ships ({', '.join(known)}), or give the model with --model"
        " or --model-file",
        f"{name} {flavor}",
    )


@functools.cache
def _shipped_flavors() -> dict:
    """(family, flavor) -> the model's keys, from torchtitan's source (the newer commit's where
    the two differ: the first listed)."""
    flavors = {}
    for entry in data_json("torchtitan_flavors.json")["flavors"]:
        flavors.setdefault((entry["family"], entry["flavor"]), entry["model"])
    return flavors


def _schedule(name: str) -> str:
    for ours, theirs in SCHEDULES.items():
        if theirs.lower() == name.lower():
            return ours
    raise refuse(
        "parallelism.pipeline_parallel_schedule", f"one of {', '.join(SCHEDULES.values())}", name
    )


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


def _chunks(one: dict, schedule: str, pp: int, layers: int) -> int:
    """Virtual stages a device: from the layers a stage (``layers`` counting the ends that take
    a layer's place), else two for a multi-stage schedule."""
    if pp == 1:
        return 1
    per_stage = one.get("pipeline_parallel_layers_per_stage")
    if per_stage is None:
        return 2 if schedule in MULTI_STAGE else 1
    stages = math.ceil(layers / per_stage)
    if stages % pp:
        raise refuse(
            "parallelism.pipeline_parallel_layers_per_stage",
            f"a count giving a multiple of the {pp} stages",
            per_stage,
        )
    return stages // pp


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


def _features(got: dict, compiled: bool) -> str | None:
    """Its overlaps as the keys set them (``stacks/fsdp2.py``'s FEATURES), "none" for none; None
    where the file names none of their keys: the release's defaults. One that runs only compiled
    (async TP) is refused without the model compiled, as torchtitan refuses it."""
    if not any(f.flag in got for f in FEATURES.values()):
        return None
    on = [name for name, f in FEATURES.items() if got.get(f.flag, f.default)]
    for f in (FEATURES[name] for name in on):
        if f.compiled and not compiled:
            raise refuse(f.flag, "false unless compile.enable with the model among"
                         " compile.components (it runs under torch.compile)", True)  # fmt: skip
    return ",".join(on) or "none"


def _unsaid(d: Degrees, implementation: str) -> list:
    """What a job TOML cannot say of the degrees' parallelism and options, one line each."""
    cannot = ["TP without sequence parallelism: torchtitan's TP always shards it"] * (
        d.tp > 1 and not d.sequence_parallel
    )
    cannot += [f"CP by {d.cp_kind}: torchtitan's CP is a ring"] * (d.cp > 1 and d.cp_kind != "ring")
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


def _loss_compiled(compiled: bool, components) -> bool | None:
    """Whether the loss is compiled where that differs from the layers; None: as they are."""
    model, loss = ("model" in components, "loss" in components)
    return loss if compiled and model != loss else None


def _compile_lines(d: Degrees) -> list[str]:
    """[compile]'s keys: on where the layers or the loss are compiled, with the components."""
    loss = d.compile if d.compile_loss is None else d.compile_loss  # with the layers: default
    components = [name for name, on in zip(BOTH, (d.compile, loss)) if on]
    if components == list(BOTH):
        return ["enable = true"]
    listed = ", ".join(f'"{name}"' for name in components)
    return ["enable = true", f"components = [{listed}]"] if components else ["enable = false"]


def _optimizer(implementation: str, notes: list) -> tuple:
    """``optimizer.implementation`` as ours (MODEL.md §E.1, §E.4): "foreach" keeps its temporary
    at the step, "fused" (the default) none, and "fused_opt_states_bf16" keeps Adam's moments in
    bf16 (torchtitan since 2026); "for-loop" makes a temporary of one parameter at a time,
    charged as fused. The implementation (None: fused) and the moments' dtype (None: fp32)."""
    allowed = ("fused", "foreach", "for-loop", "fused_opt_states_bf16")
    if implementation not in allowed:
        words = ", ".join(map(repr, allowed[:-1])) + f" or {allowed[-1]!r}"
        raise refuse("optimizer.implementation", words, implementation)
    if implementation == "for-loop":
        notes.append("optimizer.implementation 'for-loop': one parameter's temporary, not charged")
    foreach = "foreach" if implementation == "foreach" else None
    return foreach, "bf16" if implementation == "fused_opt_states_bf16" else None


def _remat(got: dict) -> str:
    """activation_checkpoint as a policy of ours: none, full, selective by op ("selective", the
    stack's own) or every Nth layer ("selective:N", releases before March 2026)."""
    mode = got.get("activation_checkpoint.mode", "selective")
    option = str(got.get("activation_checkpoint.selective_ac_option", "2"))
    if mode not in ("none", "selective", "full"):
        allowed = "'none', 'selective' or 'full' (memory_budget is not priced)"
        raise refuse("activation_checkpoint.mode", allowed, mode)
    if mode != "selective" or option == "op":
        return mode
    if not (option.isdigit() and int(option) >= 1):
        allowed = "'op' or a whole number N >= 1 (every Nth layer)"
        raise refuse("activation_checkpoint.selective_ac_option", allowed, option)
    return f"selective:{option}"
