"""Parameters, training FLOPs, step time and time to train (SPEC A.5, A.10)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _checks


@dataclass(frozen=True, eq=False)
class ParamCount:
    """Parameters of a LLaMA-style model by part."""

    mlp: np.ndarray
    attention: np.ndarray
    embeddings: np.ndarray

    def __repr__(self):
        return f"ParamCount(total={np.asarray(self.total)!r})"

    @property
    def total(self):
        return self.mlp + self.attention + self.embeddings


def param_count(*, layers, d_model, d_ff, heads, kv_heads, head_dim, vocab, gated=True, tied_embeddings=False):
    """Parameters of a LLaMA-style decoder (SPEC A.5).

    MLP 3·L·D·F (gated; 2·L·D·F ungated); attention 2·D·(N_h + K)·H·L (Q and O are D x N_h·H,
    K and V are D x K·H); embeddings 2·V·D (V·D when tied). Norms and biases are ignored.

    Examples
    --------
    >>> p = param_count(layers=40, d_model=5120, d_ff=13_824, heads=40, kv_heads=40,
    ...                 head_dim=128, vocab=32_000)
    >>> round(float(p.total) / 1e9, 1)
    13.0
    """
    L, D, F = (_checks.positive(n, v) for n, v in (("layers", layers), ("d_model", d_model), ("d_ff", d_ff)))
    N_h, K, H = (_checks.positive(n, v) for n, v in (("heads", heads), ("kv_heads", kv_heads), ("head_dim", head_dim)))
    V = _checks.positive("vocab", vocab)
    return ParamCount(
        mlp=np.where(gated, 3, 2) * L * D * F,
        attention=2 * D * (N_h + K) * H * L,
        embeddings=np.where(tied_embeddings, 1, 2) * V * D,
    )


def training_flops(*, params, tokens):
    """Training FLOPs ≈ 6 · params · tokens (SPEC A.5).

    Examples
    --------
    >>> training_flops(params=70e9, tokens=[15e12, 1e12])
    array([6.3e+24, 4.2e+23])
    """
    return 6 * _checks.positive("params", params) * _checks.positive("tokens", tokens)


def step_time(*, batch, params, chips, flops, mfu, comm_time=0.0, bubble=0.0):
    """Seconds per step (SPEC A.5, A.10).

    The compute time 6·B·Ψ / (N·C·η) at model-FLOPs utilisation η, or the exposed
    communication ``comm_time`` if that is longer, stretched by the pipeline ``bubble``
    (idle time relative to useful work, (Z − 1)/m).

    Examples
    --------
    >>> step_time(batch=3e6, params=13e9, chips=4096, flops=4.59e14, mfu=[0.4, 0.5]).round(3)
    array([0.311, 0.249])
    """
    B, Psi = _checks.positive("batch", batch), _checks.positive("params", params)
    N, C = _checks.positive("chips", chips), _checks.positive("flops", flops)
    eta = _checks.fraction("mfu", mfu)
    compute = 6 * B * Psi / (N * C * eta)
    return np.maximum(compute, _checks.non_negative("comm_time", comm_time)) * (
        1 + _checks.non_negative("bubble", bubble)
    )


def time_to_train(*, tokens, batch, step_time):
    """Seconds to train on ``tokens``: tokens / B steps of ``step_time`` each (SPEC A.10).

    Examples
    --------
    >>> time_to_train(tokens=15e12, batch=16e6, step_time=[1.0, 2.0])
    array([ 937500., 1875000.])
    """
    steps = _checks.positive("tokens", tokens) / _checks.positive("batch", batch)
    return steps * _checks.positive("step_time", step_time)
