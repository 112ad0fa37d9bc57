"""What a layer keeps for its backward pass under a recompute policy, per token (MODEL.md §B.4,
§E.1, §E.4): each of its tensors' bytes (``tensor_bytes``), the ones a policy keeps
(``kept_bytes``), and what exists beside them while a layer runs its backward (``working_bytes``).

Tier 3 of cost/, with the transformer's other formulas (``tests/test_tiers.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .experts import dispatch_bytes
from .recompute import NONE, Policy

if TYPE_CHECKING:
    from .shapes import Model

# The linear layers' inputs: what an fp8 matmul reads cast, and TransformerEngine keeps so; a
# MoE's dispatched copies are its experts' first matmul's input (GroupedLinear)
FP8_INPUTS = ("attention_norm", "context", "mlp_norm", "mlp_activation", "dispatch")
# What torch.compile does not keep (MODEL.md §F.5): what its pointwise kernels make again from
# what is kept anyway, and the MLP's last matmul's output, which an op-level policy saves eager
# but no backward reads: the partitioner keeps what the backward reads. The MLP's reduce-scatter's
# output is not read either, but a saved collective stayed alive through its wait until
# pytorch/pytorch#149652 (2025-03), later than the measured runs with TP: it is counted kept
COMPILED_AWAY = frozenset({"attention_norm", "mlp_norm", "mlp_activation", "mlp_unreduced"})


def tensor_bytes(
    model: Model,
    seq_len: ArrayLike,
    tp: ArrayLike,
    sequence_parallel: ArrayLike,
    flash: bool,
    activation_bytes: float = 2.0,
    fp8_inputs: bool = False,
    swiglu_fp8: bool = False,
    softmax_bytes: float = 0.0,
    eager_glu: bool = False,
    combine_bytes: float = 0.0,
    gathered_inputs: bool = False,
    kv_gathered: ArrayLike = 1,
) -> dict:
    """Each of a layer's tensors (``recompute.TENSORS``) for one token of a microbatch on one
    chip.

    With A bytes an element: the input, the norms' outputs, the residual and the output
    projections, A·D (split over TP under sequence parallelism); Q and the attention output
    A·N_h·H, K and V A·K·H, the MLP's gate, up-projection and activation A·F (no gate in a plain
    MLP), split over TP; dropout's two byte masks, 2·D; a MoE's dispatched copies; and without
    flash attention the softmax of the scores and, with dropout, its mask and output,
    (A + S + (1 + A)·[p > 0])·N_h·s over TP, S the softmax's own fp32 output where it keeps one.
    "chapter_input" is the chapter's count of the input, A·D over TP.

    Parameters
    ----------
    model : Model
        The model: its widths, heads, gate, dropout and experts.
    seq_len : float or array_like
        s, the tokens of a sequence on the chip (s/CP under context parallelism) [tokens].
    tp : int or array_like
        Y, the tensor-parallel degree [chips].
    sequence_parallel : bool or array_like
        Whether the D-wide tensors are split over TP too.
    flash : bool
        Whether a flash kernel keeps the scores out of HBM.
    activation_bytes : float, default 2.0
        A, the bytes of an activation's element [bytes].
    fp8_inputs : bool, default False
        Whether the linear layers keep their inputs as the fp8 copies their fp8 matmuls read, a
        byte each (TransformerEngine): the attention's norm and output, the MLP's norm and
        activation, a MoE's dispatched copies.
    gathered_inputs : bool, default False
        Whether, under sequence parallelism, the TP matmuls keep the whole sequence they
        all-gathered for their weights' gradient (PyTorch's DTensor), not the chip's shard of
        the norms' outputs, gathered again in the backward (Megatron-LM): the norms' outputs
        A·D, not A·D/TP (``Profile.gathered_inputs``).
    kv_gathered : int or array_like, default 1
        G, the chips whose keys and values the attention keeps: CP where an all-gather CP's
        attention keeps the whole sequence's (``Profile.cp_gathered_kept``), else 1 [chips]; the
        other G − 1 chips' are "kv_gathered", A·2·K·H·(G − 1)/TP.
    swiglu_fp8 : bool, default False
        Whether the SwiGLU's input, the gate and the up-projection, is kept in fp8, a byte each
        (Megatron-Core's ``activation_func_fp8_input_store``: "Store the input of MLP activation
        function in FP8 for backprop"; DeepSeek-V3's report §3.3.2).
    eager_glu : bool, default False
        Whether a gated MLP runs as eager PyTorch ops, ``w2(silu(w1(x)) * w3(x))``: the
        product's multiplication keeps the SiLU's output beside the up-projection, A·F more
        (``Profile.eager_glu``); compiled, it is made again.
    combine_bytes : float, default 0.0
        C, the bytes of each element of a MoE's routed copies (k·CF·D a token) that the scores'
        multiplication keeps for the scores' gradient (``Profile.combine_bytes``): 4 where it
        runs in fp32 (torchtitan), 0 where the scores are applied inside the experts'
        activation (Megatron-Core) [bytes].
    softmax_bytes : float, default 0.0
        S, without flash attention the bytes a score's softmax keeps beside the A-byte copy the
        next matmul reads: 0 for a fused kernel that keeps only its output, 4 for PyTorch's
        eager softmax in fp32 (``Profile.softmax_bytes``) [bytes].

    Returns
    -------
    sizes : dict of str to float or np.ndarray
        Each tensor's bytes for one token on the chip [bytes/token].

    References
    ----------
    .. [1] docs/MODEL.md §E.1 (the activations) and §E.4 (recompute as frameworks name it).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023 (Table 2, generalised to grouped KV heads and a gated MLP).

    Examples
    --------
    >>> from scaling_widgets.presets import MODELS
    >>> sizes = tensor_bytes(MODELS["llama-3-70b"], 4096, 8, True, flash=True)
    >>> [float(sizes[n]) for n in ("input", "query", "mlp_gate")]
    [2048.0, 2048.0, 7168.0]
    """
    A, D, F = activation_bytes, model.d_model, model.active_width
    t = np.asarray(tp, dtype=float)
    sp = np.where(np.asarray(sequence_parallel, dtype=bool), t, 1)
    q, kv = model.heads * model.head_dim, model.kv_heads * model.head_dim
    dropout = model.dropout > 0
    scores = 0.0 if flash else (A + softmax_bytes + (1 + A) * dropout) * model.heads * seq_len / t
    width = {"query": q, "context": q, "key": kv, "value": kv, "mlp_gate": F, "mlp_activation": F}
    # the other CP chips' keys and values, where the attention keeps what its all-gather gathered
    width["kv_gathered"] = 2 * kv * (np.asarray(kv_gathered, dtype=float) - 1)
    width["mlp_up"] = F if model.gated else 0
    d_wide = ("input", "attention_norm", "out_proj", "mlp_input", "mlp_norm", "mlp_out")
    sizes = {n: A * D / sp for n in d_wide}
    if gathered_inputs:  # the whole sequence, as the TP matmuls gathered it
        sizes |= {n: A * D for n in ("attention_norm", "mlp_norm")}
    # the MLP's last matmul's output before it is summed over TP, the whole sequence; and under
    # sequence parallelism the reduce-scatters' outputs after the attention and the MLP
    reduced = A * D / sp * (sp > 1)
    sizes |= {"mlp_unreduced": A * D, "attention_reduced": reduced, "mlp_reduced": reduced}
    sizes |= {n: A * w / t for n, w in width.items()}
    sizes |= {"dropout_masks": 2 * dropout * D / sp, "dispatch": dispatch_bytes(model, A) / t}
    sizes["combine"] = dispatch_bytes(model, combine_bytes) / t  # the experts' outputs, weighed
    if fp8_inputs:  # the linear layers' inputs, kept as their fp8 matmuls read them
        sizes |= {n: sizes[n] / A for n in FP8_INPUTS}
    if eager_glu and model.gated:  # the SiLU's output, kept by the multiplication, beside its input
        sizes["mlp_activation"] = 2 * sizes["mlp_activation"]
    if swiglu_fp8 and model.gated:  # cast to fp8 for the backward, back to bf16 there (§E.4)
        sizes |= {n: sizes[n] / A for n in ("mlp_gate", "mlp_up")}
    # the backward of the softmax holds two score-sized gradients, in the softmax's dtype
    grads = 0.0 if flash else 2 * max(A, softmax_bytes) * model.heads * seq_len / t
    return sizes | {"scores": scores, "score_gradients": grads, "chapter_input": A * D / t}


def kept_bytes(
    p: Policy, sizes: dict, compiled: bool = False, chunk_layers: ArrayLike = 1.0
) -> float | np.ndarray:
    """What a layer keeps under a policy, per token, averaged over a pipeline chunk's layers:
    the policy's tensors (one input for every ``p.every`` layers) on the layers it applies to,
    everything on the others. A policy that runs the attention core again keeps no scores;
    compiled, the norms' outputs and the MLP's activation are made again and what no backward
    reads is not kept (``COMPILED_AWAY``).

    Parameters
    ----------
    p : Policy
        The recompute policy (``recompute.policy``).
    sizes : dict of str to float or np.ndarray
        Each tensor's bytes for one token (``tensor_bytes``) [bytes/token].
    compiled : bool, default False
        Whether torch.compile runs the layer.
    chunk_layers : float or array_like, default 1.0
        The layers of a pipeline chunk, for a policy that applies to the first N [layers].

    Returns
    -------
    kept : float or np.ndarray
        Bytes one layer keeps for one token, on average [bytes/token].

    References
    ----------
    .. [1] docs/MODEL.md §B.4 (activation memory and recompute), §E.4 (recompute as frameworks
       name it) and §F.5 (torch.compile: the activations kept).

    Examples
    --------
    >>> from scaling_widgets.presets import MODELS
    >>> from scaling_widgets.cost.transformer.recompute import policy
    >>> sizes = tensor_bytes(MODELS["llama-2-70b"], 4096, 1, False, flash=True)
    >>> [round(float(kept_bytes(policy(n), sizes)) / 1024) for n in ("none", "minimal", "full")]
    [268, 164, 16]
    """
    away = COMPILED_AWAY if compiled else frozenset()
    # the attention's core run again: its scores, and the keys and values it gathers again
    keeps = p.keeps - away - ({"scores", "kv_gathered"} if p.reruns.core else frozenset())
    mine = sum(sizes[n] for n in keeps) / p.every
    share = p.share(chunk_layers)
    return share * mine + (1 - share) * sum(sizes[n] for n in NONE.keeps - away)


def working_bytes(
    p: Policy, sizes: dict, compiled: bool = False, gradients: str = "layer"
) -> float | np.ndarray:
    """What exists beside the kept activations while a layer runs its backward pass, per token:
    the whole activations of the layers recomputed at once, and the gradients of a layer's
    activations: all of them as PyTorch's autograd holds them ("layer"), the scores' as two
    score-sized arrays (the incoming gradient and the one the softmax's backward makes, each
    node's freed once it has run), or under XLA, which reuses each residual's buffer once the
    backward has read it, the largest set alive at once: the gradients of the MLP's gate and
    up-projection ("mlp-inputs").

    Parameters
    ----------
    p : Policy
        The recompute policy (``recompute.policy``).
    sizes : dict of str to float or np.ndarray
        Each tensor's bytes for one token (``tensor_bytes``) [bytes/token].
    compiled : bool, default False
        Whether torch.compile runs the layer.
    gradients : str, default "layer"
        The stack's gradients held at once: "layer" or "mlp-inputs" (``Profile.gradients``).

    Returns
    -------
    working : float or np.ndarray
        Bytes beside the kept activations, for one token [bytes/token].

    References
    ----------
    .. [1] docs/MODEL.md §E.1 (the backward working set).
    """
    whole = kept_bytes(NONE, sizes, compiled)
    # the scores' gradients: the incoming one and the one the softmax's backward makes, each
    # node's freed once it has run, not a gradient for each score tensor kept
    layer = whole - sizes["scores"] + sizes["score_gradients"]
    held = layer if gradients == "layer" else sizes["mlp_gate"] + sizes["mlp_up"]
    return p.recomputed * whole + held
