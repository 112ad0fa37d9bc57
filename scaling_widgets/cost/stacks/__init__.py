"""Software stacks, one module each: what each keeps in memory (MODEL.md §E.2) and how it runs
(MODEL.md §F.2). A new stack is a new file.

A stack's module declares ``NAME`` (what the CLI, the API and a saved scenario call it), ``ORDER``
(its place in lists), ``MEMORY``: the fields of an efficiency profile (``step/profiles.py``) that
say what the stack holds: the bytes a parameter of its weights, gradients and optimizer state, what
its "selective" recompute keeps, the bytes a logit at the loss, its buffers, its allocator and what
its own peak counts; and ``BEHAVIOUR``: its overlaps, kernels and fixed costs
(``step/behaviour.py``), as ``benchmarks/fit_stacks.py`` fitted them on its runs, the fields it has
no runs for left at their priors. A stack runs flash attention (no s x s scores in HBM) unless its
``FLASH_ATTENTION`` says not, and can run torch.compile if its ``TORCH_COMPILE`` says so (PyTorch
stacks that fuse nothing of their own; XLA compiles MaxText whole, Megatron-LM fuses by hand), and
always runs TP with sequence parallelism if its ``TP_SEQUENCE_PARALLEL`` says so. Its
``PIPELINE_SCHEDULES`` are the schedules (``schedules/``) it can pipeline with: the planner
searches those; its ``EP_OVERLAP`` says it can pair one microbatch's forward with another's backward
to hide the expert all-to-alls (a layout's ``ep_overlap``). Each keeps
mixed-precision Adam's fp32 master copy and moments, whatever the precision (which sets the
chapter's count). Each module cites the lines of the stack's source it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import members
from ..step.behaviour import Behaviour


@dataclass(frozen=True)
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
    )


REGISTRY: dict[str, Stack] = members(__name__, __path__, _member)
STACKS: dict[str, dict] = {name: stack.memory for name, stack in REGISTRY.items()}
NAMES = tuple(STACKS)
COMPILING = tuple(name for name, stack in REGISTRY.items() if stack.compiles)
PAIRING = tuple(name for name, stack in REGISTRY.items() if stack.pairs_passes)
