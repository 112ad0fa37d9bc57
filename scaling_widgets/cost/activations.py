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


def in_flight_microbatches(*, schedule, stages, microbatches, virtual_stages=1):
    """Microbatches whose activations the first stage holds at once (SPEC B.4, B.6).

    GPipe runs every forward before any backward: all m. 1F1B starts backwards after Z
    forwards: min(Z, m). Interleaved 1F1B with v virtual stages holds Z·(1 + (Z − 1)/(Z·v)) of
    them (Narayanan et al. 2021, sec. 2.2), capped at m.

    >>> [float(in_flight_microbatches(schedule=s, stages=4, microbatches=16, virtual_stages=2))
    ...  for s in ("gpipe", "1f1b", "interleaved")]
    [16.0, 4.0, 5.5]
    """
    _checks.one_of("schedule", schedule, SCHEDULES)
    Z, m = _checks.whole("stages", stages).astype(float), _checks.whole("microbatches", microbatches).astype(float)
    v = _checks.whole("virtual_stages", virtual_stages).astype(float)
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return np.minimum(Z, m)
    return np.minimum(Z * (1 + (Z - 1) / (Z * v)), m)
