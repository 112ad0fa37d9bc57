"""Software stacks, one module each: what each keeps in memory (MODEL.md §E.2) and how it runs
(MODEL.md §F.2). A new stack is a new file.

A stack's module declares ``NAME`` (what the CLI, the API and a saved scenario call it), ``ORDER``
(its place in lists), ``MEMORY``: the fields of an efficiency profile (``step/profiles.py``) that
say what the stack holds: the bytes a parameter of its weights, gradients and optimizer state, what
its "selective" recompute keeps, the bytes a logit at the loss, its buffers, its allocator and what
its own peak counts; and ``BEHAVIOUR``: its overlaps, kernels and fixed costs
(``Behaviour`` below), as ``benchmarks/fit_stacks.py`` fitted them on its runs, the fields it has
no runs for left at their priors. A stack runs flash attention (no s x s scores in HBM) unless its
``FLASH_ATTENTION`` says not, and can run torch.compile if its ``TORCH_COMPILE`` says so (PyTorch
stacks that fuse nothing of their own; XLA compiles MaxText whole, Megatron-LM fuses by hand), and
always runs TP with sequence parallelism if its ``TP_SEQUENCE_PARALLEL`` says so. Its
``PIPELINE_SCHEDULES`` are the schedules (``schedules/``) it can pipeline with: the planner
searches those; its ``EP_OVERLAP`` says it can pair one microbatch's forward with another's backward
to hide the expert all-to-alls (a layout's ``ep_overlap``); its ``RECOMPUTE`` names the recompute
policies it offers by its own names (``transformer/recompute.py``); its ``FEATURES`` are its
switches that hide one communication under compute (``Feature`` below), each dated and cited: a
stack that declares them hides that traffic where a feature is on and none of it where it is off,
never by a fitted share. Each keeps
mixed-precision Adam's fp32 master copy and moments, whatever the precision (which sets the
chapter's count). Each module cites the lines of the stack's source it was read from.

Tier 2 of cost/, beside hardware/ and the other registries (``tests/test_tiers.py`` declares the
order): it imports from ground/ alone."""

from __future__ import annotations

from dataclasses import field

from ..ground.records import record
from ..ground.registry import members


@record
class Behaviour:
    """What a stack does with any chip (MODEL.md §F.2): how much of its communication hides
    under compute, how much memory-bound work its kernels leave, and its fixed costs.

    One set per stack, shared by every chip it runs on, fitted by ``benchmarks/fit_stacks.py`` on
    the measured runs of all those chips with the chips' own physics (``step/physics.py``) held
    fixed. The defaults are the priors the fit starts from and is drawn towards, and what a stack
    without runs keeps.
    """

    kernel_share: float = 0.9  # share of the microbenchmarks' GEMM and attention rates reached
    kappa: float = 40.0  # memory-bound bytes a token, per unit of d_model, a layer and pass, eager
    kappa_scores: float = 12.0  # without flash attention: bytes per score and pass
    o_tp: float = 0.0  # share of a layer's matmuls the TP collectives hide under
    o_dp: float = 0.9  # share of the compute the data-parallel traffic hides under
    o_dcn: float = 0.0  # the same for the reduction across pods
    layer_overhead: float = 0.0  # per layer and pass: launches the host cannot queue ahead [s]
    step_overhead: float = 0.0  # per step: the host, the data loader, the optimizer's launch [s]


# What a stack's feature may hide (MODEL.md §F.2), each under all of one compute, so that only
# what exceeds it is exposed (and at least one chunk where the traffic is chunked): TP's
# collectives under the matmuls they feed ("tp"), or those of the forward passes alone
# ("tp_forward": the backward's run after its matmuls); the data-parallel gradient reduction
# under the last backward pass; the distributed optimizer's weight all-gather under the first
# forward pass; an interleaved pipeline's sends between stages under the other virtual stages'
# work.
HIDES = ("tp", "tp_forward", "grad_reduce", "param_gather", "p2p")
# the traffic a key of ``HIDES`` decides the overlap of: the forward's TP collectives are TP's
TRAFFIC = {name: "tp" if name == "tp_forward" else name for name in HIDES}


@record
class Feature:
    """A switch of a stack's that hides one communication under compute (MODEL.md §F.2): what it
    hides (a key of ``HIDES``), the framework's flag (that turns it on, or off where it is on by
    default), whether it is on by default in the release cited, the release that brought it and
    where it lives in the framework's source."""

    hides: str
    flag: str
    default: bool
    since: str
    source: str
    compiled: bool = False  # it runs only under torch.compile
    on_from_zero: int | None = None  # on by default from this ZeRO stage up (DeepSpeed's: 3)
    # what it holds beside when on: the stack's MEMORY fields it sets (a second bucket...)
    memory: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.hides not in HIDES:  # a stack module's slip, caught when it is imported
            raise ValueError(f"a feature hides one of {', '.join(HIDES)}, not {self.hides!r}")


def feature_names(features: str) -> tuple:
    """The names in an options' ``features``.

    Parameters
    ----------
    features : str
        "none", or feature names joined by commas.

    Returns
    -------
    names : tuple of str
        The names; none for "none".
    """
    return () if features == "none" else tuple(features.split(","))


PRIOR = Behaviour()
# What each may physically be: an overlap is a share; a kernel reaches at most its microbenchmark;
# the fused kernels of a layer move at least a few bytes a token and at most a few hundred; a
# layer's pass launches some tens of kernels of a few microseconds each; a step's own host work
# (the optimizer's launches, the loader, logging) takes a tenth of a second or two at most.
BOUNDS = {
    "kernel_share": (0.5, 1.0),
    "kappa": (4.0, 200.0),
    "kappa_scores": (2.0, 64.0),
    "o_tp": (0.0, 1.0),
    "o_dp": (0.0, 1.0),
    "o_dcn": (0.0, 1.0),
    "layer_overhead": (0.0, 2e-4),
    "step_overhead": (0.0, 0.2),
}


@record
class Stack:
    """What a stack's module declares: its name, its place, its memory and its behaviour."""

    name: str
    order: int
    memory: dict
    behaviour: Behaviour
    compiles: bool = False  # torch.compile is a switch of the stack's
    tp_shards_sequence: bool = False  # its TP always runs with sequence parallelism
    schedules: tuple = ()  # the pipeline schedules it runs
    pairs_passes: bool = False  # a forward and another microbatch's backward, as one
    recompute: tuple = ()  # the recompute policies it offers by its own names
    torch_adam: bool = False  # its Adam is torch.optim's: foreach, or fused when asked
    no_sync: bool = False  # its FSDP can accumulate microbatches unsharded (no_sync)
    features: dict = field(default_factory=dict)  # name -> Feature: what it can hide, dated

    @property
    def default_features(self) -> tuple:
        """The features on when a config names none: the release's defaults, whatever the
        ZeRO stage."""
        return self.defaults_at(0)

    def defaults_at(self, zero: int) -> tuple:
        """The features on by default for a layout of ZeRO stage ``zero``: the release's, and
        those the framework turns on from that stage (DeepSpeed's overlap_comm under ZeRO-3,
        which the step prices as ZeRO-3's prefetched traffic).

        Parameters
        ----------
        zero : int
            The layout's ZeRO stage.

        Returns
        -------
        names : tuple of str
            The features on.
        """
        return tuple(
            name
            for name, f in self.features.items()
            if f.default or (f.on_from_zero is not None and zero >= f.on_from_zero)
        )

    def memory_with(self, names) -> dict:
        """The MEMORY fields its features set, with ``names`` on and the rest off: each on
        feature's own, the stack's where its feature is off.

        Parameters
        ----------
        names : iterable of str
            Names of its features that are on.

        Returns
        -------
        memory : dict
            The MEMORY fields its features decide, each as its feature's state sets it.
        """
        on = set(names)
        return {
            key: value if name in on else self.memory[key]
            for name, f in self.features.items()
            for key, value in f.memory.items()
        }


def _member(module) -> Stack:
    flash = getattr(module, "FLASH_ATTENTION", True)
    return Stack(
        name=module.NAME,
        order=module.ORDER,
        memory={**module.MEMORY, "flash_attention": flash},
        behaviour=Behaviour(**getattr(module, "BEHAVIOUR", {})),
        compiles=getattr(module, "TORCH_COMPILE", False),
        tp_shards_sequence=getattr(module, "TP_SEQUENCE_PARALLEL", False),
        schedules=tuple(module.PIPELINE_SCHEDULES),
        pairs_passes=getattr(module, "EP_OVERLAP", False),
        recompute=tuple(getattr(module, "RECOMPUTE", ())),
        torch_adam=getattr(module, "TORCH_ADAM", False),
        no_sync=getattr(module, "NO_SYNC", False),
        features=dict(getattr(module, "FEATURES", {})),
    )


REGISTRY: dict[str, Stack] = members(__name__, __path__, _member)
STACKS: dict[str, dict] = {name: stack.memory for name, stack in REGISTRY.items()}
NAMES = tuple(STACKS)
COMPILING = tuple(name for name, stack in REGISTRY.items() if stack.compiles)
PAIRING = tuple(name for name, stack in REGISTRY.items() if stack.pairs_passes)
# a loss torch.compile can compile, so fewer bytes a logit (MODEL.md §E.1)
COMPILING_LOSS = tuple(n for n, s in REGISTRY.items() if s.memory.get("compiled_loss_bytes"))
# Adam from torch.optim, so foreach or fused (MODEL.md §E.1): not Megatron-LM's fused Adam or optax
TORCH_ADAM = tuple(name for name, stack in REGISTRY.items() if stack.torch_adam)
# PyTorch's FSDP, whose no_sync accumulates microbatches' gradients unsharded (MODEL.md §E.1)
NO_SYNC = tuple(name for name, stack in REGISTRY.items() if stack.no_sync)
# weights that are the optimizer's own fp32 copy, so a weight dtype of the config's (§E.4)
MASTER_WEIGHTS = tuple(name for name, s in REGISTRY.items() if s.memory["weight_bytes"] == 4.0)
