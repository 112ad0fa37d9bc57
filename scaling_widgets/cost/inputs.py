"""What the cost model is asked about: a chip, a model, a precision policy (SPEC A.1, A.7, B.2).

Frozen dataclasses, checked when built, so a user-defined chip or model from a JSON file fails
with a message naming the field. The presets in ``scaling_widgets.presets`` are instances.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

WRAPAROUND_RULES = ("cube", "full-axis", "switched")


@dataclass(frozen=True)
class Chip:
    """One accelerator and the pod it sits in (SPEC A.7). SI units: FLOP/s, bytes, bytes/s.

    ``wraparound`` says which slice axes are rings: ``"cube"`` (TPU v4p/v5p) when the slice is
    made of whole 4x4x4 cubes, every axis wraps; ``"full-axis"`` (v5e/v6e) an axis wraps only
    when it is as long as the pod's; ``"switched"`` (GPUs) there is no torus at all.

    A GPU (SPEC B.5) has ``node_size`` > 0: its NVLink domain. ``ici_bw`` is then the NVLink
    egress per GPU, ``scaleout_bw`` the NIC per GPU, and ``pod_shape`` is (nodes, node_size).
    """

    name: str
    flops: float  # C, peak bf16 matmul FLOP/s
    hbm_bytes: float
    hbm_bw: float  # HBM bandwidth [bytes/s]
    ici_bw: float  # W_ici, bidirectional, per mesh axis [bytes/s]
    pod_shape: tuple[int, ...]  # the largest slice, one length per ICI axis
    dcn_bw: float  # W_dcn, egress per chip [bytes/s]
    wraparound: str = "cube"
    node_size: int = 0  # GPUs per NVLink domain; 0 for a TPU torus
    scaleout_bw: float = 0.0  # a GPU's NIC [bytes/s]

    def __post_init__(self):
        for field in ("flops", "hbm_bytes", "hbm_bw", "ici_bw", "dcn_bw"):
            _require(self, field, _is_positive(getattr(self, field)), "a number > 0 and < 1e30")
        shape = self.pod_shape
        ok = isinstance(shape, (tuple, list)) and 0 < len(shape) <= 4 and all(_is_whole(n, 2**20) for n in shape)
        _require(self, "pod_shape", ok, "a list of 1 to 4 axis lengths, whole numbers from 1 to 2**20")
        object.__setattr__(self, "pod_shape", tuple(shape))
        _require(self, "wraparound", self.wraparound in WRAPAROUND_RULES, f"one of {WRAPAROUND_RULES}")
        if self.node_size:
            gpu = _is_whole(self.node_size, 2**20) and len(shape) == 2 and shape[1] == self.node_size
            _require(self, "node_size", gpu, "the second axis of pod_shape (nodes, GPUs per node)")
            _require(self, "scaleout_bw", _is_positive(self.scaleout_bw), "a number > 0 and < 1e30")

    @property
    def is_gpu(self) -> bool:
        return self.node_size > 0

    @property
    def ici_axes(self) -> int:
        return len(self.pod_shape)

    @property
    def pod_chips(self) -> int:
        return math.prod(self.pod_shape)


@dataclass(frozen=True)
class Model:
    """A LLaMA-style decoder's dimensions (SPEC A.1, A.5)."""

    name: str
    layers: int  # L
    d_model: int  # D
    d_ff: int  # F
    heads: int  # N_h
    kv_heads: int  # K
    head_dim: int  # H
    vocab: int  # V
    gated: bool = True
    tied_embeddings: bool = False

    def __post_init__(self):
        for field in ("layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab"):
            _require(self, field, _is_whole(getattr(self, field), 2**31), "a whole number from 1 to 2**31")
        _require(self, "kv_heads", self.kv_heads <= self.heads, f"at most heads ({self.heads})")
        for field in ("gated", "tied_embeddings"):
            _require(self, field, isinstance(getattr(self, field), bool), "true or false")

    def dims(self) -> dict:
        """The dimensions as keyword arguments for the cost functions."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "name"}


@dataclass(frozen=True)
class Precision:
    """Bytes per parameter and per activation element (SPEC A.4, B.2)."""

    name: str
    weight_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    activation_bytes: float = 2.0

    def __post_init__(self):
        for field in ("weight_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes"):
            value = getattr(self, field)
            _require(self, field, _is_number(value) and value >= 0, "a number >= 0")

    @property
    def bytes_per_param(self) -> float:
        return self.weight_bytes + self.grad_bytes + self.optimizer_bytes


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_positive(value) -> bool:
    return _is_number(value) and 0 < value < 1e30


def _is_whole(value, largest: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= largest


def _require(obj, field: str, ok: bool, allowed: str) -> None:
    if not ok:
        kind = type(obj).__name__
        raise ValueError(f"{kind} {field} must be {allowed}; got {getattr(obj, field)!r}")


BOOK_PRECISION = Precision("book", weight_bytes=2, grad_bytes=0, optimizer_bytes=8)
"""The chapter's convention: bf16 weights, two fp32 Adam moments, no gradient (SPEC A.4)."""
