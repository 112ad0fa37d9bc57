"""Keywords in the command line's names and forms: ``fsdp=``, ``tp=``, ``pp=``, ``dp=``,
``chips=``, ``mesh=``, ``hardware=``, ``batch="4M"``, ``seq_len="8k"``, beside the API's own
(``x``, ``y``, ``z``, ``chip``, ``slice_shape``, numbers). One table of fields reads both: a flag's
name without its dashes is its keyword, and a string is read as the flag reads its text.
"""

from __future__ import annotations

from typing import Any

from .state import from_flags, with_implied
from .table import FIELDS, FIELDS_TABLE


def _keyword(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


# keyword -> the dest ``from_flags`` reads: a field's name, or "field:--flag" for another flag
_DESTS = {
    **{_keyword(f.flag): f.name for f in FIELDS_TABLE if f.flag is not None},
    **{_keyword(alt.name): f"{f.name}:{alt.name}" for f in FIELDS_TABLE for alt in f.also},
    **{f.name: f.name for f in FIELDS_TABLE},
}
# the API's attribute of each field that sets one ("layout.x" -> "x")
_ATTRIBUTE = {f.name: f.value.split(".", 1)[1] for f in FIELDS_TABLE if f.value is not None}
_PARTS = ("cluster.", "workload.", "layout.", "options.")


def fields_named(
    keywords: dict[str, Any], state: dict | None = None, held: dict | None = None
) -> dict[str, Any]:
    """The fields, by their names, that keywords in either form give; a string read as the
    command line reads it. Keywords of neither form are returned as they are.

    ``state`` is what another flag reads (``chips`` needs the hardware, ``dp`` the CP).

    Parameters
    ----------
    keywords : dict of str to Any
        Keywords in the command line's form (``fsdp=``, ``batch="4M"``) or the API's (``x=``).
    state : dict, optional
        Fields, by name, that another flag is resolved against, beside those ``keywords``
        give; None: none.
    held : dict, optional
        Fields given another way (the API's ``chip=``), which what ``keywords`` imply must
        agree with (``state.with_implied``); None: none.

    Returns
    -------
    given : dict of str to Any
        Field name -> value, and the unknown keywords untouched.
    """
    given, others, rest = {}, {}, {}
    for key, value in keywords.items():
        dest = _DESTS.get(key)
        if dest is None:
            rest[key] = value
            continue
        name, _, alt = dest.partition(":")
        field = FIELDS[name]
        if alt:  # another flag (chips, dp, model_file): read against the rest below
            flag = next(f for f in field.also if f.name == alt)
            others[dest] = flag.parse(value, key) if isinstance(value, str) else value
        elif isinstance(value, str) and field.parse is not None and _reads(field, value):
            given[name] = field.parse(value, key)
        else:
            given[name] = value  # as it is: its check says what it may be
    given = {**given, **from_flags(others, {**(state or {}), **given})}
    return {**with_implied(given, held), **rest}


def _reads(field, text: str) -> bool:
    """Whether the field's reader takes this text: any, or one of its choices' words."""
    return field.choices is None or text in (str(c) for c in field.choices)


def cost_keywords(keywords: dict[str, Any], defaults: dict | None = None) -> dict[str, Any]:
    """``estimate``'s keywords from keywords in either form: ``fsdp=256`` is ``x=256``,
    ``hardware="h100", chips=1024`` are ``chip=`` and ``slice_shape=(128, 8)``.

    Parameters
    ----------
    keywords : dict of str to Any
        Keywords in either form; ``chip`` and ``exact`` are passed on as they are.
    defaults : dict, optional
        Fields by name taken where neither the keywords nor what they imply give them (a
        slice's name gives its chip; ``chip`` is the hardware); None: none.

    Returns
    -------
    keywords : dict of str to Any
        By the cost model's names (``Cluster``, ``Workload``, ``Layout``, ``Options`` fields).
    """
    own = {k: v for k, v in keywords.items() if k in ("chip", "exact")}
    defaults = defaults or {}
    hardware = own.get("chip", keywords.get("hardware", defaults.get("hardware")))
    state = {"hardware": hardware, "cp": keywords.get("cp")}
    out = dict(own)
    held = {"hardware": own["chip"]} if "chip" in own else None  # a chip given as the chip
    given = fields_named({k: v for k, v in keywords.items() if k not in own}, state, held)
    given = {**{k: v for k, v in defaults.items() if k not in (held or {})}, **given}
    for name, value in given.items():
        field = FIELDS.get(name)
        if field is None or field.value is None or not field.value.startswith(_PARTS):
            out[name] = value  # not a field of the four values: ``estimate`` names it
            continue
        if field.coerce is not None and name in ("hardware", "model", "precision"):
            value = field.coerce(name, value)  # a preset's name
        out[_ATTRIBUTE[name]] = value
    return out


def as_given(error: Exception, keywords: dict[str, Any]) -> Exception:
    """A refusal that names the keyword the user wrote (``fsdp``, not ``x``).

    Parameters
    ----------
    error : Exception
        The error raised; an ``InputError`` names the field it refuses.
    keywords : dict of str to Any
        The keywords the user wrote.

    Returns
    -------
    error : Exception
        An error of the same type naming the keyword written for the field; ``error`` itself
        when it names no field, names a keyword written, or no keyword gives its field.
    """
    field = getattr(error, "field", None)
    if field is None or field in keywords:
        return error
    written = next(
        (k for k in keywords if _ATTRIBUTE.get(_DESTS.get(k, "").partition(":")[0]) == field),
        None,
    )
    if written is None:
        return error
    renamed = type(error)(written, error.allowed, error.got)
    return renamed
