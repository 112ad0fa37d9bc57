"""Families with members (schedules, strategies, stacks): one module a member, found by name.

A family is a package whose every module declares one member; ``members`` imports them all and
returns them in their declared ``ORDER``. A new member is a new file in its family's folder.
"""

from __future__ import annotations

import importlib
import pkgutil


def members(package: str, path, build) -> dict:
    """``build(module)`` for every module of ``package`` (its ``__path__``), by name, in order."""
    built = [
        build(importlib.import_module(f"{package}.{info.name}"))
        for info in pkgutil.iter_modules(path)
    ]
    return {member.name: member for member in sorted(built, key=lambda member: member.order)}
