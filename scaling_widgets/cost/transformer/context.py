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
from numpy.typing import ArrayLike

from ..hardware.chip import Chip
from ..hardware.mesh import subgroup_span
from .shapes import Model

CP_KINDS = ("ring", "all-gather", "ulysses")


def kv_bytes_per_token(
    model: Model, y: ArrayLike = 1, bytes_per_element: float = 2.0
) -> float | np.ndarray:
    """A token's keys and values in one layer, as one TP shard holds them: 2·K·H·bytes / Y.

    Parameters
    ----------
    model : Model
        The model, for K (``kv_heads``) and H (``head_dim``).
    y : int or array_like, default 1
        Y, the tensor-parallel degree [chips].
    bytes_per_element : float, default 2.0
        Bytes of one key or value element [bytes].

    Returns
    -------
    kv_bytes : float or np.ndarray
        One token's keys and values in one layer, on one chip [bytes].
    """
    return 2 * model.kv_heads * model.head_dim * bytes_per_element / np.asarray(y, dtype=float)


def attention_seconds_per_token(
    chip: Chip, model: Model, seq_len: ArrayLike, y: ArrayLike = 1
) -> float | np.ndarray:
    """One layer's attention scores and weighted sum for a token, forward: 4·s·N_h·H/Y FLOPs at
    peak, halved under causal masking (every query sees the keys before it).

    Parameters
    ----------
    chip : Chip
        The chip, for its peak C [FLOP/s].
    model : Model
        The model, for N_h, H and whether it is causal.
    seq_len : float or array_like
        s, the keys each query may see [tokens].
    y : int or array_like, default 1
        Y, the tensor-parallel degree [chips].

    Returns
    -------
    seconds : float or np.ndarray
        One token's forward attention in one layer, at peak [s].
    """
    causal = 0.5 if model.causal else 1.0
    return (
        4
        * seq_len
        * model.heads
        * model.head_dim
        * causal
        / (np.asarray(y, dtype=float) * chip.flops)
    )


def cp_seconds_per_token(
    *,
    chip: Chip,
    model: Model,
    cp: ArrayLike,
    kind: str = "ring",
    seq_len: ArrayLike,
    x: ArrayLike = 1,
    y: ArrayLike = 1,
    mx: ArrayLike = 1,
    pods: ArrayLike = 1,
) -> float | np.ndarray:
    """The context-parallel traffic of one layer's forward pass, exposed, per token a chip holds
    [s].

    The ring hides under the attention it overlaps; the all-gather and Ulysses do not. The
    backward pass moves about twice the bytes against twice the compute: twice this.

    Parameters
    ----------
    chip : Chip
        The chip: its peak C and its links (``cp_bandwidth``).
    model : Model
        The model: its heads (N_h, K, H) and whether it is causal.
    cp : int or array_like
        CP, the chips that split each sequence [chips].
    kind : str, default "ring"
        "ring", "all-gather" or "ulysses" (``CP_KINDS``); any other name is read as "ring".
    seq_len : float or array_like
        s, the whole sequence [tokens].
    x : int or array_like, default 1
        X, the data axis the CP group is taken from (a TPU's; on GPUs the group uses NVLink
        while CP·Y GPUs fit in a node, else the NIC) [chips].
    y : int or array_like, default 1
        Y, the tensor-parallel degree [chips].
    mx : float or array_like, default 1
        M_X, the torus axes X spans (a TPU's).
    pods : int or array_like, default 1
        The pods the CP group spans, CP/pods of its chips in each (MODEL.md §B.13).

    Returns
    -------
    seconds : float or np.ndarray
        The forward pass's exposed context-parallel traffic of one layer, per token a chip holds
        [s]; 0 with CP = 1.
    """
    CP = np.asarray(cp, dtype=float)
    Y = np.asarray(y, dtype=float)
    bandwidth = cp_bandwidth(chip=chip, cp=CP, x=x, y=Y, mx=mx, pods=pods, kind=kind)
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


def cp_bandwidth(
    *,
    chip: Chip,
    cp: ArrayLike,
    x: ArrayLike = 1,
    y: ArrayLike = 1,
    mx: ArrayLike = 1,
    pods: ArrayLike = 1,
    kind: str = "ring",
) -> float | np.ndarray:
    """The bandwidth a chip of the CP group passes keys and values at (MODEL.md §D.3): on GPUs
    NVLink while the group fits in a node with its TP, else each GPU's NIC; on a TPU the links of
    the torus axes the group spans [bytes/s]. Across pods (MODEL.md §B.13) a ring steps in
    lockstep, so its hop between pods, one chip's link of the data-center network W_dcn, paces
    it; an all-gather brings each pod the other pods' keys and values over its CP/pods chips'
    links at once.

    Parameters
    ----------
    chip : Chip
        The chip: on a GPU its node size, NVLink egress (``ici_bw``) and NIC (``scaleout_bw``); on
        a TPU W_ici (``ici_bw``).
    cp : int or array_like
        CP, the chips that split each sequence [chips].
    x : int or array_like, default 1
        X, the data axis the CP group is taken from (TPU only) [chips].
    y : int or array_like, default 1
        Y, the tensor-parallel degree, which shares the node with the group (GPU only) [chips].
    mx : float or array_like, default 1
        M_X, the torus axes X spans (TPU only).
    pods : int or array_like, default 1
        The pods the group spans, CP/pods of its chips in each (TPU only).
    kind : str, default "ring"
        How CP passes keys and values ("all-gather": over each pod's chips' links at once).

    Returns
    -------
    bandwidth : float or np.ndarray
        W, the bandwidth the group passes keys and values at; on a TPU inside a pod at least
        W_ici [bytes/s].

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE
    >>> cp_bandwidth(chip=HARDWARE["h100"], cp=[1, 16], y=8) / 1e9
    array([450.,  50.])
    """
    CP, Y = np.asarray(cp, dtype=float), np.asarray(y, dtype=float)
    if chip.is_gpu:
        return np.where(CP * Y <= chip.node_size, chip.ici_bw, chip.scaleout_bw)
    C = np.asarray(pods, dtype=float)
    inside = chip.ici_bw * np.maximum(subgroup_span(size=CP / C, x=x, mx=mx), 1.0)
    across = chip.dcn_bw * (CP / C if kind == "all-gather" else 1.0)
    return np.where(C > 1, np.minimum(inside, across), inside)


def ring_hides(
    *,
    chip: Chip,
    model: Model,
    seq_len: ArrayLike,
    cp: ArrayLike,
    x: ArrayLike = 1,
    y: ArrayLike = 1,
    mx: ArrayLike = 1,
    pods: ArrayLike = 1,
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """The rule for the ring (MODEL.md §D.3): s/CP ≥ (K/N_h)·C/W, doubled under causal masking,
    W the bandwidth the CP group passes at (``cp_bandwidth``: a GPU's NIC once the group leaves
    its node). Returns (what s/CP must reach, what it is).

    Parameters
    ----------
    chip : Chip
        The chip: its peak C and its links (``cp_bandwidth``).
    model : Model
        The model: N_h, K and whether it is causal.
    seq_len : float or array_like
        s, the whole sequence [tokens].
    cp : int or array_like
        CP, the chips that split each sequence [chips].
    x : int or array_like, default 1
        X, the data axis the CP group is taken from (TPU only) [chips].
    y : int or array_like, default 1
        Y, the tensor-parallel degree (GPU only) [chips].
    mx : float or array_like, default 1
        M_X, the torus axes X spans (TPU only).
    pods : int or array_like, default 1
        The pods the group spans (TPU only; MODEL.md §B.13).

    Returns
    -------
    need : float or np.ndarray
        The tokens of each chip's block above which the ring hides under the attention,
        (K/N_h)·C/W, doubled under causal masking [tokens].
    block : float or np.ndarray
        s/CP, the tokens of each chip's block [tokens].

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> need, block = ring_hides(chip=HARDWARE["h100"], model=MODELS["llama-3-405b"],
    ...                          seq_len=131_072, cp=16, y=8)
    >>> round(float(need)), float(block)
    (2475, 8192.0)
    """
    causal = 2.0 if model.causal else 1.0
    W = cp_bandwidth(chip=chip, cp=cp, x=x, y=y, mx=mx, pods=pods)
    need = causal * model.kv_heads / model.heads * chip.flops / W
    return need, seq_len / np.asarray(cp, dtype=float)
