"""MaxText's configuration, read into degrees and written from them (docs/MODEL.md §G): a YAML that
overrides ``base.yml``, or a script whose ``python3 -m maxtext.trainers.pre_train.train`` line
gives ``key=value`` overrides. The keys are ``base.yml``'s (``data/config_keys/``), and so are
the defaults of the keys read here (``BASE``). The writer is ``launch/maxtext_yaml.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from pathlib import Path

from ... import catalog
from ...cost.ground.refusals import refuse
from ...cost.hardware.chip import Chip
from ...cost.transformer.shapes import MLA, Model, MoE
from ..conventions import Degrees
from ..keys import LaunchFile, checked_keys, data_json
from ..maxtext_files import overrides, xla_flags
from ..maxtext_yaml import CP_KINDS, CUSTOM, NAMES, REMAT
from ..maxtext_yaml import write as write  # the format's writer, in a file of its own

NAME = "maxtext"
LABEL = "MaxText"
ORDER = 3
FILE_NAME = "train.yml"
READS = "a MaxText YAML or script"
STACK = "maxtext"
# base.yml's own values of the keys read here (AI-Hypercomputer/maxtext@e591f30, base.yml)
BASE = dict(model_name="default", global_parameter_scale=1, base_emb_dim=2048,
            base_num_query_heads=16, base_num_kv_heads=16, base_mlp_dim=7168,
            base_num_decoder_layers=16, head_dim=128, vocab_size=32000,
            mlp_activations=["silu", "linear"], logits_via_embedding=False, num_experts=1,
            num_experts_per_tok=1, base_moe_mlp_dim=-1, per_device_batch_size=12.0,
            max_target_length=2048, gradient_accumulation_steps=1, remat_policy="full",
            quantization="", steps=150_001, num_pipeline_microbatches=-1,
            context_parallel_strategy="all_gather", attention="autoselected",
            first_num_dense_layers=0, shared_experts=0, attention_type="global", q_lora_rank=0,
            kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
            mtp_num_layers=0, weight_dtype="float32", mu_dtype="",
            capacity_factor=-1.0)  # fmt: skip
AXES = ("data", "fsdp", "tensor", "context", "expert", "pipeline")
# the axes other than data whose groups may span slices, one at a time (MODEL.md §B.9 to §B.13)
SPANNING = ("fsdp", "pipeline", "tensor", "expert", "context")
# ICI axes read as the axis whose rules they share (``_mesh``; configs/base.yml's
# logical_axis_rules): FSDP's second axis, TP's second, and USP's Ulysses share of the sequence
JOINED = {
    "fsdp_transpose": ("fsdp", "charged as one FSDP axis with ici_fsdp"),
    "tensor_sequence": ("tensor", "charged as one TP axis with ici_tensor"),
    "context_usp_ulysses": ("context", "USP's Ulysses share, charged as Ulysses CP"),
}
READ = (
    *BASE,
    "num_slices",
    *CUSTOM,
    *(f"{tier}_{axis}_parallelism" for tier in ("ici", "dcn") for axis in (*AXES, *JOINED)),
)
# the axes no training step of ours runs on, and why (base.yml's mesh_axes and logical_axis_rules)
NOT_TRAINING = {
    "autoregressive": "an inference axis: the rules shard the weights' heads and MLP over it but no"
    " training activation's batch, so its chips would repeat one another's work",
    "context_autoregressive": "an inference axis (the KV cache's length): the rules shard no"
    " training activation over it, so its chips would repeat one another's work",
    "diloco": "DiLoCo's replicas train apart and meet every few hundred steps, not in one"
    " synchronous step as the model prices",
    "sequence": "the legacy sequence axis, which base.yml's mesh_axes no longer hold",
}
# the DCN axes beside their ICI twins, and the axes above: refused unless at base.yml's 1
UNPRICED = {f"{tier}_{axis}_parallelism": 1 for tier in ("ici", "dcn") for axis in NOT_TRAINING}
APPROXIMATED: dict = {}


def detects(text: str, name: str) -> bool:
    """A YAML file, or a script or overrides that name MaxText or its parallelism axes.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The file's name; "" when it has none.

    Returns
    -------
    found : bool
        Whether the name ends in ``.yml`` or ``.yaml``, or the text holds "maxtext" or
        "_parallelism".
    """
    if re.search(r"^(global_train_batch_size|device_train_microbatch_size):", text, re.M):
        return False  # llm-foundry's YAML: its TrainConfig's batch keys
    return name.endswith((".yml", ".yaml")) or "maxtext" in text or "_parallelism" in text


def _numbers(got: dict) -> dict:
    """The keys given whose base.yml value is a number, checked to be numbers too (whole where
    base.yml's is whole; -1 and the other sentinels pass), else refused by name."""
    for key, given in got.items():
        default = BASE.get(key, 1 if key.endswith("_parallelism") or key == "num_slices" else None)
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            continue
        whole = isinstance(default, int)
        number = isinstance(given, (int, float)) and not isinstance(given, bool)
        if not number or (whole and not float(given).is_integer()):
            raise refuse(key, "a whole number" if whole else "a number", given)
    return got


def _training_axes(table: dict) -> dict:
    """The keys, an axis no training step of ours runs on (``NOT_TRAINING``) refused with why."""
    for axis, why in NOT_TRAINING.items():
        for key in (f"ici_{axis}_parallelism", f"dcn_{axis}_parallelism"):
            if key in table and _numbers({key: table[key]}) and table[key] != 1:
                raise refuse(key, f"1: {why}", table[key])
    return table


def _remat(value: dict, notes: list) -> str:
    """The recompute policy a MaxText config names, by its own name (``REMAT``)."""
    policy = str(value["remat_policy"])
    if policy == "custom":
        kept = [n for n, default in CUSTOM.items() if value.get(n, default) == "device"]
        moved = [n for n, default in CUSTOM.items() if value.get(n, default) == "offload"]
        if moved:
            notes.append(f"custom remat's {', '.join(moved)} offloaded: in host memory, its"
                         " transfers not priced")  # fmt: skip
        return "custom:" + ",".join(kept)
    if policy in ("none", ""):
        notes.append("remat_policy none: MaxText's decoder saves nothing in a layer, as full")
        return "full"
    if policy not in REMAT:
        raise refuse("remat_policy", f"one of MaxText's: {', '.join(REMAT)}, custom", policy)
    if policy.endswith("_offloaded"):
        notes.append(f"remat_policy {policy}: in host memory, its transfers not priced")
    return policy


def read(
    text: str,
    *,
    chips: int | None,
    model=None,
    pods: int | None = None,
    folder: Path | None = None,
    chip: Chip | None = None,
) -> LaunchFile:
    """The layout of a MaxText run: the slices (``pods``, else ``num_slices``, else one) its DCN
    axes multiply to, and the chips of a slice its ICI axes (an axis of -1 fills the rest).

    As MaxText counts: a key left out is ``base.yml``'s (``BASE``: ``ici_fsdp_parallelism`` and
    ``dcn_data_parallelism`` -1, the other axes 1); the global batch is the chips times
    ``per_device_batch_size`` times ``gradient_accumulation_steps`` [sequences]; DP is the data,
    fsdp and expert axes times the slices; pipelined, the microbatches are
    ``num_pipeline_microbatches``, or the stages where it is -1. The fsdp axis is ZeRO-3, the
    data axis ZeRO-0; a remat policy is read by its own name (``REMAT``; custom as the
    checkpoint names it keeps on the device). The model is ``model_name``'s preset, or
    ``base.yml``'s model scaled by ``global_parameter_scale``.

    Parameters
    ----------
    text : str
        A YAML file over ``base.yml``, or a script of ``key=value`` overrides.
    chips : int, optional
        The chips in all, every slice [chips]; a MaxText config does not say, so None is
        refused.
    model : str or Model, optional
        A preset's name or a ``Model``; None: the model ``model_name`` names, or the one the
        ``base_*`` keys describe.
    pods : int, optional
        P, the slices across the data-center network; None: ``num_slices`` where it is above 0,
        else one.
    folder : Path, optional
        The file's folder: a script over a YAML other than ``base.yml`` reads it from there.
    chip : Chip, optional
        The chip. On GPUs a DCN axis other than data spans nodes of one cluster: its degree
        multiplies its ICI axis's (MaxText's DCN is the network between hosts).

    Returns
    -------
    read : LaunchFile
        The degrees, the model, the keys ignored, the notes, and the stack "maxtext" (with flash
        attention off for ``attention: dot_product``).

    Raises
    ------
    InputError
        Naming the key: one MaxText has not, an axis the model cannot price, DCN parallelism
        other than data, axes that do not multiply to the chips, a remat policy or quantization
        the model cannot price; ``chips`` when none are given.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch, ZeRO and recompute in MaxText's keys).
    .. [2] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/configs/base.yml`` (the keys and their defaults; ``remat_policy``'s choices).
    .. [3] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/configs/pyconfig_deprecated.py`` (``calculate_global_batch_sizes``;
       ``get_individual_scales``; ``set_and_validate_pipeline_config``: -1 microbatches are the
       stages).
    .. [4] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/utils/max_utils.py`` (``fill_unspecified_mesh_axes``: one axis of -1 filled
       with what the others leave).
    """
    table = _training_axes(overrides(text, folder))
    got, ignored, notes = checked_keys(NAME, table, READ, UNPRICED, APPROXIMATED)
    value = {**BASE, **_numbers(got)}
    if chips is None:
        raise refuse("chips", "given: a MaxText config does not say how many chips", None)
    ici, pods, spans = _mesh(value, got, chips, pods, chip, notes)
    fsdp_pods, pp_pods, tp_pods = spans["fsdp"], spans["pipeline"], spans["tensor"]
    cp, cp_pods = ici["context"] * spans["context"], spans["context"]
    if cp_pods > 1 and value["context_parallel_strategy"] in ("usp", "ulysses"):
        why = "1 under context_parallel_strategy usp or ulysses (MaxText refuses Ulysses over DCN)"
        raise refuse("dcn_context_parallelism", why, cp_pods)
    devices, pdbs = chips, float(value["per_device_batch_size"])
    accumulate = int(value["gradient_accumulation_steps"])
    global_batch = round(devices * pdbs) * accumulate  # MaxText truncates; a float's error rounds
    # the stages of each slice, across the slices a pipeline spans; the other slices replicas
    pp, tp = ici["pipeline"] * pp_pods, ici["tensor"] * tp_pods
    dp = ici["data"] * ici["fsdp"] * ici["expert"] * pods // (pp_pods * tp_pods * cp_pods)
    if ici["data"] > 1 and ici["fsdp"] > 1:
        notes.append("ici_data x ici_fsdp: charged as ZeRO-3 over both")
    micro = int(value["num_pipeline_microbatches"])
    m = (micro if micro > 0 else pp) if pp > 1 else accumulate
    remat = _remat(value, notes)
    notes += xla_flags(text)
    degrees = Degrees(
        world=chips, pods=pods, dp=dp, cp=cp, tp=tp,
        pp=pp, vp=1, ep=ici["expert"] * spans["expert"], etp=tp,
        zero=3 if ici["fsdp"] * fsdp_pods > 1 else 0, fsdp_pods=fsdp_pods, pp_pods=pp_pods,
        tp_pods=tp_pods, ep_pods=spans["expert"], cp_pods=cp_pods,
        seq_len=int(value["max_target_length"]),
        global_batch=global_batch, micro_batch=max(global_batch // (dp * m), 1),
        schedule="gpipe" if pp > 1 else "1f1b", remat=remat, sequence_parallel=tp > 1,
        fp8=_fp8(value["quantization"]), steps=int(got["steps"]) if "steps" in got else None,
        cp_kind=_cp_kind(value["context_parallel_strategy"], got),
        **_dtypes(value["weight_dtype"], value["mu_dtype"]),
    )  # fmt: skip
    model = model or _model(value)
    extra = {"stack": STACK}
    if value["attention"] == "dot_product":  # the s x s scores kept
        extra["flash_attention"] = False
    return LaunchFile(NAME, degrees, model, tuple(ignored), tuple(notes), extra)


def _mesh(value: dict, got: dict, chips: int, pods: int | None, chip, notes: list) -> tuple:
    """The ICI axes' degrees, FSDP's over both of its axes, the slices and how many of them each
    group of ``SPANNING`` spans (MaxText's ``create_device_mesh``: each slice its ICI mesh, the
    DCN axes across slices: the data axis replicas, the fsdp axis FSDP across slices, the
    pipeline axis stages in other slices, the tensor and expert axes TP's and EP's groups across
    them, MODEL.md §B.9 to §B.12). On
    GPUs a slice is a node (JAX's slice_index is the host's): the nodes are one cluster whose
    links across nodes the model prices, so every DCN axis joins its ICI twin."""
    ici = {a: int(value.get(f"ici_{a}_parallelism", -1 if a == "fsdp" else 1)) for a in AXES}
    gpu = chip is not None and chip.is_gpu
    dcn = _dcn(value, across_nodes=gpu and not pods)
    nodes = chips // chip.node_size if gpu and chips % chip.node_size == 0 else 1
    slices = pods or (int(got["num_slices"]) if int(got.get("num_slices", -1)) > 0 else nodes)
    _filled(dcn, "data", slices, "dcn")
    # fsdp_transpose shards as fsdp does, tensor_sequence as tensor (base.yml's
    # logical_axis_rules: the heads, the MLP and the vocabulary over tensor and tensor_sequence),
    # USP's Ulysses share the sequence as context does (``_usp``)
    for axis in JOINED:
        ici[axis] = int(value.get(f"ici_{axis}_parallelism", 1))
    _filled(ici, "fsdp", chips // slices, "ici")
    _usp(ici, value["context_parallel_strategy"])
    for axis, (joined, how) in JOINED.items():
        if ici[axis] > 1:
            notes.append(f"ici_{axis}_parallelism {ici[axis]}: {how}")
        ici[joined] *= ici.pop(axis)
    if not gpu or pods:
        spanned = [a for a in SPANNING if dcn[a] > 1]
        if len(spanned) > 1:  # one share of the slices at a time (MODEL.md §B.9 to §B.12)
            why = f"1 beside dcn_{spanned[0]}_parallelism: one axis other than data spans slices"
            raise refuse(f"dcn_{spanned[1]}_parallelism", why, dcn[spanned[1]])
        return ici, math.prod(dcn[a] for a in ("data", *SPANNING)), {a: dcn[a] for a in SPANNING}
    for axis in AXES:
        ici[axis] *= dcn[axis]
        if axis != "data" and dcn[axis] > 1:
            name = "FSDP" if axis == "fsdp" else axis
            notes.append(f"dcn_{axis} x ici_{axis}: one {name} axis across the GPU nodes")
    return ici, 1, dict.fromkeys(SPANNING, 1)


def _dcn(value: dict, across_nodes: bool) -> dict:
    """The DCN axes' degrees, each joined axis (fsdp_transpose, ...) to its twin as within a
    slice. Across GPU nodes (``across_nodes``) every axis runs, priced on the nodes' links.
    Across TPU slices, data parallelism and the axes that may span slices (``SPANNING``;
    tensor_sequence joined to TP; MODEL.md §B.9 to §B.13) but USP's Ulysses share, which MaxText
    runs inside a slice only (``configs/types.py``), refused by name."""
    joined = {**{a: a for a in AXES}, **{a: to for a, (to, _) in JOINED.items()}}
    dcn = dict.fromkeys(AXES, 1)
    for axis, to in joined.items():
        degree = int(value.get(f"dcn_{axis}_parallelism", -1 if axis == "data" else 1))
        if degree != 1 and axis == "context_usp_ulysses" and not across_nodes:
            why = "1 across TPU slices: MaxText runs USP's Ulysses share inside a slice only"
            raise refuse(f"dcn_{axis}_parallelism", why, degree)
        dcn[to] *= degree
    return dcn


def _usp(ici: dict, strategy: str) -> None:
    """USP's axes checked: its Ulysses share only under ``context_parallel_strategy: usp``, as
    MaxText validates (``configs/types.py``), and alone or beside a ring of one. The model prices
    a ring or Ulysses, not the two nested."""
    ulysses = ici["context_usp_ulysses"]
    if ulysses > 1 and strategy != "usp":
        raise refuse(
            "ici_context_usp_ulysses_parallelism",
            "1 unless context_parallel_strategy is 'usp'",
            ulysses,
        )
    if ulysses > 1 and ici["context"] > 1:
        raise refuse(
            "ici_context_usp_ulysses_parallelism",
            f"1 beside ici_context_parallelism {ici['context']} (USP's ring and Ulysses nested"
            " are not priced; either alone is)",
            ulysses,
        )


def _cp_kind(strategy: str, got: dict) -> str:
    """Context parallelism's kind: MaxText's strategy by our name; USP as the share it runs
    (Ulysses over its own axis, else its ring over context's)."""
    if strategy == "usp":
        return "ulysses" if int(got.get("ici_context_usp_ulysses_parallelism", 1)) > 1 else "ring"
    if strategy not in CP_KINDS:
        raise refuse(
            "context_parallel_strategy", "'all_gather', 'ring', 'ulysses' or 'usp'", strategy
        )
    return CP_KINDS[strategy]


def _filled(axes: dict, name: str, total: int, tier: str) -> int:
    """The axis given as -1 filled with what the others leave of ``total``; every axis checked."""
    for axis, degree in axes.items():
        if degree < 1 and degree != -1:
            raise refuse(
                f"{tier}_{axis}_parallelism", "a degree of 1 or more, or -1 to fill", degree
            )
    known = math.prod(v for v in axes.values() if v != -1)
    blank = [a for a, v in axes.items() if v == -1]
    if len(blank) > 1 or total % known:
        axis = blank[-1] if len(blank) > 1 else name
        raise refuse(f"{tier}_{axis}_parallelism", f"degrees multiplying to {total:,}", known)
    if blank:
        axes[blank[0]] = total // known
    if math.prod(axes.values()) != total:
        raise refuse(f"{tier}_{name}_parallelism", f"degrees multiplying to {total:,}",
                     math.prod(axes.values()))  # fmt: skip
    return axes[name]


def _dtypes(weight_dtype: str, mu_dtype: str) -> dict:
    """weight_dtype and mu_dtype as our dtypes (MODEL.md §E.4): the weights are the optimizer's
    own copy, their gradients and Adam's second moment in the same dtype, the first in mu_dtype,
    the weights' if unset (optax's adamw; base.yml: "Inherits from weight_dtype if unset"). float32,
    its default, is the stack's own; bfloat16 keeps all four in bf16."""
    ours = {"float32": "fp32", "bfloat16": "bf16"}
    if weight_dtype not in ours:
        raise refuse("weight_dtype", "'float32' or 'bfloat16'", weight_dtype)
    if mu_dtype not in ("", weight_dtype):
        allowed = f"'' or {weight_dtype!r}, the weights' (one moment in another dtype: not priced)"
        raise refuse("mu_dtype", allowed, mu_dtype)
    dtype = None if weight_dtype == "float32" else ours[weight_dtype]
    return dict(weight_dtype=dtype, grad_dtype=dtype, moment_dtype=dtype)


def _fp8(quantization: str) -> bool:
    if quantization in ("", None):
        return False
    if "fp8" in str(quantization):
        return True
    raise refuse("quantization", "'' or an fp8 recipe (int8 and int4 are not priced)", quantization)


def _model(value: dict) -> str | Model:
    """MaxText's model_name as our preset, or the model its ``base_*``, MoE, MLA and MTP keys
    describe at its global_parameter_scale; the MTP modules as ``mtp_num_layers`` says."""
    name, mtp = value["model_name"], int(value["mtp_num_layers"])
    for ours, theirs in NAMES.items():
        if theirs == name:  # the preset, with MaxText's MTP modules (none unless asked)
            return catalog.preset_with_mtp(ours, mtp)
    shipped = _shipped_models()
    if name in shipped:  # a model file MaxText ships (configs/models/*.yml)
        return dataclasses.replace(catalog.model_from_json(shipped[name]), mtp_layers=mtp)
    if name != "default":
        allowed = f"a model MaxText ships ({', '.join(sorted(shipped))}), or give --model"
        raise refuse("model_name", allowed, name)
    emb, heads, mlp, layers = _scales(int(value["global_parameter_scale"]))
    mla = _mla(value)
    return Model(
        f"MaxText default x{value['global_parameter_scale']}",
        layers=int(value["base_num_decoder_layers"]) * layers,
        d_model=int(value["base_emb_dim"]) * emb,
        d_ff=int(value["base_mlp_dim"]) * mlp,
        heads=int(value["base_num_query_heads"]) * heads,
        kv_heads=int(value["base_num_kv_heads"]) * heads,
        # with latent attention, the mean of the query-key and value widths (as hf_config)
        head_dim=int(value["head_dim"]) if mla is None
        else (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim) // 2,
        vocab=int(value["vocab_size"]),
        gated=len(value["mlp_activations"]) > 1,
        tied_embeddings=bool(value["logits_via_embedding"]),
        moe=_moe(value, mlp),
        mla=mla,
        mtp_layers=mtp,
    )  # fmt: skip


def _moe(value: dict, mlp: int) -> MoE | None:
    """num_experts above 1: the experts base_moe_mlp_dim wide (base_mlp_dim where it is -1), the
    shared ones as many of that width, after first_num_dense_layers dense layers."""
    experts = int(value["num_experts"])
    if experts <= 1:
        return None
    moe_mlp = int(value["base_moe_mlp_dim"])
    return MoE(experts=experts, top_k=int(value["num_experts_per_tok"]),
               d_ff=(moe_mlp if moe_mlp > 0 else int(value["base_mlp_dim"])) * mlp,
               shared=int(value["shared_experts"]),
               dense_layers=int(value["first_num_dense_layers"]),
               capacity_factor=_capacity(value["capacity_factor"]))  # fmt: skip


@functools.cache
def _shipped_models() -> dict:
    """model_name -> the model's keys, for every model file MaxText ships, read from its source
    (``data/maxtext_models.json``)."""
    models = data_json("maxtext_models.json")["models"]
    return {name: entry["model"] for name, entry in models.items()}


def _capacity(factor: float) -> float | None:
    """capacity_factor: above 0, tokens padded to that many times their share; else dropless."""
    return float(factor) if factor > 0 else None


def _mla(value: dict) -> MLA | None:
    """attention_type "mla": the latent attention's ranks and head widths."""
    if value["attention_type"] != "mla":
        return None
    keys = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")
    return MLA(**{key: int(value[key]) for key in keys})


def _scales(scale: int) -> tuple[int, int, int, int]:
    """MaxText's get_individual_scales: doubling heads and MLP, then width, then layers, in turn;
    the factors of the embedding, heads, MLP and layers."""
    if scale < 1 or scale & (scale - 1):
        raise refuse("global_parameter_scale", "a power of two", scale)
    base, rem = divmod(int(math.log2(scale)), 3)
    heads = base + int(rem > 0)
    return 2 ** (base + int(rem > 1)), 2**heads, 2**heads, 2**base
