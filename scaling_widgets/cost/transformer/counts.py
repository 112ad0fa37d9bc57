"""Parameters and training FLOPs (MODEL.md §A.5, §B.1, §D.1).

Every product here is formed in float64: a model's dimensions arrive as integers, and their
product (L·D·F, or L·T·N_h·H with a long sequence) would wrap around as int64.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..ground.records import record

if TYPE_CHECKING:  # ``values`` imports this module
    from .shapes import MLA, Model, MoE


@record(eq=False)
class ParamCount:
    """Parameters of a LLaMA-style model by part; ``mlp_active`` is the MLP a token goes through
    (a MoE model's top-k and shared experts and its routers, MODEL.md §D.1; the whole MLP if
    dense)."""

    mlp: np.ndarray
    attention: np.ndarray
    embeddings: np.ndarray
    mlp_active: np.ndarray | None = None
    mtp: float | np.ndarray = 0.0  # the MTP modules' own weights, beside the total (§D.1)
    mtp_routed: float | np.ndarray = 0.0  # their routed experts'

    def __repr__(self):
        return f"ParamCount(total={np.asarray(self.total)!r}, active={np.asarray(self.active)!r})"

    @property
    def total(self) -> float | np.ndarray:
        """All the parameters [parameters]."""
        return self.mlp + self.attention + self.embeddings

    @property
    def mlp_used(self) -> float | np.ndarray:
        """The MLP parameters a token goes through."""
        return self.mlp if self.mlp_active is None else self.mlp_active

    @property
    def active(self) -> float | np.ndarray:
        """The parameters each token uses: what the training FLOPs count (MODEL.md §D.1)."""
        return self.mlp_used + self.attention + self.embeddings


def param_count(
    *,
    layers: ArrayLike,
    d_model: ArrayLike,
    d_ff: ArrayLike,
    heads: ArrayLike,
    kv_heads: ArrayLike,
    head_dim: ArrayLike,
    vocab: ArrayLike,
    gated: ArrayLike = True,
    tied_embeddings: ArrayLike = False,
    moe: MoE | None = None,
    mla: MLA | None = None,
    mtp_layers: ArrayLike = 0,
) -> ParamCount:
    """Parameters of a LLaMA-style decoder (MODEL.md §A.5), with MoE layers and latent attention
    (D.1).

    MLP 3·L·D·F (gated; 2·L·D·F ungated); attention 2·D·(N_h + K)·H·L (Q and O are D x N_h·H,
    K and V are D x K·H); embeddings 2·V·D (V·D when tied). Norms and biases are ignored.
    With ``moe`` (a ``MoE``) the layers after its first ``dense_layers`` hold (E + S) experts of
    c·D·F_e and a router D·E each, of which a token uses k + S; with ``mla`` (an ``MLA``) the
    attention is counted projection by projection (``mla_attention``). Each of ``mtp_layers``
    multi-token-prediction modules holds one more layer like the last and a 2D x D projection,
    and shares the embeddings and the output layer: its weights are ``mtp``, beside the total, as
    the model's size is published without them.

    Parameters
    ----------
    layers : int or array_like
        L, the layers.
    d_model : int or array_like
        D, the model width [features].
    d_ff : int or array_like
        F, the MLP width of a dense layer [features].
    heads : int or array_like
        N_h, the query heads.
    kv_heads : int or array_like
        K, the key/value heads.
    head_dim : int or array_like
        H, the head size [features].
    vocab : int or array_like
        V, the vocabulary [tokens].
    gated : bool or array_like, default True
        Whether the MLP has a gate (three matrices, else two).
    tied_embeddings : bool or array_like, default False
        Whether the input and output embeddings are one matrix.
    moe : MoE, optional
        The MoE layers; None for a dense model.
    mla : MLA, optional
        The latent attention; None for N_h query and K key/value heads.
    mtp_layers : int or array_like, default 0
        D_mtp, the multi-token-prediction modules (DeepSeek-V3: 1).

    Returns
    -------
    params : ParamCount
        The parameters by part (MLP, attention, embeddings), and the MLP a token goes through
        [parameters].

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (parameters) and §D.1 (mixture-of-experts models).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Some
       Problems to Work" (Question 1, LLaMA-2 13B's parameters).
    .. [3] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.

    Examples
    --------
    >>> from scaling_widgets.presets import MODELS
    >>> v3 = param_count(**MODELS["deepseek-v3"].dims())
    >>> [round(float(n) / 1e9, 1) for n in (v3.total, v3.active, v3.mtp, v3.mtp + v3.embeddings)]
    [671.0, 37.6, 11.6, 13.5]
    >>> p = param_count(layers=40, d_model=5120, d_ff=13_824, heads=40, kv_heads=40,
    ...                 head_dim=128, vocab=32_000)
    >>> round(float(p.total) / 1e9, 1)
    13.0
    """
    L, D, F, N_h, K, H, V = _floats(layers, d_model, d_ff, heads, kv_heads, head_dim, vocab)
    c = np.where(gated, 3.0, 2.0)  # matrices per MLP: in, out, and the gate
    attention = (2 * D * (N_h + K) * H if mla is None else mla_attention(D, N_h, mla)) * L
    embeddings = np.where(tied_embeddings, 1.0, 2.0) * V * D
    M = np.asarray(mtp_layers, dtype=float)
    projection = 2 * D * D  # an MTP module's merge of the hidden state and the next embedding
    if moe is None:
        mtp = M * (c * D * F + attention / L + projection)
        return ParamCount(mlp=c * L * D * F, attention=attention, embeddings=embeddings, mtp=mtp)
    dense, moe_layers = c * moe.dense_layers * D * F, L - moe.dense_layers
    per_expert = c * D * moe.d_ff
    router, experts = moe.experts * D, per_expert * moe_layers  # per MoE layer; per expert
    return ParamCount(
        mlp=dense + (moe.experts + moe.shared) * experts + moe_layers * router,
        attention=attention,
        embeddings=embeddings,
        mlp_active=dense + (moe.top_k + moe.shared) * experts + moe_layers * router,
        # each an MoE layer, as the model's last
        mtp=M * ((moe.experts + moe.shared) * per_expert + router + attention / L + projection),
        mtp_routed=M * moe.experts * per_expert,
    )


def mla_attention(D: ArrayLike, N_h: ArrayLike, mla: MLA) -> float | np.ndarray:
    """Parameters of one layer of multi-head latent attention (MODEL.md §D.1): the query's down and
    up projections (or one D x N_h·(d_nope + d_rope) without a query rank), the key/value down
    projection D x (r_kv + d_rope) and up projection r_kv x N_h·(d_nope + d_v), and the output
    N_h·d_v x D.

    Parameters
    ----------
    D : float or array_like
        D, the model width (a float: its products may exceed int64) [features].
    N_h : float or array_like
        N_h, the query heads (a float: its products may exceed int64).
    mla : MLA
        The latent attention's ranks and head widths.

    Returns
    -------
    params : float or np.ndarray
        The attention parameters of one layer [parameters].

    References
    ----------
    .. [1] docs/MODEL.md §D.1 (mixture-of-experts models: multi-head latent attention).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.

    Examples
    --------
    >>> from scaling_widgets.cost.transformer.shapes import MLA
    >>> v3 = MLA(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
    ...          q_lora_rank=1536)
    >>> round(float(mla_attention(7168.0, 128.0, v3)) / 1e6, 1)  # DeepSeek-V3, per layer
    187.1
    """
    qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    r_q = mla.q_lora_rank
    query = D * r_q + r_q * N_h * qk if r_q else D * N_h * qk
    r_kv = mla.kv_lora_rank
    key_value = D * (r_kv + mla.qk_rope_head_dim) + r_kv * N_h * (
        mla.qk_nope_head_dim + mla.v_head_dim
    )
    return query + key_value + N_h * mla.v_head_dim * D


def training_flops(*, params: ArrayLike, tokens: ArrayLike) -> float | np.ndarray:
    """Training FLOPs ≈ 6 · params · tokens (MODEL.md §A.5).

    Parameters
    ----------
    params : float or array_like
        Ψ, the parameters a token uses [parameters].
    tokens : float or array_like
        The tokens trained on [tokens].

    Returns
    -------
    flops : float or np.ndarray
        The FLOPs of training on ``tokens`` tokens [FLOP].

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (parameters, FLOPs, step time).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       "Fully-Sharded Data Parallelism (FSDP)" (LLaMA-3 70B on 15e12 tokens: 6.3e24 FLOPs).
    .. [3] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020
       (6·N FLOPs a token).

    Examples
    --------
    >>> training_flops(params=70e9, tokens=[15e12, 1e12])
    array([6.3e+24, 4.2e+23])
    """
    Psi, tokens = _floats(params, tokens)
    return 6 * Psi * tokens


REMAT_POLICIES = ("checkpoints", "none", "selective", "full")
# What the frameworks offer (Megatron-LM's --recompute-granularity, torchtitan's and DeepSpeed's
# activation checkpointing, MaxText's remat policies): the chapter's "checkpoints" after the big
# matmuls is its memory count, not a policy any of them runs, so the planner does not choose it.
FRAMEWORK_REMAT = ("none", "selective", "full")


def flops_per_token(
    *,
    params: ArrayLike,
    layers: ArrayLike,
    seq_len: ArrayLike,
    heads: ArrayLike,
    head_dim: ArrayLike,
    attention: ArrayLike = False,
) -> float | np.ndarray:
    """Model FLOPs per trained token: 6·Ψ, plus 12·L·T·N_h·H with ``attention`` (MODEL.md §B.1).

    The attention scores and their weighted sum (Q·Kᵀ and A·V) cost 4·T·N_h·H per token and
    layer forward, three times that forward and backward; causal masking is not subtracted.

    Parameters
    ----------
    params : float or array_like
        Ψ, the parameters a token uses [parameters].
    layers : int or array_like
        L, the layers.
    seq_len : int or array_like
        T, the sequence length [tokens].
    heads : int or array_like
        N_h, the query heads.
    head_dim : int or array_like
        H, the head size [features].
    attention : bool or array_like, default False
        Whether the attention scores and their weighted sum are counted.

    Returns
    -------
    flops : float or np.ndarray
        Model FLOPs per trained token, forward and backward [FLOP/token].

    References
    ----------
    .. [1] docs/MODEL.md §B.1 (full accounting: FLOPs, MFU and HFU).
    .. [2] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020
       (6·N FLOPs a token).

    Examples
    --------
    >>> flops_per_token(params=13e9, layers=40, seq_len=[4096, 32768], heads=40, head_dim=128,
    ...                 attention=True) / 6 / 13e9
    array([1.12905551, 2.03244406])
    """
    Psi, L, T, N_h, H = _floats(params, layers, seq_len, heads, head_dim)
    return 6 * Psi + np.where(attention, 12 * L * T * N_h * H, 0.0)


def recompute_flops_per_token(
    *,
    params: ArrayLike,
    layers: ArrayLike,
    seq_len: ArrayLike,
    heads: ArrayLike,
    head_dim: ArrayLike,
    remat: str = "checkpoints",
    attention: ArrayLike = True,
) -> float | np.ndarray:
    """Hardware FLOPs per token that recomputation adds to the model's (MODEL.md §B.1, §B.4).

    "full": the whole forward again, 2·Ψ (+ 4·L·T·N_h·H when ``attention`` is counted);
    "selective": only the attention core, 4·L·T·N_h·H (Korthikanti et al. 2022); "none" and the
    chapter's "checkpoints": nothing.

    Parameters
    ----------
    params : float or array_like
        Ψ, the parameters a token uses [parameters].
    layers : int or array_like
        L, the layers.
    seq_len : int or array_like
        T, the sequence length [tokens].
    heads : int or array_like
        N_h, the query heads.
    head_dim : int or array_like
        H, the head size [features].
    remat : str, default "checkpoints"
        The recompute policy, one name (``REMAT_POLICIES``; ``per_choice`` for an array); a name
        other than "full" and "selective" adds nothing.
    attention : bool or array_like, default True
        Whether the attention scores and their weighted sum are counted (in "full"'s forward
        pass again; "selective" counts them whatever this says).

    Returns
    -------
    flops : float or np.ndarray
        The FLOPs recomputation adds per trained token [FLOP/token].

    References
    ----------
    .. [1] docs/MODEL.md §B.1 (full accounting: FLOPs, MFU and HFU) and §B.4 (activation memory
       and recompute).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.

    Examples
    --------
    >>> one = dict(layers=1, seq_len=1, heads=1, head_dim=1)
    >>> float(recompute_flops_per_token(params=1e9, remat="full", **one))
    2000000004.0
    """
    Psi, L, T, N_h, H = _floats(params, layers, seq_len, heads, head_dim)
    attention_forward = 4 * L * T * N_h * H
    full = 2 * Psi + np.where(attention, attention_forward, 0.0)
    return {"full": full, "selective": attention_forward}.get(remat, 0.0 * Psi)


def _floats(*values) -> tuple[np.ndarray, ...]:
    """Each value as float64: a product of five integers' dimensions stays exact and finite."""
    return tuple(np.asarray(v, dtype=np.float64) for v in values)


def padding_flops(model: Model) -> float:
    """6·(CF − 1)·k/(k + S) of the experts' active parameters: the padded tokens' FLOPs per
    token.

    Parameters
    ----------
    model : Model
        The model: its MoE layers (k, S, F_e and CF), its gate, D and L.

    Returns
    -------
    flops : float
        The FLOPs per token spent on padding to the capacity factor; 0 for a dense or dropless
        model [FLOP/token].
    """
    if model.moe is None:
        return 0.0
    moe, c = model.moe, 3 if model.gated else 2
    experts = (
        (moe.top_k + moe.shared) * c * model.d_model * moe.d_ff * (model.layers - moe.dense_layers)
    )
    return 6 * (model.padded_work - 1) * experts
