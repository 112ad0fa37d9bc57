"""A Hugging Face ``config.json``, as published, read into a ``Model`` (MODEL.md §D.4).

The file is read as JSON: no network, no ``transformers``. The field names are those of the
LLaMA, Mistral and Mixtral, Qwen2 and Qwen3 (dense and MoE), DeepSeek-V3 and Gemma families,
whose MLPs are gated (SwiGLU, GeGLU), and of GPT-2, GPT-J, GPT-NeoX, OPT and Falcon, whose MLPs
are not (one up-projection, GELU or ReLU, one down). A file of another architecture is refused
with one line naming the fields it lacks.
"""

from __future__ import annotations

from .cost.transformer.shapes import MLA, Model, MoE

FAMILIES = (
    "LLaMA, Mistral/Mixtral, Qwen2/Qwen3 (dense and MoE), DeepSeek-V3, Gemma, GPT-2, GPT-J,"
    " GPT-NeoX, OPT, Falcon"
)
# model_type -> MLP without a gate: two matrices a layer, 2·D·F (MODEL.md §A.5)
UNGATED = ("gpt2", "gptj", "gpt_neox", "opt", "falcon")
# Other families' names for the fields read (GPT-2 and GPT-J: n_*; OPT: ffn_dim; Falcon: ...).
ALIASES = {
    "num_hidden_layers": ("n_layer",),
    "hidden_size": ("n_embd",),
    "num_attention_heads": ("n_head",),
    "intermediate_size": ("n_inner", "ffn_dim", "ffn_hidden_size"),
    "num_key_value_heads": ("num_kv_heads",),
}
REQUIRED = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "vocab_size",
)


def looks_like_hf(data: dict) -> bool:
    """A Hugging Face config (rather than our own model keys).

    Parameters
    ----------
    data : dict
        A model's JSON object.

    Returns
    -------
    found : bool
        Whether it has ``model_type``, ``architectures``, ``num_hidden_layers`` or
        ``hidden_size``.
    """
    return any(
        key in data for key in ("model_type", "architectures", "num_hidden_layers", "hidden_size")
    )


def _in_our_names(config: dict) -> dict:
    """The config with other families' field names read as LLaMA's; an MLP width left out (GPT-2,
    GPT-J, Falcon's n_inner None) is their 4·D."""
    out = dict(config)
    for name, others in ALIASES.items():
        if out.get(name) is None:
            out[name] = next((config[o] for o in others if config.get(o) is not None), None)
    kind = config.get("model_type")
    if kind in UNGATED and out.get("intermediate_size") is None and out.get("hidden_size"):
        out["intermediate_size"] = 4 * out["hidden_size"]
    if kind == "falcon" and out.get("num_key_value_heads") is None and config.get("multi_query"):
        out["num_key_value_heads"] = 1  # Falcon-7B: one KV head shared by every query head
    return out


def model_from_hf(config: dict, name: str | None = None) -> Model:
    """The ``Model`` a config describes; its MoE layers and latent attention included.

    Other families' field names are read as LLaMA's (``ALIASES``); an ungated MLP left out is
    4·D wide. The MLP is gated but for GPT-2, GPT-J, GPT-NeoX, OPT and Falcon; the embeddings are
    tied where the config leaves ``tie_word_embeddings`` out. With DeepSeek's group-limited
    routing (``n_group`` > 1), a token's experts lie in at most ``topk_group`` groups.

    Parameters
    ----------
    config : dict
        A ``config.json`` as published.
    name : str, optional
        The model's name; None: the config's first architecture, "… from config.json".

    Returns
    -------
    model : Model
        The model: L, D, F, N_h, K, H, V, the gate, tied embeddings, and its MoE and MLA where
        the config has them.

    Raises
    ------
    ValueError
        For a config that lacks a field read (naming the families read), embeddings projected to
        another width (OPT-350m), MoE on some layers only, or a shared expert that is not a
        whole number of expert widths.

    References
    ----------
    .. [1] docs/MODEL.md §D.4 (model files) and §D.1 (mixtures of experts).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024 (sec. 3.2.2:
       group-limited routing).
    """
    config = _in_our_names(config)
    kind = config.get("model_type", "unknown")
    missing = [
        key
        for key in REQUIRED
        if not isinstance(config.get(key), int) or isinstance(config.get(key), bool)
    ]
    if missing:
        raise ValueError(
            f"config.json (model_type {kind!r}) lacks {', '.join(missing)}: the field names of "
            f"{FAMILIES} are read"
        )
    projected = config.get("word_embed_proj_dim")  # OPT-350m: embeddings narrower than D
    if projected is not None and projected != config["hidden_size"]:
        raise ValueError(
            f"config.json (model_type {kind!r}) has word_embed_proj_dim {projected} beside"
            f" hidden_size {config['hidden_size']}: embeddings projected to another width are not"
            " modelled (give the model's dimensions as JSON instead)"
        )
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    mla = _mla(config)
    return Model(
        name=name or _name(config),
        layers=config["num_hidden_layers"],
        d_model=config["hidden_size"],
        d_ff=config["intermediate_size"] or _moe_width(config),  # an all-MoE config may give 0
        heads=heads,
        kv_heads=kv_heads,
        head_dim=_head_dim(config, heads, mla),
        vocab=config["vocab_size"],
        gated=kind not in UNGATED,  # SwiGLU or GeGLU, but for GPT-2, GPT-J, GPT-NeoX, OPT, Falcon
        # transformers' default when a config leaves it out is to tie them.
        tied_embeddings=bool(config.get("tie_word_embeddings", True)),
        moe=_moe(config, kind),
        mla=mla,
        mtp_layers=config.get("num_nextn_predict_layers") or 0,  # DeepSeek-V3's MTP modules
    )


def _name(config: dict) -> str:
    architectures = config.get("architectures") or [config.get("model_type", "model")]
    return f"{architectures[0]} from config.json"


def _head_dim(config: dict, heads: int, mla: MLA | None) -> int:
    """H of the attention scores: the config's, else D/N_h; with latent attention the mean of
    the query-key and value widths (Q·Kᵀ runs over one, A·V over the other)."""
    if mla is not None:
        return (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim) // 2
    return config.get("head_dim") or config["hidden_size"] // heads


def _moe_width(config: dict) -> int:
    return config.get("moe_intermediate_size") or 0


def _mla(config: dict) -> MLA | None:
    if not config.get("kv_lora_rank"):
        return None
    return MLA(
        kv_lora_rank=config["kv_lora_rank"],
        qk_rope_head_dim=config["qk_rope_head_dim"],
        qk_nope_head_dim=config["qk_nope_head_dim"],
        v_head_dim=config["v_head_dim"],
        q_lora_rank=config.get("q_lora_rank") or 0,
    )


def _moe(config: dict, kind: str) -> MoE | None:
    """The MoE layers in each family's field names (None for a dense model)."""
    experts = (
        config.get("n_routed_experts")
        or config.get("num_local_experts")
        or config.get("num_experts")
    )
    if not experts:
        return None
    top_k = config.get("num_experts_per_tok")
    # Mixtral's experts are its intermediate_size wide; the others name the expert width.
    width = _moe_width(config) or config["intermediate_size"]
    if (
        (config.get("decoder_sparse_step") or 1) != 1
        or config.get("mlp_only_layers")
        or (config.get("moe_layer_freq") or 1) != 1
    ):
        raise ValueError(
            f"config.json (model_type {kind!r}): MoE only on some layers is not read; every layer "
            "from"
            " first_k_dense_replace on must be MoE"
        )
    return MoE(
        experts=experts,
        top_k=top_k,
        d_ff=width,
        shared=_shared(config, width, kind),
        dense_layers=config.get("first_k_dense_replace") or 0,
        # DeepSeek's group-limited routing: a token's experts in at most topk_group of n_group
        # groups, each a node in its training (DeepSeek-V3 report, sec. 3.2.2).
        routed_nodes=config.get("topk_group") if (config.get("n_group") or 1) > 1 else None,
    )


def _shared(config: dict, width: int, kind: str) -> int:
    """Shared experts, counted in routed experts' widths (Qwen2-MoE names one wide shared
    expert)."""
    if config.get("n_shared_experts"):
        return config["n_shared_experts"]
    shared_width = config.get("shared_expert_intermediate_size") or 0
    if shared_width % width:
        raise ValueError(
            f"config.json (model_type {kind!r}): shared_expert_intermediate_size {shared_width} is "
            "not"
            f" a whole number of expert widths ({width})"
        )
    return shared_width // width
