"""MaxText's YAML written from degrees (docs/MODEL.md §G): the keys of ``base.yml`` a YAML
over it sets; and the names the reader (``formats/maxtext.py``) shares with it: MaxText's
model names of our presets, its remat policies and its CP strategies."""

from __future__ import annotations

import math

from .. import catalog
from ..cost.hardware.chip import Chip
from ..cost.stacks.maxtext import CHECKPOINT_NAMES, SAVED_BY_POLICY
from ..cost.transformer.shapes import Model
from ..presets import MODELS
from .conventions import Degrees, unwritten

# our presets as MaxText's model_name (configs/models/*.yml)
NAMES = {"llama-2-7b": "llama2-7b", "llama-2-13b": "llama2-13b", "llama-2-70b": "llama2-70b",
         "llama-3-8b": "llama3-8b", "llama-3-70b": "llama3-70b", "llama-3-405b": "llama3-405b",
         "gemma-7b": "gemma-7b", "gpt-3-175b": "gpt3-175b", "mixtral-8x7b": "mixtral-8x7b",
         "mixtral-8x22b": "mixtral-8x22b", "qwen3-30b-a3b": "qwen3-30b-a3b",
         "qwen3-235b-a22b": "qwen3-235b-a22b", "deepseek-v3": "deepseek3-671b"}  # fmt: skip
# remat_policy's values, each a policy of ours by its own name (cost/stacks/maxtext.py); custom
# keeps on the device the checkpoint names set to "device" (base.yml's per-tensor keys, their
# defaults here); "none" is full recompute, as MaxText's decoder remats every layer and without a
# policy saves nothing in it (layers/decoders.py, Decoder.__call__)
REMAT = ("full", *SAVED_BY_POLICY)
CUSTOM = {name: "device" if name == "decoder_layer_input" else "remat" for name in CHECKPOINT_NAMES}
CP_KINDS = {"ring": "ring", "all_gather": "all-gather", "ulysses": "ulysses"}


def write(d: Degrees, *, model: Model, chip: Chip) -> tuple[str, list[str], list[str]]:
    """The degrees as a YAML over base.yml: its text, the knobs chosen, what it cannot say.

    ``per_device_batch_size`` is the global batch over the chips, and over the microbatches
    accumulated where it does not pipeline (sequences per chip, TP's chips included, so it may
    be below one); a pipeline's microbatches are ``num_pipeline_microbatches``. Each slice's data
    ranks, EP's on the expert axis, go on the fsdp axis under ZeRO (ZeRO 1 and 2 written as 3),
    else on the data axis; the slices go on ``dcn_data_parallelism``.

    Parameters
    ----------
    d : Degrees
        The layout as the frameworks count it.
    model : Model
        The model: its ``model_name`` where MaxText has a config of it (``NAMES``), else its
        dimensions as ``base_*`` keys.
    chip : Chip
        The chip; not read (the file names no hardware).

    Returns
    -------
    text : str
        The YAML.
    chosen : list of str
        The knobs chosen for it (a fraction of a sequence per chip), one line each.
    cannot : list of str
        What MaxText cannot express (another schedule, ZeRO 1 or 2, sequence parallelism…), one
        line each.

    References
    ----------
    .. [1] docs/MODEL.md §G (degrees, batch, ZeRO and recompute in MaxText's keys).
    .. [2] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/configs/base.yml`` (the keys written).
    .. [3] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/configs/pyconfig_deprecated.py`` (``calculate_global_batch_sizes``: the
       global batch is chips x ``per_device_batch_size`` x ``gradient_accumulation_steps``).
    """
    chosen, cannot = [], []
    mtp = (MODELS[model] if isinstance(model, str) else model).mtp_layers
    model = catalog.model_name_of(model) or model
    lines = ['base_config: "base.yml"']
    if isinstance(model, str) and model in NAMES:
        lines.append(f'model_name: "{NAMES[model]}"')
        lines += [f"mtp_num_layers: {mtp}"] * (mtp > 0)
    else:
        m = MODELS[model] if isinstance(model, str) else model
        cannot.append(f"the model {m.name}: MaxText has no config of it; written by its dims")
        lines += _model_lines(m, cannot)
    per_step = d.microbatches if d.pp == 1 else 1
    pdbs = d.global_batch / (d.world * per_step)
    lines += [f"per_device_batch_size: {pdbs!r}", f"max_target_length: {d.seq_len}"]
    if d.pp > 1:
        lines.append(f"num_pipeline_microbatches: {d.microbatches}")
        if d.schedule != "gpipe":
            cannot.append(f"the schedule {d.schedule}: MaxText pipelines as GPipe does")
    else:
        lines.append(f"gradient_accumulation_steps: {d.microbatches}")
    lines += _remat_lines(d.remat, cannot)
    if d.zero in (1, 2):
        cannot.append(f"ZeRO-{d.zero}: MaxText's fsdp axis shards all three; written as ZeRO-3")
    lines += _mesh_lines(d, cannot)
    if d.cp > 1:
        theirs = next(k for k, v in CP_KINDS.items() if v == d.cp_kind)
        lines.append(f'context_parallel_strategy: "{theirs}"')
    lines.append(f'quantization: "{"fp8" if d.fp8 else ""}"')
    if d.steps:
        lines.append(f"steps: {d.steps}")
    weights = d.weight_dtype or "fp32"  # whose dtype the gradients and moments take unless set
    held = {weights, d.grad_dtype or weights, d.moment_dtype or weights}
    if held == {"bf16"}:  # weights, gradients and moments in one dtype: weight_dtype says it
        lines.append("weight_dtype: bfloat16")
    dtypes = ("gradients", "Adam's moments", "the weights") * (len(held) == 1)
    cannot += unwritten(d, says=("pods", *dtypes))
    if d.ep_overlap:
        cannot.append("pairing the expert all-to-alls (Megatron-LM's combined 1F1B)")
    if d.tp > 1 and not d.sequence_parallel:
        cannot.append("TP without sequence parallelism: MaxText's shards the embedding axis")
    if pdbs != int(pdbs):
        chosen.append(f"{pdbs:g} sequences a chip: fewer than one, the rest of its batch on TP")
    return "\n".join(lines) + "\n", chosen, cannot


def _mesh_lines(d: Degrees, cannot: list) -> list:
    """The ICI axes of a slice and the DCN axes across slices: the data replicas, and the slices
    an FSDP group, a pipeline, a TP, an EP or a CP group spans (MODEL.md §B.9 to §B.13)."""
    replicas = d.pods // (d.pp_pods * d.tp_pods)
    in_slice = d.ep // d.ep_pods  # an EP group across slices: its share in each
    slice_ranks = d.dp // (replicas // d.cp_pods)  # a slice's data ranks: CP's slices hold none
    ep = math.gcd(in_slice, slice_ranks)  # MaxText's expert axis is carved out of data ranks
    if ep != in_slice:
        cannot.append(f"EP {d.ep} folded over CP or TP: MaxText's expert axis is one of the"
                      f" data ranks' axes; written as EP {ep * d.ep_pods}")  # fmt: skip
    per_slice_dp = slice_ranks // ep
    fsdp, data = (per_slice_dp, 1) if d.zero else (1, per_slice_dp)
    axes = dict(data=data, fsdp=fsdp, tensor=d.tp // d.tp_pods, context=d.cp // d.cp_pods,
                expert=ep, pipeline=d.pp // d.pp_pods)  # fmt: skip
    lines = [f"ici_{axis}_parallelism: {n}" for axis, n in axes.items()]
    lines.append(f"dcn_data_parallelism: {replicas // (d.fsdp_pods * d.ep_pods * d.cp_pods)}")
    across = {"fsdp": d.fsdp_pods, "pipeline": d.pp_pods, "tensor": d.tp_pods,
              "expert": d.ep_pods, "context": d.cp_pods}  # fmt: skip
    return lines + [f"dcn_{axis}_parallelism: {n}" for axis, n in across.items() if n > 1]


def _model_lines(m: Model, cannot: list) -> list[str]:
    """A model MaxText has no config of, as base.yml's keys that ``_model`` reads back: its
    dimensions, its MLP's activations, tied embeddings, its experts, its latent attention and
    its MTP modules."""
    lines = [f"base_emb_dim: {m.d_model}", f"base_num_query_heads: {m.heads}",
             f"base_num_kv_heads: {m.kv_heads}", f"base_mlp_dim: {m.d_ff}",
             f"base_num_decoder_layers: {m.layers}", f"head_dim: {m.head_dim}",
             f"vocab_size: {m.vocab}",
             "mlp_activations: " + ('["silu", "linear"]' if m.gated else '["gelu"]'),
             f"logits_via_embedding: {str(m.tied_embeddings).lower()}",
             f"mtp_num_layers: {m.mtp_layers}"]  # fmt: skip
    if m.moe is not None:
        e = m.moe
        lines += [f"num_experts: {e.experts}", f"num_experts_per_tok: {e.top_k}",
                  f"base_moe_mlp_dim: {e.d_ff}", f"shared_experts: {e.shared}",
                  f"first_num_dense_layers: {e.dense_layers}",
                  f"capacity_factor: {e.capacity_factor or -1.0}"]  # fmt: skip
        if e.routed_nodes is not None:
            cannot.append(f"node-limited routing ({e.routed_nodes} nodes a token)")
    if m.mla is not None:
        lines += ['attention_type: "mla"'] + [
            f"{key}: {getattr(m.mla, key)}"
            for key in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                        "v_head_dim")
        ]  # fmt: skip
    return lines


def _remat_lines(remat: str, cannot: list) -> list:
    """remat_policy for a policy of ours: its own name, custom's per-tensor keys, or the nearest
    MaxText has."""
    if remat in REMAT:
        return [f'remat_policy: "{remat}"']
    if remat.startswith("custom:"):
        kept = set(remat.partition(":")[2].split(","))
        on = [f"{n}: {'device' if n in kept else 'remat'}" for n in CUSTOM]
        return ['remat_policy: "custom"', *on]
    full = remat.startswith("full")
    nearest = "full" if full else {"none": "minimal_with_context"}.get(remat, "minimal")
    cannot.append(f"recompute {remat}: written as MaxText's {nearest}")
    return [f'remat_policy: "{nearest}"']
