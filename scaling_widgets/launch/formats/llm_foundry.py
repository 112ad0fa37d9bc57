"""MosaicML llm-foundry's training YAML (``scripts/train/yamls/``), read into degrees and written
from them (docs/MODEL.md §G).

llm-foundry trains with Composer on PyTorch FSDP alone: no tensor, pipeline or expert
parallelism, its data-parallel degree every GPU. A YAML names no world size, so reading takes the
chips. Its model is an MPT (``mpt_causal_lm``), whose shape the YAML gives.

References
----------
.. [1] ``mosaicml/llm-foundry@8c8dd48f72168c5d51e2f7b151595892a8fba43d``:
   ``llmfoundry/utils/config_utils.py`` (``TrainConfig``: global_train_batch_size,
   device_train_microbatch_size, max_seq_len, max_duration, precision, fsdp_config),
   ``llmfoundry/models/mpt/configuration_mpt.py`` (``MPTConfig``: d_model, n_heads, n_layers,
   expansion_ratio, vocab_size; tie_word_embeddings True by default) and
   ``llmfoundry/models/utils/config_defaults.py`` (attn_config, ffn_config: mptmlp, GELU).
.. [2] ``mosaicml/composer@640518880``, ``composer/utils/parallelism.py`` (``FSDPConfig``:
   sharding_strategy FULL_SHARD by default, activation_checkpointing).
"""

from __future__ import annotations

import math
import re

from ... import catalog
from ...cost.ground.refusals import refuse
from ...cost.hardware.chip import Chip
from ...cost.transformer.shapes import Model
from ..conventions import Degrees, unwritten
from ..keys import LaunchFile, checked_keys, flat, yaml_loaded

NAME = "llm-foundry"
LABEL = "llm-foundry"
ORDER = 4
FILE_NAME = "foundry_train.yaml"
READS = "an llm-foundry YAML"
STACK = "llm-foundry"
# FSDP's sharding strategies as ZeRO stages (torch.distributed.fsdp.ShardingStrategy)
ZERO = {"FULL_SHARD": 3, "HYBRID_SHARD": 3, "SHARD_GRAD_OP": 2, "_HYBRID_SHARD_ZERO2": 2,
        "NO_SHARD": 0}  # fmt: skip
# the free-form sections: their keys change no cost, and no schema lists them
FREE = ("variables", "tokenizer", "train_loader", "eval_loader", "eval_loaders", "optimizer",
        "scheduler", "algorithms", "callbacks", "loggers", "metadata", "profiler",
        "compile_config", "tp_config", "icl_tasks", "eval_gauntlet", "model.init_config",
        "model.config_overrides", "model.attn_config.rope_dail_config",
        "model.attn_config.rope_hf_config", "model.block_overrides")  # fmt: skip
READ = ("model.name", "model.d_model", "model.n_heads", "model.n_layers", "model.head_dim",
        "model.expansion_ratio", "model.vocab_size", "model.tie_word_embeddings",
        "model.attn_config.attn_type", "model.attn_config.kv_n_heads",
        "model.attn_config.attn_impl", "model.ffn_config.ffn_type",
        "model.ffn_config.ffn_hidden_size", "max_seq_len", "global_train_batch_size",
        "device_train_microbatch_size", "max_duration", "precision",
        "fsdp_config.sharding_strategy", "fsdp_config.activation_checkpointing")  # fmt: skip
# settings that change the cost in ways the model does not price: refused unless at their default
UNPRICED = {"fsdp_config.activation_cpu_offload": False, "fsdp_config.cpu_offload": False,
            "model.attn_config.sliding_window_size": -1}  # fmt: skip
APPROXIMATED = {"fsdp_config.data_parallel_replicate_degree": "HSDP charged as ZeRO over all"}


def detects(text: str, name: str) -> bool:
    """An llm-foundry YAML: the batch keys its TrainConfig has and no other framework's does.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The file's name; not read: the text alone says.

    Returns
    -------
    found : bool
        Whether the text sets ``global_train_batch_size`` or ``device_train_microbatch_size``.
    """
    return (
        re.search(r"^(global_train_batch_size|device_train_microbatch_size):", text, re.M)
        is not None
    )


def read(text: str, *, chips: int | None, model=None, pods: int | None = None) -> LaunchFile:
    """The layout of an llm-foundry YAML on ``chips`` GPUs: FSDP over every GPU at the strategy's
    ZeRO stage, microbatches of ``device_train_microbatch_size`` accumulated to the global batch,
    every layer recomputed under ``activation_checkpointing``; the model the MPT it describes
    unless ``model`` is given.

    Parameters
    ----------
    text : str
        The YAML.
    chips : int, optional
        The GPUs in all [chips]; a YAML does not say, so None is refused.
    model : str or Model, optional
        A preset's name or a ``Model``; None: the MPT of the YAML's ``model``.
    pods : int, optional
        Not read here: ``read_config`` sets the pods.

    Returns
    -------
    read : LaunchFile
        The degrees, the model, the keys ignored, the notes, and the stack "llm-foundry".

    Raises
    ------
    InputError
        Naming the key: one llm-foundry has not, one whose setting the model cannot price, or a
        batch the GPUs cannot split; ``chips`` when none are given.
    """
    table = _resolved(_yaml(text))
    keys = {k: v for k, v in flat(table).items() if not k.startswith(FREE)}
    got, ignored, notes = checked_keys(NAME, keys, READ, UNPRICED, APPROXIMATED)
    if chips is None:
        raise refuse("chips", "given: an llm-foundry YAML does not say how many GPUs", None)
    seq_len, global_batch = _whole(got, "max_seq_len", 2048), _whole(got, "global_train_batch_size")
    share = max(global_batch // chips, 1)  # sequences a GPU a step
    if got.get("device_train_microbatch_size") == "auto":
        got["device_train_microbatch_size"] = share
        notes.append("device_train_microbatch_size auto: charged as no accumulation")
    micro = _whole(got, "device_train_microbatch_size", share)
    if global_batch % chips or share % micro:
        allowed = (
            f"a batch whose share of each of the {chips:,} GPUs is whole microbatches of {micro}"
        )
        raise refuse("global_train_batch_size", allowed, global_batch)
    strategy = got.get("fsdp_config.sharding_strategy", "FULL_SHARD")
    if strategy not in ZERO:
        raise refuse("fsdp_config.sharding_strategy", f"one of {', '.join(ZERO)}", strategy)
    degrees = Degrees(
        world=chips, pods=1, dp=chips, cp=1, tp=1, pp=1, vp=1, ep=1, etp=1,
        zero=ZERO[strategy] if chips > 1 else 0, seq_len=seq_len, global_batch=global_batch,
        micro_batch=micro, schedule="1f1b",
        remat="full" if got.get("fsdp_config.activation_checkpointing") else "none",
        fp8=got.get("precision") == "amp_fp8",
        steps=_steps(got.get("max_duration"), global_batch, seq_len),
    )  # fmt: skip
    return LaunchFile(NAME, degrees, model or _mpt(got), tuple(ignored), tuple(notes),
                      {"stack": STACK, "flash_attention": _flash(got)})  # fmt: skip


def _yaml(text: str) -> dict:
    table = yaml_loaded(text, "config", "a YAML file llm-foundry reads")
    if not isinstance(table, dict):
        raise refuse("config", "a YAML mapping of llm-foundry's keys", type(table).__name__)
    return table


def _resolved(table: dict) -> dict:
    """``${variables.name}`` (OmegaConf's interpolation, as llm-foundry's YAMLs use it) replaced
    by the variable's value wherever a value is that alone."""
    variables = table.get("variables") or {}

    def value(v):
        if isinstance(v, dict):
            return {k: value(x) for k, x in v.items()}
        if isinstance(v, str) and (m := re.fullmatch(r"\$\{variables\.(\w+)\}", v.strip())):
            return variables.get(m.group(1), v)
        return v

    return value(table)


def _whole(got: dict, key: str, default: int | None = None) -> int:
    value = got.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise refuse(key, "a whole number of 1 or more", value)
    return value


def _steps(duration, global_batch: int, seq_len: int) -> int | None:
    """max_duration as steps: batches ("63900ba"), or tokens ("134000000000tok") over a step's."""
    m = re.fullmatch(r"\s*([0-9_.e]+)\s*(ba|tok)\s*", str(duration or ""))
    if m is None:
        return None
    count = float(m.group(1).replace("_", ""))
    return int(count if m.group(2) == "ba" else count // (global_batch * seq_len)) or None


def _mpt(got: dict) -> Model:
    """The MPT the YAML describes: GELU (ffn_type mptmlp) or gated (mptglu), expansion_ratio x
    d_model wide, embeddings tied unless told, grouped-query attention's kv_n_heads."""
    if got.get("model.name", "mpt_causal_lm") != "mpt_causal_lm":
        raise refuse(
            "model.name", "mpt_causal_lm (or give the model with --model)", got["model.name"]
        )
    D, H = _whole(got, "model.d_model", 2048), _whole(got, "model.n_heads", 16)
    ffn = got.get("model.ffn_config.ffn_type", "mptmlp")
    if ffn not in ("mptmlp", "mptglu"):
        raise refuse("model.ffn_config.ffn_type", "mptmlp or mptglu", ffn)
    ratio = got.get("model.expansion_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
        raise refuse("model.expansion_ratio", "a number above 0", ratio)
    given = got.get("model.ffn_config.ffn_hidden_size")
    wide = _whole(got, "model.ffn_config.ffn_hidden_size") if given else int(ratio * D)
    grouped = got.get("model.attn_config.attn_type") == "grouped_query_attention"
    return Model(
        "MPT from the YAML", layers=_whole(got, "model.n_layers", 24), d_model=D, d_ff=wide,
        heads=H, kv_heads=_whole(got, "model.attn_config.kv_n_heads", H) if grouped else H,
        head_dim=_whole(got, "model.head_dim") if got.get("model.head_dim") else D // H,
        vocab=_whole(got, "model.vocab_size", 50368), gated=ffn == "mptglu",
        tied_embeddings=bool(got.get("model.tie_word_embeddings", True)),
    )  # fmt: skip


def _flash(got: dict) -> bool:
    return got.get("model.attn_config.attn_impl", "flash") != "torch"


def write(d: Degrees, *, model: Model, chip: Chip) -> tuple[str, list[str], list[str]]:
    """The degrees as an llm-foundry YAML: its text, the knobs chosen, what it cannot say. FSDP
    over every GPU, the model as an MPT of its widths.

    Parameters
    ----------
    d : Degrees
        The layout as the frameworks count it.
    model : Model
        The model, written as an MPT of the same widths.
    chip : Chip
        The chip; not read (a YAML names no hardware).

    Returns
    -------
    text : str
        The YAML.
    chosen : list of str
        The knobs chosen for it, one line each.
    cannot : list of str
        What llm-foundry cannot express (TP, PP, CP, EP, ZeRO-1, a recompute other than whole
        layers, a model an MPT is not), one line each.
    """
    m = catalog.model(model)
    degrees = (("TP", d.tp), ("PP", d.pp), ("CP", d.cp), ("EP", d.ep))
    cannot = [f"{name} {n}: llm-foundry runs FSDP alone; written as data parallelism"
              for name, n in degrees if n > 1]  # fmt: skip
    if m.moe is not None or m.mla is not None:
        cannot.append(f"the model {m.name}: an MPT has no experts or latent attention")
    zero = {3: "FULL_SHARD", 2: "SHARD_GRAD_OP", 0: "NO_SHARD"}.get(d.zero)
    if zero is None:
        cannot.append(f"ZeRO-{d.zero}: FSDP shards gradients too; written as SHARD_GRAD_OP")
    if d.remat not in ("none", "full"):
        cannot.append(f"recompute {d.remat}: written as activation_checkpointing of whole layers")
    cannot += unwritten(d)
    global_batch, micro = _batch(d, cannot)
    grouped = m.kv_heads != m.heads
    lines = [
        f"max_seq_len: {d.seq_len}", "model:", "  name: mpt_causal_lm",
        f"  d_model: {m.d_model}", f"  n_heads: {m.heads}", f"  n_layers: {m.layers}",
        f"  expansion_ratio: {m.d_ff / m.d_model!r}", f"  vocab_size: {m.vocab}",
        f"  tie_word_embeddings: {str(m.tied_embeddings).lower()}",
        "  attn_config:", "    attn_impl: flash",
        *([ "    attn_type: grouped_query_attention", f"    kv_n_heads: {m.kv_heads}"] * grouped),
        "  ffn_config:", f"    ffn_type: {'mptglu' if m.gated else 'mptmlp'}",
        f"    ffn_hidden_size: {m.d_ff}",
        f"global_train_batch_size: {global_batch}",
        f"device_train_microbatch_size: {micro}",
        f"precision: {'amp_fp8' if d.fp8 else 'amp_bf16'}",
        *([f"max_duration: {d.steps}ba"] * bool(d.steps)),
        "fsdp_config:", f"  sharding_strategy: {zero or 'SHARD_GRAD_OP'}",
        "  mixed_precision: PURE",
        f"  activation_checkpointing: {str(d.remat != 'none').lower()}",
    ]  # fmt: skip
    steps = global_batch // (micro * d.world)
    chosen = [f"{steps} microbatches accumulated (global / microbatch / GPUs)"] * (steps > 1)
    if not m.name.startswith("MPT"):  # llm-foundry builds MPTs from its YAML; others by HF name
        chosen.append(f"the model {m.name} as an MPT of its widths")
    return "\n".join(lines) + "\n", chosen, cannot


def _batch(d: Degrees, cannot: list) -> tuple[int, int]:
    """The global batch and the microbatch as data parallelism over every GPU says them: whole
    sequences on each, in whole microbatches (the nearest, and said, where the layout's are not)."""
    per_gpu = max(1, round(d.global_batch / d.world))
    if per_gpu * d.world != d.global_batch:
        cannot.append(f"a batch of {d.global_batch:,} sequences over {d.world:,} GPUs: written as"
                      f" {per_gpu} a GPU")  # fmt: skip
    micro = math.gcd(per_gpu, d.micro_batch)
    if micro != d.micro_batch:
        cannot.append(
            f"microbatches of {d.micro_batch}: written as {micro}, which the GPUs' share divides"
        )
    return per_gpu * d.world, micro
