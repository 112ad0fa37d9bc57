"""Activation memory under recompute policies and pipeline schedules (SPEC B.4, B.6).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
Table 2: bytes per layer for a microbatch of b sequences of length s, hidden h, a heads and
tensor-parallel degree t, with 2-byte activations.
"""

from __future__ import annotations

import numpy as np

from . import _checks

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def activation_bytes_per_layer(
    *, seq_len, microbatch_seqs, d_model, heads, tp=1, remat="none", sequence_parallel=False
):
    """Bytes one layer keeps for the backward pass, per chip (Korthikanti et al. 2022, Table 2).

    - "none": s·b·h·(34 + 5·a·s/h) / t with sequence parallelism, else s·b·h·(10 + 24/t + 5·a·s/(h·t));
    - "selective" (the attention core recomputed): 34·s·b·h / t with SP, else s·b·h·(10 + 24/t);
    - "full" (only the layer's input kept): 2·s·b·h, / t with SP.

    Examples
    --------
    >>> kw = dict(seq_len=2048, microbatch_seqs=1, d_model=12288, heads=96, tp=8)
    >>> [round(float(activation_bytes_per_layer(remat=r, sequence_parallel=True, **kw)) / 2**20)
    ...  for r in ("none", "selective", "full")]
    [342, 102, 6]
    """
    _checks.one_of("remat", remat, ("none", "selective", "full"))
    s, b = _checks.positive("seq_len", seq_len), _checks.positive("microbatch_seqs", microbatch_seqs)
    h, a, t = _checks.positive("d_model", d_model), _checks.positive("heads", heads), _checks.positive("tp", tp)
    sbh = s * b * h
    sp = np.asarray(sequence_parallel, dtype=bool)
    if remat == "full":
        return 2 * sbh / np.where(sp, t, 1)
    attention = 0.0 if remat == "selective" else 5 * a * s / h  # the softmax and dropout of the scores
    return np.where(sp, sbh * (34 + attention) / t, sbh * (10 + 24 / t + attention / t))


def in_flight_microbatches(*, schedule, stages, microbatches, virtual_stages=1, stage=0):
    """Microbatches whose activations pipeline stage r holds at once (SPEC B.4, B.6, E.1; r = 0
    the first, the one that holds the most).

    GPipe runs every forward before any backward: all m. 1F1B starts backwards after Z − r
    forwards: min(Z − r, m). Interleaved 1F1B with v virtual stages (Narayanan et al. 2021,
    sec. 2.2) runs Megatron-LM's warm-up of 2·(Z − r − 1) + (v − 1)·Z chunk-forwards plus one, in
    microbatches of v chunks: min(Z + (Z − 1 − 2r)/v, m), on the first stage Z·(1 + (Z − 1)/(Z·v));
    with one chunk (v = 1) it is 1F1B. One stage holds one microbatch at a time.

    >>> [float(in_flight_microbatches(schedule=s, stages=4, microbatches=16, virtual_stages=2))
    ...  for s in ("gpipe", "1f1b", "interleaved")]
    [16.0, 4.0, 5.5]
    >>> [float(in_flight_microbatches(schedule="interleaved", stage=r, stages=4, microbatches=4, virtual_stages=8))
    ...  for r in (0, 3)]
    [4.0, 3.625]
    """
    _checks.one_of("schedule", schedule, SCHEDULES)
    Z, m = _checks.whole("stages", stages).astype(float), _checks.whole("microbatches", microbatches).astype(float)
    v = _checks.whole("virtual_stages", virtual_stages).astype(float)
    r = np.asarray(stage, dtype=float)
    one_f_one_b = np.minimum(Z - r, m)
    held = {
        "gpipe": m, "1f1b": one_f_one_b,
        "interleaved": np.where(v == 1, one_f_one_b, np.minimum(Z + (Z - 1 - 2 * r) / v, m)),
    }  # fmt: skip
    return np.where(Z == 1, 1.0, held[schedule])
