"""Megatron-LM's command line, read into degrees and written from them (docs/MODEL.md §G): a file
of flags, or a shell script whose ``torchrun … pretrain_gpt.py`` line carries them. The flags are
those ``megatron/training/arguments.py`` adds (``data/config_keys/``). The writer is
``launch/megatron_script.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

from ...cost.ground.refusals import InputError, refuse
from ...cost.stacks.megatron_lm import FEATURES, RECOMPUTE_MODULES
from ...cost.step.pipeline import ENDS_AS_LAYERS, ENDS_NAMED_BY_SLOTS
from ...cost.transformer.recompute import is_policy
from ..conventions import Degrees
from ..deepspeed_config import overlap_comm
from ..keys import LaunchFile, checked_keys, data_json, layers_of, yaml_loaded
from ..megatron_script import CP_KINDS, ENDS_FLAGS, SHARDING, STAGE_FLAGS
from ..megatron_script import write as write  # the format's writer, in a file of its own
from ..megatron_shape import model_of, whole
from ..megatron_yaml import flag_words, is_yaml_cfg
from ..shell import launch_args

NAME = "megatron"
LABEL = "Megatron-LM"
ORDER = 2
FILE_NAME = "pretrain.sh"
READS = "a Megatron-LM script, flags file or YAML"
STACK = "megatron-lm"
PROGRAM = r"pretrain_\w+\.py$"
SHAPE = ("--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
         "--num-query-groups", "--group-query-attention", "--kv-channels", "--swiglu",
         "--quick-geglu", "--untie-embeddings-and-output-weights", "--vocab-size",
         "--tokenizer-type", "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
         "--moe-shared-expert-intermediate-size", "--moe-layer-freq", "--multi-latent-attention",
         "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
         "--v-head-dim", "--mtp-num-layers")  # fmt: skip
# Megatron-DeepSpeed's (microsoft/Megatron-DeepSpeed@f4157be, megatron/arguments.py): DeepSpeed's
# ZeRO stage, its engine without a pipeline, and full recompute by the older flag
DS_LAYOUT = ("--zero-stage", "--no-pipeline-parallel", "--checkpoint-activations")
LAYOUT = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size",
          "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
          "--context-parallel-size", "--cp-comm-type", "--expert-model-parallel-size",
          "--expert-tensor-parallel-size", "--sequence-parallel", "--use-distributed-optimizer",
          "--use-megatron-fsdp", "--data-parallel-sharding-strategy", "--micro-batch-size",
          "--global-batch-size", "--seq-length", "--recompute-granularity",
          "--recompute-activations", "--recompute-method", "--recompute-num-layers",
          "--fp8-format", "--overlap-moe-expert-parallel-comm", "--train-iters",
          "--train-samples", "--recompute-modules", "--grad-reduce-in-bf16",
          "--fp8-param-gather", "--use-precision-aware-optimizer", "--exp-avg-dtype",
          "--exp-avg-sq-dtype", "--main-grads-dtype", *ENDS_FLAGS, *STAGE_FLAGS,
          *(f.flag for f in FEATURES.values()))  # fmt: skip
# flags the model cannot price: refused when given (absent, a flag reads as False)
UNPRICED = {
    flag: False
    for flag in (
        "--cpu-offloading",
        "--fp4-format",
        "--hierarchical-context-parallel-sizes",
    )
}
APPROXIMATED = {
    "--step-batch-size-schedule": "the final global batch charged",
    "--rampup-batch-size": "the final global batch charged",
    "--delay-wgrad-compute": "weight gradients charged in their pass",
}


def flags(words: list[str]) -> dict:
    """``--flag value…`` words as flag -> value (one word), values (several) or True (none).

    Parameters
    ----------
    words : list of str
        Command-line words; ``--flag=value`` is read as ``--flag value``, and words before the
        first flag are left out.

    Returns
    -------
    flags : dict
        Flag, its dashes kept -> a str, a list of str, or True.
    """
    out, name = {}, None
    for word in words:
        if word.startswith("--"):
            name, _, value = word.partition("=")
            out[name] = value or True
        elif name is not None:
            held = out[name]
            out[name] = (
                word if held is True else [*([held] if isinstance(held, str) else held), word]
            )
    return out


def detects(text: str, name: str) -> bool:
    """A script that runs ``pretrain_*.py``, or Megatron-LM's flags.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The file's name; not read: the text alone says.

    Returns
    -------
    found : bool
        Whether the text names ``pretrain_``, ``--num-layers`` or
        ``--tensor-model-parallel-size``.
    """
    return is_yaml_cfg(text) or any(
        word in text for word in ("pretrain_", "--num-layers", "--tensor-model-parallel-size")
    )


def read(
    text: str, *, chips: int | None, model=None, pods: int | None = None, folder: Path | None = None
) -> LaunchFile:
    """The layout of a Megatron-LM launch: the world from torchrun's ``--nproc_per_node`` x
    ``--nnodes`` unless ``chips`` is given; the model a preset of the same shape, the user's
    ``model``, or one built from the flags.

    As Megatron-LM counts: DP = world/(TP·PP·CP); the global batch, left out, is the micro
    batch times DP; ``--recompute-activations`` is selective recompute; the experts' TP, left
    out, is TP; virtual stages make the schedule interleaved. A micro batch left out is one
    sequence and a sequence length left out 2048 (Megatron-LM has no default for either).

    Parameters
    ----------
    text : str
        A script whose launch line runs ``pretrain_*.py``, or a file of flags.
    chips : int, optional
        The GPUs in all [chips]; None: torchrun's ``--nproc_per_node`` x ``--nnodes`` (each 1
        when the line does not say).
    model : str or Model, optional
        A preset's name or a ``Model``; None: the preset of the flags' shape, else a model built
        from them (``model_of``).
    pods : int, optional
        Not read here: the degrees are one pod's, and ``read_config`` sets the pods.
    folder : Path, optional
        The script's folder, where a ``--yaml-cfg`` YAML it names is read from (by its name).

    Returns
    -------
    read : LaunchFile
        The degrees, the model, the flags ignored, the notes, and the stack "megatron-lm".

    Raises
    ------
    InputError
        Naming the flag: one Megatron-LM has not, one the model cannot price, or degrees that do
        not divide the world.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch, ZeRO and recompute in Megatron-LM's flags).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (``parse_args``: the world from ``WORLD_SIZE``;
       ``validate_args``: data_parallel_size, the default global batch and experts' TP,
       ``--recompute-activations`` as selective; the flags read, each added by name).
    .. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
       megatron/training/arguments.py`` (``_add_distributed_args``:
       ``--data-parallel-sharding-strategy``, by default ``optim_grads_params``).
    .. [4] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/core/transformer/transformer_config.py`` (``cp_comm_type``: "p2p",
       "all_gather", "a2a").
    .. [5] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/core/pipeline_parallel/schedules.py`` (``get_forward_backward_func``: virtual
       stages run the interleaved schedule).
    """
    branches: list[str] = []
    unset: list[str] = []
    given = _model_args(text)
    launch = ([], given) if given is not None else launch_args(text, PROGRAM, branches, unset)
    launch = _yaml_cfg(text, launch, folder, branches)
    try:
        read = _read(*launch, chips=chips, model=model, notes=branches)
    except InputError as err:  # a flag the cost needs may hold a variable the script never set
        words = launch[1]
        valueless = {w for w, after in zip(words, [*words[1:], "--"]) if after.startswith("--")}
        if not unset or not (err.field in valueless or "given" in err.allowed):
            raise
        said = ", ".join(unset[:3]) + (" and more" if len(unset) > 3 else "")
        raise refuse(err.field, err.allowed, f"{err.got}, the script using {said} unset") from None
    return _with_deepspeed_config(read, text, launch[1], folder)


def _with_deepspeed_config(read: LaunchFile, text: str, words: list, folder) -> LaunchFile:
    """Megatron-DeepSpeed's features as its DeepSpeed config sets them (``overlap_comm``);
    another launch as it was read."""
    if read.extra["stack"] != "deepspeed":
        return read
    notes = list(read.notes)
    degrees = dataclasses.replace(read.degrees, features=overlap_comm(text, words, folder, notes))
    return dataclasses.replace(read, degrees=degrees, notes=tuple(notes))


def _read(before: list, after: list, *, chips, model, notes: list) -> LaunchFile:
    """The layout of a launch's words: the launcher's (``before``) and the program's; a launch
    by DeepSpeed is Megatron-DeepSpeed's, its own flags known beside Megatron-LM's."""
    ds = _deepspeed(before, after)
    got, ignored, approximated = checked_keys(
        NAME, flags(after), SHAPE + LAYOUT + DS_LAYOUT * ds, UNPRICED, APPROXIMATED,
        also=_deepspeed_flags() if ds else frozenset(),
    )  # fmt: skip
    notes = notes + approximated
    world, tp, pp, cp = _world(before, got, chips, ds)
    dp = world // (tp * pp * cp)
    micro = whole(got, "--micro-batch-size", 1)
    global_batch = whole(got, "--global-batch-size", micro * dp)
    ep = whole(got, "--expert-model-parallel-size", 1)
    model = model or model_of(got)
    ends = _ends(got) if pp > 1 else "none"
    first, last = (whole(got, flag, 0) or None if pp > 1 else None for flag in STAGE_FLAGS)
    layers = layers_of(model) + sum(ENDS_AS_LAYERS[ends])  # the split's slots
    degrees = Degrees(
        world=world,
        pods=1,
        dp=dp,
        cp=cp,
        tp=tp,
        pp=pp,
        vp=_chunks(got, pp, layers),
        ep=ep,
        etp=whole(got, "--expert-tensor-parallel-size", tp),
        zero=whole(got, "--zero-stage", 1) if ds else _zero(got),
        seq_len=whole(got, "--seq-length", 2048),
        global_batch=global_batch,
        micro_batch=micro,
        schedule="interleaved" if _chunks(got, pp, layers) > 1 else "1f1b",
        remat=_remat(got),
        sequence_parallel="--sequence-parallel" in got and tp > 1,
        ep_overlap="--overlap-moe-expert-parallel-comm" in got,
        fp8="--fp8-format" in got,
        grad_dtype="bf16" if "--grad-reduce-in-bf16" in got else _aware(got, "--main-grads-dtype"),
        fp8_params="--fp8-param-gather" in got,
        moment_dtype=_moments(got, notes),
        cp_kind=_cp_kind(got.get("--cp-comm-type", "p2p")),
        features=_features(got),
        ends_as_layers=ends,
        first_stage_layers=first,
        last_stage_layers=last,
        steps=_steps(got, global_batch),
    )
    stack = "deepspeed" if ds else STACK
    return LaunchFile(NAME, degrees, model, tuple(ignored), tuple(notes), {"stack": stack})


def _yaml_cfg(text: str, launch: tuple, folder: Path | None, notes: list) -> tuple:
    """The launch's words, or those of the ``--yaml-cfg`` YAML it is or names (found beside the
    script): Megatron-LM then ignores the line's own flags (arguments.py, load_yaml)."""
    named = flags(launch[1]).get("--yaml-cfg")
    if named is None and not is_yaml_cfg(text):
        return launch
    if named is not None:
        path = None if folder is None else folder / str(named).rsplit("/", 1)[-1]
        if path is None or not path.is_file():
            raise refuse("--yaml-cfg", "a YAML beside the script (its settings replace the"
                         " line's)", f"{named}, not beside it")  # fmt: skip
        text = path.read_text(encoding="utf-8")
        said = "its settings; the line's flags ignored, as Megatron does"
        notes.append(f"--yaml-cfg {path.name}: {said}")
    words, unpriced = flag_words(text)
    if unpriced:
        notes.append(f"{len(unpriced)} keys of the YAML set no flag read here"
                     f" ({', '.join(unpriced[:3])}, ...): not priced")  # fmt: skip
    return launch[0], words


def _world(before: list, got: dict, chips: int | None, ds: bool) -> tuple[int, int, int, int]:
    """The GPUs (``chips``, else the launcher's per node x nodes) and the TP, PP and CP degrees,
    the world refused where they do not divide it."""
    launcher = flags(before)
    per_node, nodes = ("--num_gpus", "--num_nodes") if ds else ("--nproc_per_node", "--nnodes")
    world = chips or whole(launcher, per_node, 1) * whole(launcher, nodes, 1)
    tp, pp = (
        whole(got, "--tensor-model-parallel-size", 1),
        1 if "--no-pipeline-parallel" in got else whole(got, "--pipeline-model-parallel-size", 1),
    )
    cp = whole(got, "--context-parallel-size", 1)
    for flag, n in (("--tensor-model-parallel-size", tp), ("--pipeline-model-parallel-size", pp),
                    ("--context-parallel-size", cp), (per_node, world)):  # fmt: skip
        if n < 1:  # a degree of none splits nothing (a mangled value)
            raise refuse(flag, "a whole number of at least 1", n)
    if world % (tp * pp * cp) and not before:  # flags alone (a YAML's MODEL_ARGS): no world
        raise refuse("chips", f"given: a file of flags does not say its GPUs (TP x PP x CP = "
                     f"{tp * pp * cp} of them or a multiple)", None)  # fmt: skip
    if world % (tp * pp * cp):
        raise refuse(
            "--nnodes",
            f"a world of GPUs divisible by TP x PP x CP = {tp * pp * cp}"
            " (or give the GPUs with --chips)",
            world,
        )
    return world, tp, pp, cp


def _deepspeed(before: list, after: list) -> bool:
    """Megatron-DeepSpeed: launched by ``deepspeed``, or told ``--deepspeed``."""
    return "--deepspeed" in after or bool(before) and before[0].rsplit("/", 1)[-1] == "deepspeed"


@functools.cache
def _deepspeed_flags() -> frozenset:
    """Megatron-DeepSpeed's own flags (``data/megatron_deepspeed_flags.json``)."""
    return frozenset(data_json("megatron_deepspeed_flags.json")["keys"])


def _ends(got: dict) -> str:
    """The ends the flags count as layers in the pipeline split: ours, of ``ENDS_AS_LAYERS``."""
    embedding, loss = (flag in got for flag in ENDS_FLAGS)
    return ENDS_NAMED_BY_SLOTS[int(embedding), int(loss)]


def _model_args(text: str) -> list[str] | None:
    """The flags of a YAML config's ``MODEL_ARGS`` (Megatron-LM's functional-test and release
    configs, tests/functional_tests/test_cases/*/model_config.yaml): flag -> value, ``true`` a
    switch given, ``false`` one left out; None for a file that is no such YAML."""
    if not re.search(r"^MODEL_ARGS:", text, re.MULTILINE):
        return None
    table = yaml_loaded(text, "config", "a YAML file of Megatron-LM's MODEL_ARGS")
    args = table.get("MODEL_ARGS") if isinstance(table, dict) else None
    if not isinstance(args, dict):
        raise refuse("MODEL_ARGS", "a mapping of flags to their values", type(args).__name__)
    words: list[str] = []
    for flag, value in args.items():
        if value is True:
            words.append(str(flag))
        elif value not in (False, None):
            words += [str(flag), *str(value).split()]
    return words


def _features(got: dict) -> str | None:
    """Its overlaps as the flags set them, each off where its flag is absent (or on, for one on
    by default: ``stacks/megatron_lm.py``'s FEATURES), "none" for none; None where the file
    names none of their flags: the release's defaults."""
    if not any(f.flag in got for f in FEATURES.values()):
        return None
    on = [name for name, f in FEATURES.items() if (f.flag in got) != f.default]
    return ",".join(on) or "none"


def _steps(got: dict, global_batch: int) -> int | None:
    """The steps to train: ``--train-iters``, or ``--train-samples`` in global batches."""
    samples = whole(got, "--train-samples", 0)
    return whole(got, "--train-iters", 0) or -(-samples // global_batch) or None


def _chunks(got: dict, pp: int, layers: int) -> int:
    """Virtual stages a device: given, or from the layers a virtual stage."""
    if pp == 1:
        return 1
    if "--num-virtual-stages-per-pipeline-rank" in got:
        return whole(got, "--num-virtual-stages-per-pipeline-rank", 1)
    per_chunk = whole(got, "--num-layers-per-virtual-pipeline-stage", 0)
    if not per_chunk:
        return 1
    if layers % (pp * per_chunk):
        allowed = f"a count dividing the {layers} layers over {pp} stages"
        raise refuse("--num-layers-per-virtual-pipeline-stage", allowed, per_chunk)
    return layers // (pp * per_chunk)


def _aware(got: dict, flag: str) -> str | None:
    """A dtype TransformerEngine's precision-aware optimizer keeps: bf16, or None for its fp32
    (without ``--use-precision-aware-optimizer`` Megatron-LM ignores the flag)."""
    if "--use-precision-aware-optimizer" not in got:
        return None
    dtype = got.get(flag, "fp32")
    if dtype not in ("fp32", "bf16", "fp16"):
        raise refuse(flag, "fp32, bf16 or fp16 (fp8 moments are not priced)", dtype)
    return None if dtype == "fp32" else "bf16"  # fp16: two bytes, as bf16


def _moments(got: dict, notes: list) -> str | None:
    """Adam's moments as ``--exp-avg-dtype`` and ``--exp-avg-sq-dtype`` keep them: both two
    bytes (bf16 or fp16), or both fp32 (docs/MODEL.md §E.4)."""
    first, second = _aware(got, "--exp-avg-dtype"), _aware(got, "--exp-avg-sq-dtype")
    given = (got.get("--exp-avg-dtype", "fp32"), got.get("--exp-avg-sq-dtype", "fp32"))
    if first != second:
        why = f"as --exp-avg-dtype ({given[0]}): the two moments in one dtype are priced"
        raise refuse("--exp-avg-sq-dtype", why, given[1])
    if first and "fp16" in given:
        notes.append("fp16 moments: priced as bf16, two bytes each")
    return first


def _zero(got: dict) -> int:
    """The distributed optimizer is ZeRO-1; Megatron FSDP's sharding strategy says its stage."""
    if "--use-megatron-fsdp" in got:
        strategy = got.get("--data-parallel-sharding-strategy", "optim_grads_params")
        if strategy not in SHARDING:
            raise refuse(
                "--data-parallel-sharding-strategy", f"one of {', '.join(SHARDING)}", strategy
            )
        return SHARDING[strategy]
    return 1 if "--use-distributed-optimizer" in got else 0


def _remat(got: dict) -> str:
    """The recompute policy by Megatron-LM's names (docs/MODEL.md §E.4): none; full, of every
    layer or by ``--recompute-method`` and ``--recompute-num-layers``; selective, of the
    attention core (its default) or of ``--recompute-modules``."""
    granularity = got.get(
        "--recompute-granularity", "selective" if "--recompute-activations" in got else None
    )
    if granularity is None and "--checkpoint-activations" in got:  # the flag of older releases
        granularity = "full"
    if granularity is None:
        return "none"
    if granularity == "full":
        method, count = (
            got.get("--recompute-method", "uniform"),
            got.get("--recompute-num-layers", 1),
        )
        name = f"full:{method}:{count}"
        if not is_policy(name):
            raise refuse(
                "--recompute-method", "uniform or block, with --recompute-num-layers N", name
            )
        return "full" if name == "full:uniform:1" else name
    if granularity != "selective":
        raise refuse("--recompute-granularity", "'full' or 'selective'", granularity)
    modules = got.get("--recompute-modules", ["core_attn"])
    modules = [modules] if isinstance(modules, str) else list(modules)
    name = "selective:" + ",".join(modules)
    if not is_policy(name):
        raise refuse("--recompute-modules", f"some of {', '.join(RECOMPUTE_MODULES)}", modules)
    return "selective" if modules == ["core_attn"] else name


def _cp_kind(name: str) -> str:
    if name not in CP_KINDS:
        raise refuse("--cp-comm-type", f"one of {', '.join(CP_KINDS)}", name)
    return CP_KINDS[name]
