"""Families with members (schedules, strategies, stacks): one module a member, found by name.

A family is a package whose every module declares one member; ``members`` imports them all and
returns them in their declared ``ORDER``. A new member is a new file in its family's folder.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any


def members(
    package: str, path: Iterable[str], build: Callable[[ModuleType], Any]
) -> dict[str, Any]:
    """``build(module)`` for every module of ``package`` (its ``__path__``), by name, in order.

    Parameters
    ----------
    package : str
        The family's dotted name (its ``__name__``).
    path : iterable of str
        The folders its modules are found in (its ``__path__``).
    build : callable
        ``build(module)``: what a member is made of its module; it has a ``name`` and an
        ``order``.

    Returns
    -------
    members : dict of str to what ``build`` returns
        Every member by its name, in the order the members declare.
    """
    built = [
        build(importlib.import_module(f"{package}.{info.name}"))
        for info in pkgutil.iter_modules(path)
    ]
    return {member.name: member for member in sorted(built, key=lambda member: member.order)}
