"""Activation memory under recompute policies (MODEL.md §B.4, §E.1).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
Table 2: bytes per layer for a microbatch of b sequences of length s, hidden h, a heads and
tensor-parallel degree t, with 2-byte activations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .kept import kept_bytes, tensor_bytes
from .recompute import policy

if TYPE_CHECKING:
    from .shapes import Model


def activation_bytes_per_layer(
    *,
    seq_len: ArrayLike,
    microbatch_seqs: ArrayLike,
    d_model: ArrayLike,
    heads: ArrayLike,
    tp: ArrayLike = 1,
    remat: str = "none",
    sequence_parallel: ArrayLike = False,
) -> float | np.ndarray:
    """Bytes one layer keeps for the backward pass, per chip (Korthikanti et al. 2022, Table 2).

    - "none": s·b·h·(34 + 5·a·s/h) / t with sequence parallelism, else s·b·h·(10 + 24/t +
      5·a·s/(h·t));
    - "selective" (the attention core recomputed): 34·s·b·h / t with SP, else s·b·h·(10 + 24/t);
    - "full" (only the layer's input kept): 2·s·b·h, / t with SP.

    Parameters
    ----------
    seq_len : float or array_like
        s, the tokens of a sequence (the book's T) [tokens].
    microbatch_seqs : float or array_like
        b, the sequences of a microbatch [sequences].
    d_model : float or array_like
        h, the model width (the book's D) [features].
    heads : float or array_like
        a, the attention heads (the book's N_h).
    tp : float or array_like, default 1
        t, the tensor-parallel degree (the book's Y) [chips].
    remat : str, default "none"
        "none", "selective" or "full"; any other name is read as "none".
    sequence_parallel : bool or array_like, default False
        Whether the activations outside the TP regions are split over t too.

    Returns
    -------
    activation_bytes : float or np.ndarray
        Bytes of activations one layer keeps per chip for the backward pass [bytes].

    References
    ----------
    .. [1] docs/MODEL.md §B.4 (activation memory and recompute).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.

    Examples
    --------
    >>> kw = dict(seq_len=2048, microbatch_seqs=1, d_model=12288, heads=96, tp=8)
    >>> [round(float(activation_bytes_per_layer(remat=r, sequence_parallel=True, **kw)) / 2**20)
    ...  for r in ("none", "selective", "full")]
    [342, 102, 6]
    """
    s, b, h, a, t = (
        np.asarray(v, dtype=float) for v in (seq_len, microbatch_seqs, d_model, heads, tp)
    )
    sbh = s * b * h
    sp = np.asarray(sequence_parallel, dtype=bool)
    if remat == "full":
        return 2 * sbh / np.where(sp, t, 1)
    # the softmax and dropout of the scores
    attention = 0.0 if remat == "selective" else 5 * a * s / h
    return np.where(sp, sbh * (34 + attention) / t, sbh * (10 + 24 / t + attention / t))


def layer_activation_bytes(
    *,
    model: Model,
    seq_len: float | np.ndarray,
    tp: ArrayLike,
    remat: str,
    sequence_parallel: ArrayLike,
    flash: bool,
    selective: str,
    activation_bytes: float = 2.0,
    compiled: bool = False,
    chunk_layers: ArrayLike = 1.0,
) -> float | np.ndarray:
    """Bytes one layer keeps for its backward pass, per token of a microbatch on one chip (MODEL.md
    §B.4, §E.1, §F.5).

    Without recompute (Korthikanti et al. 2022, generalised to grouped KV heads and a gated MLP),
    with A bytes an element, N_h·H query width and K·H key/value width:
    - on every TP chip, unless sequence parallelism splits them: the two norms' inputs and
      outputs, 4·A·D, and with dropout its two byte masks, 2·D;
    - split over TP: Q, K, V and the attention output, A·(2·N_h·H + 2·K·H), and the MLP's
      up-projections and activation, A·3F (gated) or A·2F; a MoE layer's k·CF dispatch copies;
    - without flash attention, also the softmax of the scores, A·N_h·s, split over TP, and with
      dropout its mask and output, (1 + A)·N_h·s: B.4's 5·a·s/h of sbh at A = 2.
    "selective" keeps this without the scores when the stack recomputes the attention core
    ("attention", Megatron-LM), or the layer's input, every other matmul's output and the
    attention's, A·(2D + 2·N_h·H + K·H + F), under op-level recompute ("alternate-matmuls",
    torchtitan). "full" keeps the layer's input, A·D; "checkpoints" the chapter's A·(D + 2F).
    A framework's own policy keeps its own tensors (``recompute.py``).
    Compiled (torch.compile), the backward recomputes what a pointwise kernel made from what it
    keeps anyway: the norms' outputs (their inputs kept, 2·A·D) and the MLP's activation (the
    up-projections kept, A·2F gated, A·F not).

    Parameters
    ----------
    model : Model
        The model (its widths, heads, gate, dropout and experts).
    seq_len : float or array_like
        s, the tokens of a sequence on the chip (s/CP under context parallelism) [tokens].
    tp : int or array_like
        Y, the tensor-parallel degree [chips].
    remat : str
        The recompute policy, one name (``recompute.policy``): "none", "selective", "full",
        "checkpoints" or a framework's own; ValueError for a name no framework uses.
    sequence_parallel : bool or array_like
        Whether sequence parallelism splits the norms' activations over TP.
    flash : bool
        Whether flash attention runs (no softmax of the scores kept).
    selective : str
        What "selective" recomputes: "attention" (Megatron-LM) or "alternate-matmuls"
        (torchtitan); any other name is read as "alternate-matmuls".
    activation_bytes : float, default 2.0
        A, the bytes of an activation's element [bytes].
    compiled : bool, default False
        Whether torch.compile runs the layer.
    chunk_layers : float or array_like, default 1.0
        The layers of a pipeline chunk, for a policy that recomputes only the first N of them
        (Megatron-LM's block method) [layers].

    Returns
    -------
    bytes : float or np.ndarray
        What one layer keeps, per token of a microbatch on the chip [bytes/token].

    References
    ----------
    .. [1] docs/MODEL.md §B.4 (activation memory and recompute), §E.1 (what the peak holds: the
       activations) and §F.5 (torch.compile: the activations kept).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.
    .. [3] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Some
       Problems to Work" (the checkpoints after the three big matmuls, 2·L·B·(D + 2F)).
    .. [4] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/distributed/activation_checkpoint.py`` (``_apply_op_sac``: op-level selective
       recompute saves the outputs of the ops it lists, every second matmul's excepted).

    Examples
    --------
    >>> from scaling_widgets.presets import MODELS
    >>> kw = dict(model=MODELS["llama-3-70b"], seq_len=4096, flash=True, selective="attention")
    >>> kept = layer_activation_bytes(tp=[1, 8], remat="none", sequence_parallel=True, **kw)
    >>> (kept / 1024).tolist()
    [268.0, 33.5]
    """
    sizes = tensor_bytes(model, seq_len, tp, sequence_parallel, flash, activation_bytes)
    return kept_bytes(policy(remat, selective), sizes, compiled, chunk_layers)
