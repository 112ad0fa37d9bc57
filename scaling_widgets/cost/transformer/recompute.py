"""Recompute policies by what a layer keeps for its backward pass (MODEL.md §B.4, §E.4).

A policy is named as a framework names it, and says three things: which of a layer's tensors it
keeps (``TENSORS``, per token), which of its forward work the backward pass runs again
(``Rerun``), and how many layers' whole activations exist beside the kept ones while a layer runs
its backward (the working set). The names:

- "none", "full" and the chapter's "checkpoints", and "selective", which is the stack's own
  (``selective`` of its profile: Megatron-LM's attention core, torchtitan's op-level policy);
- MaxText's ``remat_policy`` values, and ``custom:<names>`` for its custom policy with the
  checkpoint names it keeps on the device (``stacks/maxtext.py``);
- Megatron-LM's ``selective:<modules>`` (``--recompute-modules``), ``full:uniform:<N>`` and
  ``full:block:<N>`` (``--recompute-method``, ``--recompute-num-layers``;
  ``stacks/megatron_lm.py``);
- torchtitan's ``selective:op`` and ``selective:<N>`` (every Nth layer recomputed whole).

Tier 3 of cost/, with the transformer's other formulas (``tests/test_tiers.py``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..ground.checks import Choice
from ..ground.records import record
from ..stacks import REGISTRY
from ..stacks.maxtext import CHECKPOINT_NAMES, NOT_RESIDUALS, SAVED_BY_POLICY
from ..stacks.megatron_lm import DENSE_ONLY, MOE_ONLY, RECOMPUTE_MODULES
from .counts import REMAT_POLICIES

# A layer's tensors the backward pass may need, in its forward order: the layer's input, the
# attention's norm, projections, the other CP chips' keys and values where an all-gather CP's
# attention keeps what it gathered ("kv_gathered"), and its output, the residual after attention,
# the MLP's norm, gate, up-projection, activation and output; dropout's byte masks, a MoE's
# dispatched copies and the copies its scores weigh (kept for the scores' gradient where a stack
# weighs them apart), the attention scores when no flash kernel keeps them out of HBM.
# "chapter_input" is the chapter's count of the input, split over TP. Only a policy that saves
# collectives' and matmuls' outputs by op keeps the MLP's last matmul's output before its sum over
# TP ("mlp_unreduced") and the reduce-scatters' outputs after the attention and the MLP
# ("attention_reduced", "mlp_reduced"); the backward of no op needs them but the first, which with
# the layer's input makes the residual the MLP's norm reads.
TENSORS = (
    "input",
    "attention_norm",
    "query",
    "key",
    "value",
    "kv_gathered",
    "context",
    "out_proj",
    "mlp_input",
    "mlp_norm",
    "mlp_gate",
    "mlp_up",
    "mlp_activation",
    "mlp_out",
    "dropout_masks",
    "dispatch",
    "combine",
    "scores",
    "mlp_unreduced",
    "attention_reduced",
    "mlp_reduced",
    "chapter_input",
)
KEPT_UNLESS_RECOMPUTED = frozenset(TENSORS) - {
    "mlp_out",
    "out_proj",
    "mlp_unreduced",
    "attention_reduced",
    "mlp_reduced",
    "chapter_input",
}


@record
class Rerun:
    """The shares of a layer's forward work its backward pass runs again: the attention's
    projections (``dense``), its core (``core``), the MLP's matmuls (``mlp``), and the rest of
    the layer's work with them: its pointwise passes, launches and collectives (``whole``)."""

    dense: float = 0.0
    core: float = 0.0
    mlp: float = 0.0
    whole: float = 0.0

    def times(self, share: float | np.ndarray) -> Rerun:
        """These shares on a ``share`` of the layers.

        Parameters
        ----------
        share : float or array_like
            The share of a chunk's layers the policy applies to.

        Returns
        -------
        rerun : Rerun
            Each share times ``share``.
        """
        return Rerun(*(share * getattr(self, f) for f in ("dense", "core", "mlp", "whole")))


EVERYTHING = Rerun(1.0, 1.0, 1.0, 1.0)


@record
class Policy:
    """What a recompute policy keeps and runs again, for the layers it applies to.

    ``keeps``: the tensors a recomputed layer keeps; ``reruns``: its forward work run again;
    ``recomputed``: layers whose activations are made again at once during the backward;
    ``every``: one kept input serves this many layers (Megatron-LM's uniform method);
    ``applies``: to "all" layers, "every" Nth or the "first" N of a pipeline chunk, the others
    keeping everything (``count`` is that N)."""

    keeps: frozenset
    reruns: Rerun = Rerun()
    recomputed: float = 0.0
    every: int = 1
    applies: str = "all"
    count: int = 1

    def share(self, chunk_layers: float | np.ndarray) -> float | np.ndarray:
        """The share of a pipeline chunk's layers the policy applies to.

        Parameters
        ----------
        chunk_layers : float or array_like
            The layers of a pipeline chunk [layers].

        Returns
        -------
        share : float or np.ndarray
            1 for all layers, 1/N for every Nth, min(N, c)/c for the first N of c.
        """
        if self.applies == "every":
            return 1.0 / self.count
        if self.applies == "first":
            c = np.maximum(np.asarray(chunk_layers, dtype=float), 1.0)
            return np.minimum(self.count, c) / c
        return 1.0


NONE = Policy(KEPT_UNLESS_RECOMPUTED)
FULL = Policy(frozenset({"input"}), EVERYTHING, recomputed=1.0)
GENERIC = {
    "checkpoints": Policy(
        frozenset({"chapter_input", "mlp_gate", "mlp_up"}), Rerun(dense=1.0, core=1.0), 1.0
    ),
    "none": NONE,
    "full": FULL,
}
# "selective" as each stack means it (its profile's ``selective``)
SELECTIVE = {
    # Megatron-LM's default --recompute-modules: the attention core
    "attention": "selective:core_attn",
    # torchtitan's op-level policy: the layer's input, every other matmul's output, the
    # attention's and the reduce-scatters' (activation_checkpoint.py, _apply_op_sac); its
    # backward holds what it recomputes
    "alternate-matmuls": "selective:op",
}
# The MLP's last matmul (w2) is the 7th of a layer's, odd, so kept: under TP before its
# reduce-scatter, a partial sum of the whole sequence (parallelize_llama.py's save list holds
# aten.mm and _c10d_functional.reduce_scatter_tensor)
TORCHTITAN_OP = Policy(
    frozenset(
        {
            "input",
            "query",
            "context",
            "value",
            "mlp_gate",
            "mlp_unreduced",
            "attention_reduced",
            "mlp_reduced",
            "dispatch",
        }
    ),
    Rerun(core=1.0),
    recomputed=1.0,
)


def policy(name: str, selective: str = "attention", moe: bool = False) -> Policy:
    """The policy a name means (the module docstring's names).

    Parameters
    ----------
    name : str
        The policy's name, as the chapter or a framework gives it.
    selective : str, default "attention"
        What the stack's own "selective" is (``Profile.selective``): "attention" (Megatron-LM's
        attention core) or "alternate-matmuls" (torchtitan's op-level policy).
    moe : bool, default False
        Whether the model's layers are MoE layers: Megatron-LM's ``mlp`` module recomputes a
        dense layer's MLP only, ``moe``, ``moe_act`` and ``shared_experts`` a MoE layer's.

    Returns
    -------
    policy : Policy
        What it keeps and runs again.

    Raises
    ------
    ValueError
        For a name no framework uses.

    References
    ----------
    .. [1] docs/MODEL.md §E.4 (recompute as frameworks name it).

    Examples
    --------
    >>> policy("save_dot_except_mlpwi").reruns
    Rerun(dense=0.0, core=1.0, mlp=0.6666666666666666, whole=0.0)
    """
    return _policy(SELECTIVE.get(selective, "selective:op") if name == "selective" else name, moe)


def rerun_of(
    name: str,
    selective: str = "attention",
    chunk_layers: float | np.ndarray = 1.0,
    moe: bool = False,
) -> Rerun:
    """The shares of a layer's forward work a policy runs again, averaged over a pipeline
    chunk's layers (``Policy.share``).

    Parameters
    ----------
    name : str
        The policy's name (``policy``).
    selective : str, default "attention"
        What the stack's own "selective" is (``Profile.selective``).
    chunk_layers : float or array_like, default 1.0
        The layers of a pipeline chunk [layers].
    moe : bool, default False
        Whether the model's layers are MoE layers (``policy``).

    Returns
    -------
    rerun : Rerun
        The shares run again, on average over the chunk's layers.

    References
    ----------
    .. [1] docs/MODEL.md §C.1 (what recompute adds to a microbatch) and §E.4.
    """
    p = policy(name, selective, moe)
    return p.reruns.times(p.share(chunk_layers))


def offered(stack: str) -> tuple:
    """The recompute policies a stack offers, for the panel's menu: the chapter's and the
    generic names, then its own (its module's ``RECOMPUTE``).

    Parameters
    ----------
    stack : str
        A stack's name (``stacks.NAMES``); another name offers the generic ones.

    Returns
    -------
    names : tuple of str
        The policies' names.
    """
    own = REGISTRY[stack].recompute if stack in REGISTRY else ()
    return (*REMAT_POLICIES, *(name for name in own if name not in REMAT_POLICIES))


def is_policy(name: object) -> bool:
    """Whether a value names a recompute policy (the module docstring's names).

    Parameters
    ----------
    name : object
        What was given.

    Returns
    -------
    known : bool
        True for a string ``policy`` takes.
    """
    try:
        return isinstance(name, str) and bool(policy(name))
    except ValueError:
        return False


@lru_cache(maxsize=256)
def _policy(name: str, moe: bool = False) -> Policy:
    if name in GENERIC:
        return GENERIC[name]
    if name in SAVED_BY_POLICY:
        saved = frozenset(SAVED_BY_POLICY[name]) | {"decoder_layer_input"}
        return kept_by_jax(saved, offloaded=name)
    head, sep, rest = name.partition(":")
    if head == "custom" and sep:  # none kept on the device: all rematerialized or offloaded
        return kept_by_jax(frozenset(n for n in rest.split(",") if n))
    if head == "selective" and rest == "op":
        return TORCHTITAN_OP
    if head == "selective" and rest.isdigit() and int(rest) >= 1:
        return replace(FULL, applies="every", count=int(rest))
    if head == "selective" and rest:
        return _megatron_modules(tuple(rest.split(",")), moe)
    method, _, layers = rest.partition(":")
    if head == "full" and method in ("uniform", "block") and layers.isdigit() and int(layers) >= 1:
        n = int(layers)
        if method == "uniform":
            return replace(FULL, every=n, recomputed=float(n))
        return replace(FULL, applies="first", count=n)
    raise ValueError(f"{name!r} is not a recompute policy")


def _megatron_modules(modules: tuple, moe: bool = False) -> Policy:
    """Megatron-LM's selective recompute of ``modules`` (``--recompute-modules``): each stops
    keeping what it drops and runs its forward again (``stacks/megatron_lm.py``), in the layers
    it applies to: a MoE model's MoE layers (the few dense ones aside, as its tensors count them),
    or a dense model's."""
    unknown = [m for m in modules if m not in RECOMPUTE_MODULES]
    if unknown or not modules:
        raise ValueError(f"{unknown} are not Megatron-LM recompute modules")
    # "mlp" recomputes a dense layer's MLP only; the MoE modules a MoE layer's (MODEL.md §E.4)
    modules = tuple(m for m in modules if m not in (DENSE_ONLY if moe else MOE_ONLY))
    dropped = frozenset().union(*(RECOMPUTE_MODULES[m][0] for m in modules))
    shares = {part for m in modules for part in RECOMPUTE_MODULES[m][1]}
    reruns = Rerun(**{part: 1.0 for part in shares})
    matmuls = reruns.dense + reruns.mlp > 0  # a rerun matmul's outputs join the working set
    return Policy(KEPT_UNLESS_RECOMPUTED - dropped, reruns, recomputed=float(matmuls))


def kept_by_jax(names: frozenset, offloaded: str = "") -> Policy:
    """A JAX policy that saves MaxText's checkpoint ``names``: it keeps those the backward
    needs, and runs again only the work that makes what it needs and did not keep.

    The attention's backward needs Q, K, V and its output; the second norm needs the residual,
    made again from the input and the saved ``out_proj``; the MLP's backward needs its gate and
    up-projection. Nothing needs the MLP's output (``NOT_RESIDUALS``), so it is never held.

    Parameters
    ----------
    names : frozenset of str
        The checkpoint names saved (``stacks.maxtext.CHECKPOINT_NAMES``).
    offloaded : str, default ""
        The policy's name; one ending in "_offloaded" saves to host memory, and HBM keeps only
        the layer's input.

    Returns
    -------
    policy : Policy
        What it keeps in HBM and runs again.

    Raises
    ------
    ValueError
        For a name MaxText does not give.

    References
    ----------
    .. [1] docs/MODEL.md §E.4 (MaxText's remat policies).
    .. [2] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
       src/maxtext/layers/decoders.py`` (``Decoder.get_remat_policy``).
    """
    unknown = names - set(CHECKPOINT_NAMES)
    if unknown:
        raise ValueError(f"{sorted(unknown)} are not MaxText checkpoint names")
    keeps = frozenset().union(*(CHECKPOINT_NAMES[n] for n in names - NOT_RESIDUALS))
    if offloaded.endswith("_offloaded"):  # in host memory, not HBM: only the input stays
        keeps = keeps & {"input"}
    saved = frozenset().union(*(CHECKPOINT_NAMES[n] for n in names))
    core = "context" not in saved
    out = "out_proj" not in saved and core
    qkv = {"query", "key", "value"} - saved
    dense = (len(qkv) > 0) + out  # a share of the projections, in halves (Q·K·V and the output)
    mlp = 2 / 3 if {"mlp_gate", "mlp_up"} - saved else 0.0
    reruns = Rerun(dense=dense / 2, core=float(core), mlp=mlp)
    return Policy(keeps, reruns, recomputed=1.0 if dense or mlp else 0.0)


# The recompute field: the chapter's and the generic names, or a framework's own
REMAT_CHOICE = Choice(
    REMAT_POLICIES,
    per_layout=True,
    also=is_policy,
    also_said="or a framework's own: MaxText's remat_policy values, Megatron-LM's"
    " selective:<modules> or full:<uniform|block>:<N>, torchtitan's selective:op or"
    " selective:<N>",
    known=(*SAVED_BY_POLICY, *(n for stack in REGISTRY.values() for n in stack.recompute)),
)
