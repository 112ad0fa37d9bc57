"""Activation memory under recompute policies (MODEL.md §B.4).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
Table 2: bytes per layer for a microbatch of b sequences of length s, hidden h, a heads and
tensor-parallel degree t, with 2-byte activations.
"""

from __future__ import annotations

import numpy as np


def activation_bytes_per_layer(
    *, seq_len, microbatch_seqs, d_model, heads, tp=1, remat="none", sequence_parallel=False
):
    """Bytes one layer keeps for the backward pass, per chip (Korthikanti et al. 2022, Table 2).

    - "none": s·b·h·(34 + 5·a·s/h) / t with sequence parallelism, else s·b·h·(10 + 24/t +
      5·a·s/(h·t));
    - "selective" (the attention core recomputed): 34·s·b·h / t with SP, else s·b·h·(10 + 24/t);
    - "full" (only the layer's input kept): 2·s·b·h, / t with SP.

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
