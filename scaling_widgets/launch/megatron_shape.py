"""A model's shape as Megatron-LM's flags, and back: a preset of the same shape when one has it
(its vocabulary too), else a model built from the flags (``--num-layers``, ``--hidden-size``…)."""

from __future__ import annotations

import re

from ..catalog import preset_with_mtp
from ..cost.ground.refusals import refuse
from ..cost.transformer.shapes import MLA, Model, MoE
from ..presets import MODELS

TOKENIZER_VOCAB = {"GPT2BPETokenizer": 50257}  # the tokenizer's own vocabulary
# the tokenizer pretrain_gpt.py takes where a script names none (its ``pretrain(...,
# args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})``: NVIDIA/Megatron-LM@d98e8a64dd,
# pretrain_gpt.py L527; microsoft/Megatron-DeepSpeed@f4157be, pretrain_gpt.py L364)
DEFAULT_TOKENIZER = "GPT2BPETokenizer"


def _shape(model: Model) -> tuple:
    moe = model.moe
    return (
        model.layers,
        model.d_model,
        model.heads,
        model.kv_heads,
        moe.d_ff if moe else model.d_ff,
        moe.experts if moe else 0,
    )


def model_of(got: dict) -> str | Model:
    """The preset of the flags' shape, else a ``Model`` built from them.

    A flag left out takes Megatron-LM's default where the model reads one: an MLP of 4D, or with
    ``--swiglu`` 2/3 of it in multiples of 64; a head size H of D/N_h; experts as wide as the MLP,
    the router's top 2; no MTP modules without ``--mtp-num-layers``. A preset matches on L, D,
    N_h, K, the (expert) MLP width and the experts, and on the vocabulary where the flags give
    one; it takes the flags' MTP modules.

    Parameters
    ----------
    got : dict
        Megatron-LM's flags (``--num-layers``…) -> their values: one word, or True for a switch.

    Returns
    -------
    model : str or Model
        The preset's name, or a ``Model`` named "from the launch file".

    Raises
    ------
    InputError
        For a shape without a preset and without its vocabulary (``--vocab-size``, or a
        tokenizer whose vocabulary is known).

    References
    ----------
    .. [1] docs/MODEL.md §G (the model built from the flags).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (``_add_network_size_args``, ``_add_moe_args``,
       ``_add_mla_args``; ``validate_args``: the default ``ffn_hidden_size``, ``kv_channels``
       and ``moe_ffn_hidden_size``).
    """
    number = lambda flag, default=None: whole(got, flag, default)  # noqa: E731
    if "--num-layers" not in got or "--hidden-size" not in got:
        raise refuse("--num-layers", "given with --hidden-size (or give --model)", None)
    L, D, H = number("--num-layers"), number("--hidden-size"), number("--num-attention-heads")
    K = number("--num-query-groups", H) if "--group-query-attention" in got else H
    # --quick-geglu gates too (Megatron-LM@d98e8a64dd, training/argument_utils.py:
    # gated_linear_unit); only --swiglu sets the default width to 2/3 of 4D
    gated = "--swiglu" in got or "--quick-geglu" in got
    F = number("--ffn-hidden-size", _default_ffn(D, "--swiglu" in got))
    experts = number("--num-experts", 0)
    moe = None
    if experts:
        F_e = number("--moe-ffn-hidden-size", F)
        shared = number("--moe-shared-expert-intermediate-size", 0) // F_e
        moe = MoE(
            experts=experts,
            top_k=number("--moe-router-topk", 2),
            d_ff=F_e,
            shared=shared,
            dense_layers=_dense_layers(got.get("--moe-layer-freq", "1")),
        )
    vocab = (
        number("--vocab-size")
        if "--vocab-size" in got
        else TOKENIZER_VOCAB.get(got.get("--tokenizer-type", DEFAULT_TOKENIZER))
    )
    mtp = number("--mtp-num-layers", 0)  # Megatron's default: no MTP modules
    for name, preset in MODELS.items():
        same = _shape(preset) == (L, D, H, K, moe.d_ff if moe else F, experts)
        if same and (vocab is None or int(vocab) == preset.vocab):
            return preset_with_mtp(name, mtp)
    if vocab is None:
        raise refuse(
            "--vocab-size",
            "given for a model without a preset of its shape (or give"
            " --model-file with its config.json)",
            None,
        )
    return Model(
        "from the launch file",
        layers=L,
        d_model=D,
        d_ff=F,
        heads=H,
        kv_heads=K,
        head_dim=number("--kv-channels", D // H),
        vocab=int(vocab),
        gated=gated,
        tied_embeddings="--untie-embeddings-and-output-weights" not in got,
        moe=moe,
        mla=_mla(got),
        mtp_layers=mtp,
    )


def shape_flags(model: Model) -> list[str]:
    """The flags that give Megatron-LM the model's shape.

    Parameters
    ----------
    model : Model
        The model: its layers, widths, heads, vocabulary, and its experts and latent attention
        where it has them.

    Returns
    -------
    flags : list of str
        One ``--flag value`` (or switch) an entry, in the order a script lists them.

    References
    ----------
    .. [1] docs/MODEL.md §G (the frameworks' conventions).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/training/arguments.py`` (``_add_network_size_args``, ``_add_tokenizer_args``,
       ``_add_moe_args``, ``_add_mla_args``).
    """
    out = [
        f"--num-layers {model.layers}",
        f"--hidden-size {model.d_model}",
        f"--ffn-hidden-size {model.d_ff}",
        f"--num-attention-heads {model.heads}",
        f"--kv-channels {model.head_dim}",
        f"--vocab-size {model.vocab}",
    ]
    if model.kv_heads != model.heads:
        out += ["--group-query-attention", f"--num-query-groups {model.kv_heads}"]
    out += ["--swiglu"] * model.gated + ["--untie-embeddings-and-output-weights"] * (
        not model.tied_embeddings
    )
    moe = model.moe
    if moe is not None:
        out += [
            f"--num-experts {moe.experts}",
            f"--moe-router-topk {moe.top_k}",
            f"--moe-ffn-hidden-size {moe.d_ff}",
        ]
        out += [f"--moe-shared-expert-intermediate-size {moe.shared * moe.d_ff}"] * (moe.shared > 0)
        dense, sparse = moe.dense_layers, model.layers - moe.dense_layers
        out += [f"--moe-layer-freq '([0]*{dense}+[1]*{sparse})'"] * (dense > 0)
    if model.mla is not None:
        a = model.mla
        out += [
            "--multi-latent-attention",
            f"--kv-lora-rank {a.kv_lora_rank}",
            f"--qk-head-dim {a.qk_nope_head_dim}",
            f"--qk-pos-emb-head-dim {a.qk_rope_head_dim}",
            f"--v-head-dim {a.v_head_dim}",
        ]
        out += [f"--q-lora-rank {a.q_lora_rank}"] * (a.q_lora_rank > 0)
    return out + [f"--mtp-num-layers {model.mtp_layers}"] * (model.mtp_layers > 0)


def _default_ffn(D: int, gated: bool) -> int:
    """Megatron-LM's default width: 4D, or with SwiGLU 2/3 of it in multiples of 64."""
    return int(4 * D * 2 / 3 / 64) * 64 if gated else 4 * D


def _dense_layers(freq: str) -> int:
    """``([0]*3+[1]*58)``: the first three dense; ``1``: every layer MoE."""
    match = re.fullmatch(r"\(?\[0\]\*(\d+)\+\[1\]\*(\d+)\)?", str(freq).replace(" ", ""))
    if match:
        return int(match.group(1))
    if str(freq) == "1":
        return 0
    raise refuse("--moe-layer-freq", "1, or ([0]*N+[1]*M): N dense layers first", freq)


def _mla(got: dict) -> MLA | None:
    if "--multi-latent-attention" not in got:
        return None
    return MLA(
        kv_lora_rank=whole(got, "--kv-lora-rank", 512),
        qk_rope_head_dim=whole(got, "--qk-pos-emb-head-dim", 64),
        qk_nope_head_dim=whole(got, "--qk-head-dim", 128),
        v_head_dim=whole(got, "--v-head-dim", 128),
        q_lora_rank=whole(got, "--q-lora-rank", 0),
    )


def whole(got: dict, flag: str, default: int | None) -> int:
    """A flag's whole number (``default`` where it is not given), else refused by name.

    Parameters
    ----------
    got : dict
        The flags read: flag -> its value.
    flag : str
        The flag.
    default : int or None
        Its value where it is not given; None: it must be given.

    Returns
    -------
    value : int
        The whole number.
    """
    value = got.get(flag, default)
    if isinstance(value, list) or not re.fullmatch(r"[0-9]+", str(value)):
        raise refuse(flag, "a whole number", value)
    return int(value)
