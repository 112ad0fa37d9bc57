"""Launch-file formats, one module each (docs/MODEL.md §G). A new framework is a new file.

A format's module declares everything the rest of the house asks of it:

- ``NAME`` (what ``--to``, ``--export-to`` and the panel call it), ``LABEL`` (the framework's own
  name), ``ORDER`` (its place in lists, and when a file is tried against each format) and
  ``FILE_NAME`` (what a written file is called);
- ``READS``: the files it reads, in words, for ``--config``'s help and its refusal;
- ``STACK``: the software stack (``cost/stacks/``) a file of it runs;
- ``detects(text, name)``: whether a file, its text and its name ("" when it has none), is this
  format's;
- ``read(text, *, chips, model=None, pods=None)``: the file's degrees, model and what of it was
  left out (``LaunchFile``), on ``chips`` chips where it does not say, over ``pods`` pods;
- ``write(d, *, model, chip)``: the degrees ``d`` (``Degrees``) of ``model`` on ``chip`` as the
  file's text, the knobs chosen for it and what it cannot express.

Its schema, the keys the framework's configuration has, read from the framework's source at a
named commit, is data beside the others: ``data/config_keys/<NAME>.json``.
"""

from __future__ import annotations

from collections.abc import Callable

from ...cost.ground.records import record
from ...cost.ground.registry import members


@record
class Format:
    """What a format's module declares (see the package's docstring)."""

    name: str
    label: str
    order: int
    file_name: str
    reads: str
    stack: str
    detects: Callable
    read: Callable
    write: Callable


def _member(module) -> Format:
    return Format(
        name=module.NAME,
        label=module.LABEL,
        order=module.ORDER,
        file_name=module.FILE_NAME,
        reads=module.READS,
        stack=module.STACK,
        detects=module.detects,
        read=module.read,
        write=module.write,
    )


FORMATS: dict[str, Format] = members(__name__, __path__, _member)
