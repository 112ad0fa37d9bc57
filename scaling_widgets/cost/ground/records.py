"""Frozen records: the house's values and results, each field set once and never again.

``record`` is ``dataclasses.dataclass(frozen=True)`` but for one cost. For each frozen class,
Python 3.11 and 3.12 compile a ``__setattr__`` and a ``__delattr__`` of its own, 0.35 ms a class:
10 ms of the command line's start over the 40 classes an estimate loads (``benchmarks/
bench_startup.py``). A record shares one pair instead. ``__init__`` (and ``__post_init__``) set
each field once; after that, setting or deleting any attribute raises ``FrozenInstanceError``,
as a frozen dataclass does. A record compares and hashes by its fields, as a frozen one does, or
by identity with ``eq=False``; a ``__repr__`` of its own is not compiled for nothing.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass


def _set_once(self, name: str, value) -> None:
    """A field's first assignment, by ``__init__``; any other raises."""
    if name in self.__dict__ or name not in self.__dataclass_fields__:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _never_deleted(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def record(body=None, *, eq: bool = True, **options):
    """``@record`` or ``@record(eq=False, ...)``: ``cls`` as a frozen dataclass (see the module).

    Parameters
    ----------
    body : type, optional
        The class as written, when used bare as ``@record``.
    eq : bool
        Compare and hash by the fields (True), or by identity (False: results of arrays).
    **options
        ``dataclasses.dataclass``'s other options, but ``frozen``, which a record always is.

    Returns
    -------
    record : type, or a decorator that makes one
        The class, a dataclass whose fields are set once.
    """

    def made(cls):
        hashed = eq and "__hash__" not in cls.__dict__  # a frozen dataclass's own hash
        written = "__repr__" not in cls.__dict__  # else compiled and thrown away
        cls = dataclass(cls, eq=eq, unsafe_hash=hashed, repr=written, **options)
        cls.__setattr__, cls.__delattr__ = _set_once, _never_deleted
        return cls

    return made if body is None else made(body)
