"""The arguments of a launch line in a shell script: what Megatron-LM's and MaxText's example
scripts hold. Enough of the shell to read them, and nothing runs: variables and arrays set (and
appended to) once, ``${VAR}``, ``${VAR:-default}``, ``${ARR[@]}``, ``$((a*b))``, ``if`` on string
comparisons, comments and line continuations.
"""

from __future__ import annotations

import ast
import pathlib
import re
import shlex

from ..cost.ground.refusals import refuse

_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$")
_VAR = re.compile(
    r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9])(\[@\])?(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)
_ARITHMETIC = re.compile(r"\$\(\(([^()]*)\)\)")
_INNER = re.compile(r"(?<=:-)\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9])(?::-([^{}]*))?\}")
_NOT_LAUNCH = ("if", "elif", "echo", "printf", "[", "[[", "test", "mkdir", "cd", "ls")


def launch_args(
    text: str, program: str, said: list | None = None, unset: list | None = None
) -> tuple[list[str], list[str]]:
    """The arguments before and after ``program`` (a pattern such as ``pretrain_gpt\\.py``) on the
    script's launch line; a file of bare arguments (no such line) is all after.

    Parameters
    ----------
    text : str
        The script, or a file of bare arguments.
    program : str
        A regular expression a word of the launch line matches: the program it runs.
    said : list, optional
        Where to say which branch of each ``if`` was taken, a line each.
    unset : list, optional
        Where to name the variables used without a value or a default, with their lines.

    Returns
    -------
    before : list of str
        The launcher's arguments (``torchrun --nproc_per_node 8``); empty for bare arguments.
    after : list of str
        The program's arguments, the shell's variables and arithmetic expanded.
    """
    variables: dict[str, list[str]] = {}
    chains: list = []  # for each open ``if``: whether its branch at hand runs, and one before ran
    said = [] if said is None else said
    lines = _logical_lines(text)
    for number, line in lines:
        where = f"config line {number}"
        first = line.split()[0]
        if first in ("if", "elif", "else", "fi"):
            _branch(first, (where, line), chains, variables, said)
            continue
        if not all(runs for runs, _ in chains):
            continue
        match = _ASSIGN.match(line)
        if match:
            name, append, value = match.groups()
            words = _value(value, variables, where, line, unset)
            variables[name] = variables.get(name, []) + words if append else words
            continue
        words = _words(_expanded(line, variables, (unset, where)), where, line)
        at = [i for i, w in enumerate(words) if any(re.search(program, p) for p in w.split())]
        if at and words[0] not in _NOT_LAUNCH:
            if re.search(r"\s", words[at[0]]):  # a command run as a string: bash -c "…", srun …
                return launch_args(re.sub(r";\s*", "\n", words[at[0]]), program, said, unset)
            return words[: at[0]], words[at[0] + 1 :]
    bare = " ".join(line for _, line in lines if not _ASSIGN.match(line))
    return [], _words(_expanded(bare, variables), "config", bare)


_SOURCE = re.compile(r"^[ \t]*(?:source|\.)[ \t]+(?![=(])([^\n#]+?)[ \t]*(?:#[^\n]*)?$", re.M)
# what a sourced path starts from that names the script's own folder: $(dirname $0), ${SCRIPT_DIR},
# `pwd` and the like, up to the path's first "/" after them
_FROM_HERE = re.compile(r"""^["']?(?:\$\([^)]*\)|\$\{[^}]*\}|\$[A-Za-z_]\w*|`[^`]*`)/""")


def with_sourced(text: str, folder: pathlib.Path) -> tuple[str, list[str]]:
    """A script with each file it ``source``s (or ``.``s) from its own folder put in the line's
    place, once each, nested; and the sourced files not found there.

    Parameters
    ----------
    text : str
        The script.
    folder : pathlib.Path
        The script's folder: a path that starts from ``$(dirname $0)``, ``${SCRIPT_DIR}`` or
        ```pwd``` is taken from there, as is a relative one.

    Returns
    -------
    text : str
        The script, the sourced files' lines in place of the ``source`` lines.
    missing : list of str
        The sourced paths not found beside it, as the script writes them.
    """
    missing: list[str] = []
    seen: set = set()

    def put(match) -> str:
        written = match.group(1)
        relative = _FROM_HERE.sub("", written.strip("\"'")).strip("\"'")
        file = folder / relative
        if "$" in relative or relative.startswith("/") or not file.is_file():
            missing.append(written)
            return match.group(0)
        if file in seen:
            return ""
        seen.add(file)
        return _SOURCE.sub(put, file.read_text())

    return _SOURCE.sub(put, text), missing


# a line that runs another script: ``./configs/base.sh 4 full`` or ``bash base.sh "$RUN"``
_CALL = re.compile(r"^[ \t]*(?:(?:bash|sh)[ \t]+)?([^\s#=]+\.sh)\b([^\n]*)$", re.M)


def runs_script(text: str) -> str | None:
    """The name of the first script a script runs (``./base.sh 4 full``), else None.

    Parameters
    ----------
    text : str
        The script.

    Returns
    -------
    name : str or None
        The run script's file name, its folders left out; None where it runs none.
    """
    match = _CALL.search(text)
    return None if match is None else match.group(1).strip("\"'").rsplit("/", 1)[-1]


def with_called(text: str, folder: pathlib.Path) -> tuple[str, list[str]]:
    """A script with each script it runs from its own folder (found by its name) put in the
    line's place, its positional parameters (``$1``, ``${2:-default}``) set to the line's words,
    once each, nested; and the scripts run that are not found there.

    Parameters
    ----------
    text : str
        The script.
    folder : pathlib.Path
        The script's folder, where a script it runs is looked for by its file name.

    Returns
    -------
    text : str
        The script, each run script's lines in place of the line that runs it.
    missing : list of str
        The names of the scripts run that are not beside it.
    """
    missing: list[str] = []
    seen: set = set()

    def put(match) -> str:
        name = match.group(1).strip("\"'").rsplit("/", 1)[-1]
        file = folder / name
        if not file.is_file() or file in seen:
            missing.extend([] if file in seen else [name])
            return match.group(0)
        seen.add(file)
        words = shlex.split(match.group(2), posix=False)  # quotes kept: expanded by the caller's
        given = [f"ARG_{i}={word}" for i, word in enumerate(words, start=1)]
        body = re.sub(r"\$\{([0-9]+)", r"${ARG_\1", file.read_text())
        body = re.sub(r"\$([0-9])", r"${ARG_\1}", body)
        return "\n".join([*given, _CALL.sub(put, body)])

    return _CALL.sub(put, text), missing


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with their continuations joined, a quote or an array's ``( ... )`` open across lines
    on one line, comments out, ``; then`` and ``; do`` split off; each with the number of the
    line it starts on."""
    out: list[list] = []
    open_array = open_quote = False
    joined = False  # the line before ended in a backslash: this one continues it
    for number, raw in enumerate(text.splitlines(), start=1):
        continues = raw.endswith("\\")
        raw = raw[:-1] if continues else raw
        line = raw.strip() if open_quote else _uncommented(raw).strip()
        if not line and not open_quote and not joined:
            joined = continues
            continue
        if open_array or open_quote or joined:
            out[-1][1] += " " + line
        else:
            out.append([number, re.sub(r";\s*(then|do)\s*$", "", line)])
        joined = continues
        open_quote = _quote_left_open(out[-1][1]) is not None
        if re.match(r"^(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\+?=\(", out[-1][1]):
            open_array = ")" not in out[-1][1].split("=(", 1)[1]
    return [(number, line) for number, line in out]


def _quote_left_open(line: str) -> str | None:
    """The quote a line leaves open, as the shell reads it (a backslash escapes in double quotes
    and outside quotes, not in single ones); None when every quote closes."""
    quote, escaped = None, False
    for ch in line:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
    return quote


def _uncommented(line: str) -> str:
    """The line without its comment: a # that starts a word, outside quotes."""
    out, quote = [], None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        out.append(ch)
    return "".join(out)


def _branch(word: str, at: tuple, chains: list, variables: dict, said: list) -> None:
    """An ``if``'s branches: the first whose test holds runs (an unknown test holds), and the
    one taken is said. ``at`` is where the line is and the line; ``chains`` holds, for each open
    ``if``, whether the branch at hand runs and whether one before it ran."""
    where, line = at
    if word != "if" and not chains:  # the shell's own syntax error
        raise refuse(where, "inside an if chain ('if ... fi')", _shown(line))
    if word == "fi":
        chains.pop()
        return
    if word == "if":
        chains.append([False, False])
    runs, ran = chains[-1]
    ran = ran or runs
    holds, known = (True, True) if word == "else" else _holds(line.split(None, 1)[-1], variables)
    chains[-1] = [not ran and holds, ran]
    if chains[-1][0] and all(runs for runs, _ in chains[:-1]):
        unread = "" if known else ", its test taken to hold"
        said.append(f"{where}: took '{_shown(line)}'{unread}")


def _holds(test: str, variables: dict) -> tuple[bool, bool]:
    """``[[ "$A" == "b" ]] || [ -z "$C" ]``: string tests; anything else is taken to hold. Whether
    it holds, and whether every part of it was read."""
    results, known = [], True
    for part in re.split(r"\|\|", test):
        words = _words(
            _expanded(part.replace("[[", "").replace("]]", ""), variables), "config", test
        )
        words = [w for w in words if w not in ("[", "]")]
        if len(words) == 3 and words[1] in ("==", "=", "!="):
            results.append((words[0] == words[2]) == (words[1] != "!="))
        elif len(words) == 2 and words[0] in ("-z", "-n"):
            results.append((words[1] == "") == (words[0] == "-z"))
        elif len(words) == 1 and words[0] in ("-z", "-n"):  # an empty operand
            results.append(words[0] == "-z")
        else:
            results.append(True)
            known = False
    return any(results), known


def _value(text: str, variables: dict, where: str, line: str, unset=None) -> list[str]:
    """An assignment's value: an array's words, or one word (``unset``: ``_expanded``'s)."""
    text = text.strip()
    if text.startswith("("):
        if ")" not in text:
            raise refuse(where, "an array closed by ')'", _shown(line))
        inner = text[1 : text.rindex(")")]
        return _words(_expanded(inner, variables, (unset, where)), where, line)
    words = _words(_expanded(text, variables, (unset, where)), where, line)
    return words[:1] if words else [""]


def _words(text: str, where: str, line: str) -> list[str]:
    """The shell's words of ``text`` (expanded from ``line``, ``where`` in the script); an unclosed
    quote is refused with the line it opens on."""
    try:
        return shlex.split(text)
    except ValueError:  # shlex's "No closing quotation"
        raise refuse(where, "shell words whose quotes close", _shown(line)) from None


def _shown(line: str) -> str:
    """A line as a refusal shows it: its first 60 characters."""
    return line if len(line) <= 60 else line[:57] + "..."


_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a // b,
              ast.FloorDiv: lambda a, b: a // b}  # fmt: skip


def _arithmetic(node) -> int:
    """The shell's integer arithmetic, parsed and walked: whole numbers, + - * / and brackets;
    anything else is refused (nothing is executed)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arithmetic(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    raise ValueError("not shell arithmetic")


def _expanded(text: str, variables: dict, noted: tuple = (None, "")) -> str:
    """``text`` with its variables and arithmetic replaced as the shell expands them: inside
    double quotes a value stays one word, outside them it splits at blanks (an empty one leaves no
    word), inside single quotes nothing expands. An unknown variable is empty (0 in arithmetic),
    or its ``:-`` default, and is named in ``noted``'s list with its place there; an array's
    elements are words of their own."""
    unset, where = noted

    def missing(name: str) -> None:
        if unset is not None and not any(u.startswith(f"${name} ") for u in unset):
            unset.append(f"${name} ({where})")

    def number(name: str) -> str:
        if name not in variables:
            missing(name)
        return (variables.get(name) or ["0"])[0]

    def arithmetic(match) -> str:
        expression = _VAR.sub(lambda m: number(m.group(1) or m.group(4)), match.group(1))
        expression = re.sub(
            r"\b([A-Za-z_][A-Za-z0-9_]*)\b", lambda m: number(m.group(1)), expression
        )
        try:
            # "$(( 1024 * $n_k ))": the blanks inside the brackets are the shell's, not Python's
            return str(int(_arithmetic(ast.parse(expression.strip(), mode="eval").body)))
        except (SyntaxError, ValueError, ZeroDivisionError):
            return "0"

    def inner(match) -> str:  # a default that is itself a variable: ${A:-${B:-4}}
        name, default = match.group(1), match.group(2)
        if name not in variables and default is None:
            missing(name)
        return (variables.get(name) or [default or ""])[0]

    text = _ARITHMETIC.sub(arithmetic, text)
    while _INNER.search(text):
        text = _INNER.sub(inner, text)
    out, at = [], 0
    for match in _VAR.finditer(text):
        quote = _quote_left_open(text[: match.start()])
        out.append(text[at : match.start()])
        whole = (
            text[match.start() - 1 : match.start()] == '"' == text[match.end() : match.end() + 1]
        )
        name = match.group(1) or match.group(4)
        if quote != "'" and name not in variables and match.group(3) is None:
            missing(name)
        out.append(match.group(0) if quote == "'" else _value_of(match, variables, quote, whole))
        at = match.end()
    return "".join(out) + text[at:]


def _value_of(match, variables: dict, quote: str | None, whole: bool) -> str:
    """A variable's value where ``match`` names it: inside double quotes (``quote``), escaped
    for them, an array's elements words of their own where the quotes hold it alone (``whole``:
    "${A[@]}") and joined by blanks inside a longer string; outside quotes, its words each
    quoted, as the shell splits them."""
    name = match.group(1) or match.group(4)
    if name in variables:
        words = variables[name] if match.group(2) else variables[name][:1]
    else:  # its default, its quotes removed as the shell removes them
        words = [" ".join(_words(match.group(3) or "", "config", match.group(0)))]
    if quote == '"':
        return ('" "' if whole else " ").join(re.sub(r'(["\\$`])', r"\\\1", w) for w in words)
    return " ".join(shlex.quote(part) for w in words for part in w.split())
