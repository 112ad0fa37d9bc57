"""Memory per chip: weights, gradients, optimizer state, activation checkpoints (MODEL.md §A.4,
§A.10)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class MemoryPerChip:
    """Bytes per chip of each kind, after sharding."""

    params: np.ndarray
    grads: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray
    overhead: np.ndarray | float = (
        0.0  # framework, collective buffers, fragmentation (MODEL.md §B.8)
    )

    def __repr__(self):
        return f"MemoryPerChip(shape={np.shape(self.total)})"

    @property
    def total(self):
        return self.params + self.grads + self.optimizer + self.activations + self.overhead


def memory_per_chip(
    *,
    params,
    layers,
    d_model,
    d_ff,
    batch,
    x=1,
    y=1,
    z=1,
    pods=1,
    zero=0,
    gated=True,
    weight_bytes=2.0,
    grad_bytes=0.0,
    optimizer_bytes=8.0,
    activation_bytes=2.0,
) -> MemoryPerChip:
    """Bytes per chip under a layout (MODEL.md §A.4).

    Weights, gradients and optimizer state: Ψ·bytes / (Y·Z), and also / X for what the ZeRO
    stage shards over the data axis (MODEL.md §B.3): 1 the optimizer state, 2 the gradients too, 3
    the weights too (FSDP). The defaults are the chapter's 2 + 0 + 8 = 10 bytes per parameter.
    Activation checkpoints, one after each big matmul: bytes·L·B·(D + 2F)
    for a gated MLP (D + F ungated) over the batch shards (X, P), the hidden shards (Y) and the
    layer shards (Z).

    Examples
    --------
    >>> m = memory_per_chip(params=13e9, layers=40, d_model=5120, d_ff=13_824, batch=16e6)
    >>> round(float(m.params + m.optimizer) / 1e9), round(float(m.activations) / 1e12)
    (130, 42)
    """
    Psi, L, D, F, B, X, Y, Z, P = (
        np.asarray(v, dtype=float) for v in (params, layers, d_model, d_ff, batch, x, y, z, pods)
    )
    stage = np.asarray(zero)
    replica = Psi / (Y * Z)  # one data-parallel replica's share of a chip

    def sharded_from(first_stage):  # ZeRO shards this over X from ``first_stage`` on
        return replica / np.where(stage >= first_stage, X, 1)

    # [B, D] after W_out, [B, F] after each up-projection
    checkpoint_width = D + np.where(gated, 2, 1) * F
    return MemoryPerChip(
        params=weight_bytes * sharded_from(3),
        grads=grad_bytes * sharded_from(2),
        optimizer=optimizer_bytes * sharded_from(1),
        activations=B * (activation_bytes * L * checkpoint_width) / (X * Y * Z * P),
    )


def largest_replicated_model(*, hbm_bytes, bytes_per_param=10.0):
    """Parameters that fit on one chip with a full copy each, as in pure DP: HBM / bytes (MODEL.md
    §A.4).

    Examples
    --------
    >>> largest_replicated_model(hbm_bytes=[96e9, 16e9]) / 1e9
    array([9.6, 1.6])
    """
    return np.asarray(hbm_bytes, dtype=float) / bytes_per_param
