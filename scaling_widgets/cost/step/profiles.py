"""The profile an evaluation reads (MODEL.md §C.3, §F): a chip's measured physics, a software
stack's behaviour and what the stack keeps in memory (MODEL.md §E.2), composed.

The physics is the chip's own (``physics.py``: microbenchmarks); the behaviour and the memory are
the stack's (``stacks/``: fitted across every chip the stack ran on). No chip borrows another's
fitted numbers: a chip without measurements gets ``physics.DATASHEET``'s plausible shares, and a
stack without runs its priors. Each chip preset runs the stack its measured runs used, unless
``--stack`` names another (``DEFAULT_STACK``).
"""

from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..ground.checks import Choice
from ..ground.records import record
from ..ground.refusals import refuse
from ..hardware.chip import Chip
from ..stacks import HIDES, PRIOR, REGISTRY, TRAFFIC
from .physics import DATASHEET, physics_of

if TYPE_CHECKING:  # ``values`` imports this module
    pass

# what a stack's "selective" recompute recomputes (MODEL.md §E.2)
SELECTIVE = ("attention", "alternate-matmuls")
# what gradients exist beside a layer's activations in its backward (``recompute.working_bytes``)
GRADIENTS = ("layer", "mlp-inputs")
MEASURES = ("allocated", "reserved")  # what a stack's own peak counts


@record
class Profile:
    """Everything the predicted step and the peak memory read (MODEL.md §C.3, §E.2, §F): a chip's
    measured physics (``physics.py``), a stack's behaviour (``stacks.Behaviour``) and what the stack
    keeps in memory; ``chip`` names the chip it was made for, ``calibration`` what a measured
    step changed."""

    name: str
    # The chip's physics (MODEL.md §F.1)
    e_max: float = DATASHEET.e_max  # share of the bf16 peak large GEMMs reach
    g_half: float = DATASHEET.g_half  # FLOPs of a GEMM that reaches half of e_max
    e_max_fp8: float = DATASHEET.e_max_fp8  # the same in fp8, of the fp8 peak
    g_half_fp8: float = DATASHEET.g_half_fp8
    attention_max: float = DATASHEET.attention_max
    attention_half: float = DATASHEET.attention_half
    attention_head_half: float = DATASHEET.attention_head_half
    attention_backward: float = DATASHEET.attention_backward
    hbm_efficiency: float = DATASHEET.hbm_efficiency
    link_ici: float = DATASHEET.link_ici  # share of a tier's bandwidth a ring reaches
    link_nvlink: float = DATASHEET.link_nvlink
    link_nvls: float = DATASHEET.link_nvls  # an all-reduce through the switch (NVLS); 0: none
    link_nic: float = DATASHEET.link_nic
    link_dcn: float = DATASHEET.link_dcn
    latency: float = DATASHEET.latency  # seconds per step of a collective's ring
    latency_nic: float = DATASHEET.latency_nic  # the same across nodes
    speed_spread: float = DATASHEET.speed_spread  # identical chips' spread of speed
    # The stack's behaviour (MODEL.md §F.2)
    kernel_share: float = PRIOR.kernel_share
    kappa: float = PRIOR.kappa
    kappa_scores: float = PRIOR.kappa_scores
    o_tp: float = PRIOR.o_tp
    o_dp: float = PRIOR.o_dp
    o_dcn: float = PRIOR.o_dcn
    layer_overhead: float = PRIOR.layer_overhead
    step_overhead: float = PRIOR.step_overhead
    # The traffic the stack's features govern (``stacks.HIDES`` keys, comma-separated): each is
    # hidden under all of its compute where it is in ``hidden``, else not at all; the traffic
    # no feature governs hides by the fitted shares above (MODEL.md §F.2)
    overlaps: str = ""
    hidden: str = ""
    flash_attention: bool = True  # no s x s scores in HBM; causal masking halves the attention
    torch_compile: bool = False  # fused memory-bound kernels, fewer activations kept (§F.5)
    loss_compiled: bool = False  # the loss compiled (alone, or with the layers; §E.1)
    # What the stack holds in memory (MODEL.md §E.2, ``peak.py``):
    weight_bytes: float = 0.0  # per parameter, as the stack keeps them; 0: the precision's
    grad_bytes: float = 0.0  # 0: the precision's, at least the weights' dtype
    optimizer_bytes: float = 0.0  # 0: the precision's; either counts Adam's moments as fp32
    step_grad_bytes: float = 0.0  # an fp32 copy of the optimizer shard's gradients at the step
    step_keeps_grads: bool = False  # every gradient kept beside that copy, not the shard's
    # ZeRO-1/2: bytes a parameter of the stage the weights' all-gather after Adam holds (§E.1)
    step_gather_bytes: float = 0.0
    moment_bytes: float = 4.0  # each of Adam's two moments: 2 in bf16 (MODEL.md §E.4)
    adam_foreach: bool = False  # torch's foreach AdamW: √v a temporary at the step (§E.1)
    # FSDP's no_sync: microbatches accumulate gradients unsharded, scattered at the last (§E.1)
    accumulate_unsharded: bool = False
    selective: str = (
        "attention"  # "selective" recomputes the attention core, or "alternate-matmuls"
    )
    gradients: str = "layer"  # a layer's activation gradients held at once, or the MLP inputs'
    logits_bytes: float = 6.0  # per logit alive at the loss: bf16 logits and their fp32 softmax
    # per logit alive at a compiled loss: the logits it keeps and the gradient it returns, in the
    # dtype the model hands it (§E.1); 0: the stack's loss runs eager
    compiled_loss_bytes: float = 0.0
    # a compiler that, over its HBM limit, recomputes the loss's copies of the logits from the
    # logits its matmul wrote until the program fits (XLA's rematerialization pass; §E.1)
    recomputes_to_fit: bool = False
    # without flash attention, a score's fp32 softmax output kept beside its copy (§E.1); 0: none
    softmax_bytes: float = 0.0
    scores_buffer: bool = False  # without flash attention, one layer's scores held all step
    eager_glu: bool = False  # a gated MLP in eager ops keeps the SiLU's output too (§E.1)
    # a MoE's routed copies, kept for the router scores' gradient by the multiplication that
    # weighs them, bytes an element (§E.1); 0: the scores are applied inside the experts
    combine_bytes: float = 0.0
    gathered_units: float = 2.0  # ZeRO-3: units gathered at once (one computing, one prefetched)
    gathered: str = "layer"  # ZeRO-3's unit: a "layer", or its largest "weight" (XLA)
    fp8_inputs_kept: bool = False  # fp8 matmuls keep their inputs in fp8 (TransformerEngine)
    # sequence parallelism's TP matmuls keep the whole sequence they gathered (DTensor; §E.1)
    gathered_inputs: bool = False
    # an all-gather CP keeps the whole sequence's K and V its attention read (PyTorch's flex CP:
    # flex_attention saves what cplib::flex_cp_allgather returned), not its shard, gathered again
    # in the backward (TransformerEngine's AttnFuncWithCPAndKVAllGather; §E.1)
    cp_gathered_kept: bool = False
    # PyTorch FSDP (§E.1): its ZeRO-2 keeps the weights sharded and the stage gathered in the
    # compute dtype from forward to backward; under pipelining (either stage) the stage gathered
    # and its gradients unsharded
    pipeline_unsharded: bool = False
    bucket_bytes: float = 0.0  # DP, ZeRO-1/2: gradient buckets besides the gradients themselves
    # DP without ZeRO: torch DDP's buckets, a copy of every gradient in the weights' dtype (§E.1)
    ddp_buckets: bool = False
    allocator: float = (
        1.05  # reserved over allocated: the caching allocator's rounding and fragments
    )
    measures: str = "allocated"  # what the stack's own peak counts: "allocated" or "reserved"
    activation_factor: float = (
        1.0  # activations, working set and logits x this (from a measured peak)
    )
    chip: str = ""  # the id of the chip it was made for (your own chip: its name); "" for any
    calibration: str = ""  # what a measured step or peak changed, and by how much

    def __post_init__(
        self,
    ) -> None:  # however it was built (JSON, a stack, calibration), its names make sense
        Choice(SELECTIVE)("profile selective", self.selective)
        Choice(GRADIENTS)("profile gradients", self.gradients)
        Choice(("layer", "weight"))("profile gathered", self.gathered)
        Choice(MEASURES)("profile measures", self.measures)
        for name in ("overlaps", "hidden"):  # traffic a feature may hide, comma-separated
            for traffic in filter(None, getattr(self, name).split(",")):
                Choice(tuple(HIDES))(f"profile {name}", traffic)
        if not (isinstance(self.allocator, (int, float)) and 1 <= self.allocator < 1e30):
            raise refuse(
                "profile allocator",
                "a number from 1: reserved is never below allocated",
                repr(self.allocator),
            )

    def combine_kept(self, activation_bytes: float) -> float:
        """Bytes an element of a MoE's routed copies the scores' multiplication keeps: compiled,
        its cast to fp32 fuses into it, and the copies are kept as they are (MODEL.md §E.1).

        Parameters
        ----------
        activation_bytes : float
            A, the bytes of an activation's element, the copies' own [bytes].

        Returns
        -------
        kept : float
            ``combine_bytes`` eager, at most A compiled [bytes].
        """
        compiled = min(self.combine_bytes, activation_bytes)
        return compiled if self.torch_compile else self.combine_bytes

    @property
    def loss_bytes(self) -> float:
        """Bytes a logit alive at the loss: the compiled loss's where it is compiled and the stack
        can, else the eager loss's (MODEL.md §E.1)."""
        compiled = self.loss_compiled and self.compiled_loss_bytes > 0
        return self.compiled_loss_bytes if compiled else self.logits_bytes


GENERIC = Profile("generic")
# The fields a stack sets; a calibrated activation_factor is the user's and carries over.
MEMORY_FIELDS = (
    "weight_bytes",
    "grad_bytes",
    "optimizer_bytes",
    "step_grad_bytes",
    "step_keeps_grads",
    "step_gather_bytes",
    "selective",
    "gradients",
    "logits_bytes",
    "compiled_loss_bytes",
    "recomputes_to_fit",
    "softmax_bytes",
    "scores_buffer",
    "eager_glu",
    "combine_bytes",
    "gathered_units",
    "gathered",
    "fp8_inputs_kept",
    "gathered_inputs",
    "cp_gathered_kept",
    "pipeline_unsharded",
    "bucket_bytes",
    "ddp_buckets",
    "allocator",
    "measures",
    "flash_attention",
    "torch_compile",
    "overlaps",
    "hidden",
)
# The stack each chip runs unless told otherwise (MODEL.md §F.2): the A100's measured runs are
# Megatron-LM's of 2021-22, the other GPUs' torchtitan's, the TPUs' MaxText's.
DEFAULT_STACK = {
    "a100": "megatron-lm-2021",
    "a100-40gb": "megatron-lm-2021",
    "h100": "fsdp2",
    "h100-96gb": "fsdp2",
    "h200": "fsdp2",
    "b200": "fsdp2",
    "gb200-nvl72": "fsdp2",
    "gb300-nvl72": "fsdp2",
    "v100": "megatron-lm-2021",
}


def default_stack(chip: Chip) -> str:
    """The stack a chip runs unless told otherwise: ``DEFAULT_STACK``'s, else MaxText on a TPU and
    today's Megatron-LM on a GPU.

    Parameters
    ----------
    chip : Chip
        The chip, looked up by its id.

    Returns
    -------
    stack : str
        A stack's name.
    """
    return DEFAULT_STACK.get(chip.id, "megatron-lm" if chip.is_gpu else "maxtext")


@functools.lru_cache(maxsize=64)  # every evaluation asks; a chip and a stack are few
def profile_for(chip: Chip, stack: str | None = None) -> Profile:
    """A chip's physics with a stack's behaviour and memory (``default_stack`` when None).

    Parameters
    ----------
    chip : Chip
        The chip whose measured physics the profile takes (``physics_of``).
    stack : str, optional
        A stack's name in ``stacks.REGISTRY`` ("megatron-lm", "fsdp2", "deepspeed", "maxtext",
        ...); None: the chip's ``default_stack``.

    Returns
    -------
    profile : Profile
        Named "<chip>, <stack>", made for that chip.
    """
    stack = stack or default_stack(chip)
    physics = dataclasses.asdict(physics_of(chip))
    made_for = chip.id or chip.name
    return Profile(f"{chip.name}, {stack}", chip=made_for, **physics, **_stack_fields(stack))


def runs_on(profile: Profile, chip: Chip) -> bool:
    """Whether ``profile`` may run on ``chip``: one made for any chip, or for this one by its id
    (your own chip, which has none, by its name; so does a profile saved before chips had ids).

    Parameters
    ----------
    profile : Profile
        The profile, whose ``chip`` names the chip it was made for ("" for any).
    chip : Chip
        The chip to run it on.

    Returns
    -------
    runs : bool
        True where the profile's chip is "" or names ``chip``.
    """
    return profile.chip in ("", chip.id or chip.name, chip.name)


# The options a profile made under them takes in (its stack's memory, its switches, the features
# it hides with): once in the profile, they are its own, and the options go back to None.
TAKEN_IN = MappingProxyType(
    {"stack": None, "flash_attention": None, "torch_compile": None, "features": None}
)


def with_stack(profile: Profile, stack: str | None) -> Profile:
    """``profile`` keeping in memory what ``stack`` keeps (MODEL.md §E.2), its physics and
    behaviour its own; a calibrated activation factor carries over. None: the profile as it is.

    Parameters
    ----------
    profile : Profile
        The profile whose physics and behaviour are kept.
    stack : str, optional
        A stack's name in ``stacks.REGISTRY``, whose ``MEMORY_FIELDS`` replace the profile's;
        None: the profile as it is.

    Returns
    -------
    profile : Profile
        ``profile`` with the stack's ``MEMORY_FIELDS``, named after both.
    """
    if stack is None:
        return profile
    chosen = _stack_fields(stack)
    memory = {name: chosen[name] for name in MEMORY_FIELDS}
    return dataclasses.replace(profile, name=f"{profile.name}, {stack}", **memory)


def _stack_fields(stack: str) -> dict:
    """The behaviour and memory a stack sets, and the traffic its features govern and hide by
    default; the defaults where it sets none."""
    unset = {name: getattr(GENERIC, name) for name in MEMORY_FIELDS}
    member = REGISTRY[stack]
    features = {
        "overlaps": ",".join(sorted({f.hides for f in member.features.values()})),
        "hidden": hidden_by(member, member.default_features),
        **member.memory_with(member.default_features),
    }
    return {**dataclasses.asdict(member.behaviour), **unset, **member.memory, **features}


def hidden_by(stack, names) -> str:
    """The traffic the named features of ``stack`` (a ``stacks.Stack``) hide, comma-separated.

    Parameters
    ----------
    stack : Stack
        The stack whose ``features`` the names are.
    names : iterable of str
        Names of its features that are on.

    Returns
    -------
    hidden : str
        The ``stacks.HIDES`` keys they hide, sorted, comma-separated ("" for none).
    """
    return ",".join(sorted({stack.features[name].hides for name in names}))


def hidden_share(profile: Profile, traffic: str, fitted):
    """The share of its compute that ``traffic`` hides under (MODEL.md §F.2): all of it where a
    feature that hides it is on, none where the stack's features govern it and none is on, else
    the stack's fitted share.

    Parameters
    ----------
    profile : Profile
        Its ``overlaps`` and ``hidden``.
    traffic : str
        A key of ``stacks.HIDES``.
    fitted : float
        The stack's fitted share for that traffic (``o_tp``, ``o_dp``...).

    Returns
    -------
    share : float
        From 0 to 1.
    """
    if traffic in _named(profile.hidden):
        return 1.0
    return 0.0 if governs(profile, traffic) else fitted


def governs(profile: Profile, traffic: str) -> bool:
    """Whether a feature of the profile's stack decides ``traffic``'s overlap (MODEL.md §F.2).

    Parameters
    ----------
    profile : Profile
        Its ``overlaps``.
    traffic : str
        A key of ``stacks.HIDES``.

    Returns
    -------
    governs : bool
        True where the stack declares a feature that hides it, or part of it.
    """
    return traffic in {TRAFFIC[name] for name in _named(profile.overlaps)}


def _named(names: str) -> set:
    """The names in a comma-separated string, none for ""."""
    return set(filter(None, names.split(",")))
