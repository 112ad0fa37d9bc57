"""Software stacks, one module each: what each keeps in memory (MODEL.md §E.2). A new stack is a
new file.

A stack's module declares ``NAME`` (what the CLI, the API and a saved scenario call it), ``ORDER``
(its place in lists) and ``MEMORY``: the fields of an efficiency profile (``step/profiles.py``)
that say what the stack holds: the bytes a parameter of its weights, gradients and optimizer state,
what its "selective" recompute keeps, the bytes a logit at the loss, its buffers, its allocator
and what its own peak counts. Every current stack runs flash attention (no s x s scores in HBM)
and keeps mixed-precision Adam's fp32 master copy and moments, whatever the precision (which sets
the chapter's count). Each module cites the lines of the stack's source it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import members


@dataclass(frozen=True)
class Stack:
    """What a stack's module declares: its name, its place and what it keeps in memory."""

    name: str
    order: int
    memory: dict


def _member(module) -> Stack:
    return Stack(
        name=module.NAME, order=module.ORDER, memory={**module.MEMORY, "flash_attention": True}
    )


STACKS: dict[str, dict] = {
    name: stack.memory for name, stack in members(__name__, __path__, _member).items()
}
NAMES = tuple(STACKS)
