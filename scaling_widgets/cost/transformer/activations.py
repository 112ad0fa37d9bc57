"""Activation memory under recompute policies as §B.4 counts it (MODEL.md §B.4).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
Table 2: bytes per layer for a microbatch of b sequences of length s, hidden h, a heads and
tensor-parallel degree t, with 2-byte activations. The peak a framework reaches counts a layer's
tensors one by one instead (``kept.py``, MODEL.md §E.1, §E.4).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


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
