"""What is trained: a model's shape, its experts and latent attention, and the precision policy
(MODEL.md §A.1, §B.2, §D.1).

Frozen dataclasses, checked when built, so a model of your own from a JSON file fails with a
message naming the field. The presets in ``scaling_widgets.presets`` are instances.
"""

from __future__ import annotations

import dataclasses

from ..ground.records import record
from ..ground.refusals import is_number, is_whole, require

# The ceiling of each Model dimension (see Model): far above any model trained, low enough that
# the parameter count stays below 1e28.
LARGEST_DIMS = {
    "layers": 2**20,
    "d_model": 2**31,
    "d_ff": 2**31,
    "heads": 2**20,
    "kv_heads": 2**20,
    "head_dim": 2**20,
    "vocab": 2**31,
}


@record
class MoE:
    """The mixture-of-experts MLP of a model's MoE layers (MODEL.md §D.1).

    ``experts`` routed experts of width ``d_ff`` each (F_e), ``top_k`` of them per token, plus
    ``shared`` experts every token goes through; the first ``dense_layers`` layers are dense (the
    model's own d_ff). ``capacity_factor``: tokens are padded to CF times their share (absent:
    dropless routing, nothing padded). ``routed_nodes``: node-limited routing, a token's experts on
    at most this many nodes (DeepSeek-V3: 4), which caps its copies across nodes (MODEL.md §D.2).
    """

    experts: int  # E
    top_k: int  # k
    d_ff: int  # F_e
    shared: int = 0  # S
    dense_layers: int = 0  # L_dense
    capacity_factor: float | None = None  # CF
    routed_nodes: int | None = None

    def __post_init__(self):
        require(self, "experts", is_whole(self.experts, 2**16), "a whole number from 1 to 2**16")
        top_k_ok = is_whole(self.top_k, self.experts)
        require(self, "top_k", top_k_ok, f"a whole number from 1 to experts ({self.experts})")
        require(self, "d_ff", is_whole(self.d_ff, 2**31), "a whole number from 1 to 2**31")
        require(
            self,
            "shared",
            is_whole(self.shared, 2**10, smallest=0),
            "a whole number from 0 to 2**10",
        )
        require(
            self,
            "dense_layers",
            is_whole(self.dense_layers, 2**20, smallest=0),
            "a whole number from 0",
        )
        cf = self.capacity_factor
        require(
            self,
            "capacity_factor",
            cf is None or (is_number(cf) and 1 <= cf <= 64),
            "absent, or from 1 to 64",
        )
        nodes = self.routed_nodes
        require(
            self,
            "routed_nodes",
            nodes is None or is_whole(nodes, 2**20),
            "absent, or a whole number from 1",
        )


@record
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through
    low-rank projections (MODEL.md §D.1). ``q_lora_rank`` 0: queries projected directly."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0

    def __post_init__(self):
        for field in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            require(
                self, field, is_whole(getattr(self, field), 2**20), "a whole number from 1 to 2**20"
            )
        require(
            self,
            "q_lora_rank",
            is_whole(self.q_lora_rank, 2**20, smallest=0),
            "a whole number from 0 to 2**20",
        )


@record
class Model:
    """A LLaMA-style decoder's dimensions (MODEL.md §A.1, §A.5).

    Each dimension is a whole number up to a ceiling (``LARGEST_DIMS``) far above any model ever
    trained: 2**20 for layers, heads, kv_heads and head_dim, 2**31 for d_model, d_ff and vocab.
    Within them a model has fewer than 1e28 parameters, under the 1e30 the cost functions take, and
    every product of its dimensions (in float64, see ``counts``) is finite.
    """

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
    causal: bool = True  # a decoder: causal masking halves the attention work (MODEL.md §C.4)
    moe: MoE | None = None  # its MoE layers (MODEL.md §D.1); None: every layer dense
    mla: MLA | None = (
        None  # latent attention (MODEL.md §D.1); None: N_h query and K key/value heads
    )
    dropout: float = 0.0  # hidden dropout: above 0 each layer keeps two byte masks (MODEL.md §E.1)
    # multi-token prediction: modules of one more layer each, trained beside the model and
    # sharing its embeddings and output layer (DeepSeek-V3's 1; MODEL.md §D.1)
    mtp_layers: int = 0

    def __post_init__(self):
        require(self, "name", isinstance(self.name, str), "a string")
        require(
            self,
            "mtp_layers",
            is_whole(self.mtp_layers, 2**10, smallest=0),
            "a whole number from 0 to 1024",
        )
        for field, largest in LARGEST_DIMS.items():
            ok = is_whole(getattr(self, field), largest)
            require(self, field, ok, f"a whole number from 1 to 2**{largest.bit_length() - 1}")
        require(self, "kv_heads", self.kv_heads <= self.heads, f"at most heads ({self.heads})")
        for field in ("gated", "tied_embeddings", "causal"):
            require(self, field, isinstance(getattr(self, field), bool), "true or false")
        require(self, "moe", self.moe is None or isinstance(self.moe, MoE), "absent or a MoE")
        require(self, "mla", self.mla is None or isinstance(self.mla, MLA), "absent or an MLA")
        require(
            self,
            "dropout",
            is_number(self.dropout) and 0 <= self.dropout < 1,
            "a probability from 0 to below 1",
        )
        if self.moe is not None:
            dense = self.moe.dense_layers
            require(
                self,
                "moe",
                dense < self.layers,
                f"a MoE with fewer dense_layers than layers ({self.layers})",
            )
            require(
                self,
                "moe",
                self.largest_width < 2**40,
                "a MoE whose (experts + shared) x d_ff is below 2**40",
            )

    @property
    def active_width(self) -> float:
        """The MLP width a token goes through in a (MoE) layer: F, or (k + S)·F_e, its routed
        part padded to the capacity factor (k·CF + S)·F_e (MODEL.md §D.1, §D.2)."""
        if self.moe is None:
            return self.d_ff
        return (self.moe.top_k * self.padding + self.moe.shared) * self.moe.d_ff

    @property
    def padding(self) -> float:
        """How much the routed experts' work grows by padding to the capacity factor (1:
        dropless)."""
        return (
            1.0
            if self.moe is None or self.moe.capacity_factor is None
            else float(self.moe.capacity_factor)
        )

    @property
    def padded_work(self) -> float:
        """A MoE layer's MLP work with the padding over without it, (k·CF + S)/(k + S); 1 if
        dense."""
        return (
            1.0
            if self.moe is None
            else self.active_width / ((self.moe.top_k + self.moe.shared) * self.moe.d_ff)
        )

    @property
    def largest_width(self) -> int:
        """The MLP width a (MoE) layer holds as weights: F, or (E + S)·F_e (MODEL.md §D.1)."""
        return (
            self.d_ff if self.moe is None else (self.moe.experts + self.moe.shared) * self.moe.d_ff
        )

    def dims(self) -> dict:
        """The dimensions as keyword arguments for the cost functions.

        Returns
        -------
        dims : dict of str to int or bool or MoE or MLA
            Every field but the name, ``causal`` and ``dropout``, by name.
        """
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("name", "causal", "dropout")
        }


@record
class Precision:
    """Bytes per parameter and per activation element (MODEL.md §A.4, §B.2)."""

    name: str
    weight_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    activation_bytes: float = 2.0

    def __post_init__(self):
        require(self, "name", isinstance(self.name, str), "a string")
        for field in ("weight_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes"):
            value = getattr(self, field)
            require(
                self,
                field,
                is_number(value) and 0 <= value <= 1024,
                "a number of bytes from 0 to 1024",
            )

    @property
    def bytes_per_param(self) -> float:
        return self.weight_bytes + self.grad_bytes + self.optimizer_bytes


BOOK_PRECISION = Precision("book", weight_bytes=2, grad_bytes=0, optimizer_bytes=8)
"""The chapter's convention: bf16 weights, two fp32 Adam moments, no gradient (MODEL.md §A.4)."""
