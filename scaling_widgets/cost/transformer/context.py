"""Context parallelism (MODEL.md §D.3): each sequence split over CP chips of the data axis.

The CP chips of a group hold the same weights and see different parts of the same sequences,
so the data axis X is DP x CP: the gradients are reduced, and ZeRO shards, over all of it, and
a chip holds B/(X·P) tokens whatever the split. What CP adds is the attention's traffic: every
query needs every earlier key and value.

- "ring": CP − 1 steps a layer, each passing a chip's K/V block of (s/CP)·2·K·H·2 bytes (÷ TP)
  on, overlapped with the attention on the block in hand; the backward pass moves about twice
  that against twice the compute.
- "all-gather": the same bytes, gathered before the attention and not overlapped (Llama 3 at 128K).
- "ulysses": two all-to-alls a layer that trade the sequence split for a split of the heads,
  (s/CP)·(2·N_h + 2·K)·H·2·(CP − 1)/CP bytes each a sequence; CP may not exceed the KV heads.
"""

from __future__ import annotations

import numpy as np

from ..cluster.chip import Chip
from ..cluster.mesh import subgroup_span
from .shapes import Model

CP_KINDS = ("ring", "all-gather", "ulysses")


def kv_bytes_per_token(model: Model, y=1, bytes_per_element=2.0):
    """A token's keys and values in one layer, as one TP shard holds them: 2·K·H·bytes / Y."""
    return 2 * model.kv_heads * model.head_dim * bytes_per_element / np.asarray(y, dtype=float)


def attention_seconds_per_token(chip: Chip, model: Model, seq_len, y=1):
    """One layer's attention scores and weighted sum for a token, forward: 4·s·N_h·H/Y FLOPs at
    peak, halved under causal masking (every query sees the keys before it)."""
    causal = 0.5 if model.causal else 1.0
    return (
        4
        * seq_len
        * model.heads
        * model.head_dim
        * causal
        / (np.asarray(y, dtype=float) * chip.flops)
    )


def cp_seconds_per_token(*, chip: Chip, model: Model, cp, kind="ring", seq_len, x=1, y=1, mx=1):
    """The context-parallel traffic of one layer's forward pass, exposed, per token a chip holds
    [s].

    The ring hides under the attention it overlaps; the all-gather and Ulysses do not. The
    backward pass moves about twice the bytes against twice the compute: twice this.
    """
    CP = np.asarray(cp, dtype=float)
    Y = np.asarray(y, dtype=float)
    if chip.is_gpu:  # NVLink while the group fits in a node with its TP, else each GPU's NIC
        in_node = CP * Y <= chip.node_size
        bandwidth = np.where(in_node, chip.ici_bw, chip.scaleout_bw)
    else:
        bandwidth = chip.ici_bw * np.maximum(subgroup_span(size=CP, x=x, mx=mx), 1.0)
    kv = kv_bytes_per_token(model, Y)
    if kind == "ulysses":
        per_token = (
            (2 * model.heads + 2 * model.kv_heads) * model.head_dim * 2.0 / Y * (CP - 1) / CP
        )
        moved = 2 * per_token / bandwidth  # two all-to-alls
        return np.where(CP > 1, moved, 0.0)
    passed = (CP - 1) * kv / bandwidth  # every other chip's K/V block reaches this one
    if kind == "all-gather":
        return passed
    return np.maximum(0.0, passed - attention_seconds_per_token(chip, model, seq_len, Y))


def ring_hides(*, chip: Chip, model: Model, seq_len, cp):
    """The rule for the ring (MODEL.md §D.3): s/CP ≥ (K/N_h)·C/W, doubled under causal masking.
    Returns (what s/CP must reach, what it is)."""
    causal = 2.0 if model.causal else 1.0
    need = causal * model.kv_heads / model.heads * chip.flops / chip.ici_bw
    return need, seq_len / np.asarray(cp, dtype=float)
