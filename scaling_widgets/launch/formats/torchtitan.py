"""torchtitan's job TOML, read into degrees and written from them (docs/MODEL.md §G).

The keys are those of ``torchtitan/config/job_config.py`` (``data/config_keys/``), the TOML
schema torchtitan had until it moved to Python config registries (pytorch/torchtitan#2386). A job
file gives no world size (``data_parallel_shard_degree = -1`` fills it), so reading takes the
chips; it names a model by ``[model] name`` and ``flavor``. The writer is
``launch/torchtitan_toml.py``.
"""

from __future__ import annotations

import functools
import math
import pathlib

from ... import catalog
from ...cost.ground.refusals import refuse
from ...cost.stacks.fsdp2 import FEATURES
from ...cost.step.pipeline import ENDS_NAMED_BY_SLOTS
from ...cost.transformer.shapes import Model
from ...presets import MODELS
from ..conventions import Degrees
from ..keys import LaunchFile, checked_keys, data_json, flat, layers_of, schema
from ..torchtitan_older import as_current
from ..torchtitan_registry import registry_table
from ..torchtitan_toml import BOTH, CUSTOM, FLAVORS, SCHEDULES
from ..torchtitan_toml import write as write  # the format's writer, in a file of its own

NAME = "torchtitan"
LABEL = "torchtitan"
ORDER = 1
FILE_NAME = "train.toml"
READS = "torchtitan's job TOML or config_registry.py"
STACK = "fsdp2"
MULTI_STAGE = ("interleaved", "zbv", "dualpipev")  # two chunks a device unless told otherwise
# what torchtitan's FSDP2 keeps after the forward pass, as a ZeRO stage ("default": gathered
# under pipelining, resharded otherwise; torchtitan/distributed/parallel_dims, fsdp.py)
RESHARD = {"always": 3, "never": 2}
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


def _loss_compiled(compiled: bool, components) -> bool | None:
    """Whether the loss is compiled where that differs from the layers; None: as they are."""
    model, loss = ("model" in components, "loss" in components)
    return loss if compiled and model != loss else None


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
