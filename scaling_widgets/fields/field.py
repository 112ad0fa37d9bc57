"""A field a user sets: where they meet it (its value, flag, saved key and panel label), and its
default and check, read from the cost model's declaration of its value."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..cost import Cluster, Layout, Options, Workload
from ..cost.ground.records import record
from ..cost.transformer.exactness import Exactness
from ..cost.values import as_asked

FROM_VALUE = object()  # a default read from the cost model's declaration of the field
VALUES = {
    "cluster": Cluster,
    "workload": Workload,
    "layout": Layout,
    "options": Options,
    "exact": Exactness,
}


@record
class Flag:
    """Another way to give a field on the command line: ``--chips 4096`` beside ``--mesh``."""

    name: str
    parse: Callable  # (text, flag) -> what ``resolve`` takes
    metavar: str | None = None
    help: str = ""
    resolve: Callable | None = None  # (parsed, state) -> the field's value; None: the parsed itself
    implies: dict | None = None  # other fields it sets where they are not given (None in state)


@record
class Field:
    """A field a user sets (see the module's docstring)."""

    name: str  # the scenario's key and the API's keyword
    value: str | None  # "layout.z": the value and attribute it sets; None: the scenario's own
    help: str  # one line, for the CLI's help and the docs
    flag: str | None = None  # the CLI's flag; None: none
    parse: Callable | None = None  # CLI text -> value; None: the text itself
    metavar: str | None = None
    also: tuple = ()  # other flags that give the same field (a file, a count of chips)
    # where the flag is offered (plan: unless it searches it)
    commands: tuple = ("estimate", "plan")
    since: int = 1  # the saved scenario's version that added it; 0: not in the scenario
    absent_ok: bool = False  # a saved scenario of its version may leave it out
    default: Any = FROM_VALUE  # what the CLI and a scenario take when it is not given
    start: Any = FROM_VALUE  # the panel's first value, where it is not the default
    choices: tuple | None = None  # the names it takes, for the CLI and the panel's menus
    switch: bool = False  # a flag with no argument: present is True
    words: Callable | None = None  # value -> the CLI's argument text; None: str
    coerce: Callable | None = (
        None  # what a user gives (a preset's name, JSON) -> what the value takes
    )
    dump: Callable | None = None  # value -> JSON
    check: Callable | None = None  # the scenario's own fields' check; the others are the value's
    # value -> the other fields it gives ({name: value}): a slice's name gives its chip
    implies: Callable | None = None
    label: str = ""  # the panel's words for it
    choice_labels: dict | None = None  # the panel's words for each choice, where not the name

    @property
    def owner(self):
        """The value class this field belongs to (None: the scenario's own)."""
        return None if self.value is None else VALUES[self.value.split(".")[0]]

    @property
    def attribute(self) -> str:
        return self.name if self.value is None else self.value.split(".")[-1]

    def checker(self):
        """The check of this field: its value's declaration, or its own.

        Returns
        -------
        check : callable or None
            ``check(name, value)``, which returns the value checked or raises; None for none.
        """
        if self.check is not None or self.owner is None:
            return self.check
        return self.owner.__dataclass_fields__[self.attribute].metadata.get("check")

    def fallback(self):
        """Its default: the table's, else the value's declaration.

        Returns
        -------
        default : object
            What the command line takes when the field is not given; None for none.
        """
        if self.default is not FROM_VALUE or self.owner is None:
            return None if self.default is FROM_VALUE else self.default
        declared = self.owner.__dataclass_fields__[self.attribute]
        return None if declared.default is dataclasses.MISSING else declared.default

    def first(self):
        """The panel's first value.

        Returns
        -------
        first : object
            What a new scenario starts with: the field's own start, else its default.
        """
        return self.fallback() if self.start is FROM_VALUE else self.start

    def get(self, values: tuple):
        """This field as the four values hold it.

        Parameters
        ----------
        values : tuple
            The four values: (``Cluster``, ``Workload``, ``Layout``, ``Options``); the
            exactness switches are read from ``Options.exact``.

        Returns
        -------
        value : Any
            The field's value as it was asked for (``as_asked``: a batch rounded to whole
            sequences is the batch given).
        """
        cluster, workload, layout, options = values
        holder = {
            "cluster": cluster,
            "workload": workload,
            "layout": layout,
            "options": options,
            "exact": options.exact,
        }[self.value.split(".")[0]]
        return as_asked(holder)[self.attribute]  # as given: a rounded batch as asked

    def cli_words(self, value) -> str | None:
        """The CLI argument that gives ``value``; None if no flag can say it.

        Parameters
        ----------
        value : Any
            The field's value.

        Returns
        -------
        text : str or None
            The flag's argument: ``words`` of the value where the field has it, else ``str``.
        """
        return (self.words or str)(value)
