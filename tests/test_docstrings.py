"""Docstrings as numpydoc writes them (STYLE, after pvlib): every public function and method of
the package that takes parameters gives each its own entry under ``Parameters``, in its
signature's names; a formula's References sit beside the docs/MODEL.md section it implements."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "scaling_widgets"
SECTION = re.compile(r"Parameters\n-+\n(.*?)(?:\n\n[A-Z][a-z]+\n-+\n|\Z)", re.S)
ENTRY = re.compile(r"^(\*{0,2}\w+) : |^(\*{1,2}\w+)$", re.M)


def public_functions(root: Path = PACKAGE):
    """(where, function) for every public function and public class's public method."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            members = [node] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                members = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            for f in members:
                if not f.name.startswith("_"):
                    yield f"{path.relative_to(root.parent)}:{f.lineno} {f.name}", f


def undocumented(function: ast.FunctionDef) -> list[str]:
    """The parameters without an entry of their own, and entries that name no parameter."""
    a = function.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names = [name for name in names if name not in ("self", "cls")]
    names += [f"*{a.vararg.arg}"] if a.vararg else []
    names += [f"**{a.kwarg.arg}"] if a.kwarg else []
    if not names:
        return []
    found = SECTION.search(ast.get_docstring(function) or "")
    entries = [m[0] or m[1] for m in ENTRY.findall(found.group(1))] if found else []
    crammed = re.findall(r"^(\w+(?:, \w+)+) : ", found.group(1), re.M) if found else []
    missing = [name for name in names if name not in entries]
    return missing + [f"unknown {e}" for e in entries if e not in names] + crammed


def test_every_public_function_gives_each_parameter_its_own_entry():
    missing = {where: gaps for where, f in public_functions() if (gaps := undocumented(f))}
    assert missing == {}


def test_references_name_the_model_section_first():
    for where, f in public_functions():
        doc = ast.get_docstring(f) or ""
        if "References\n----------" in doc:
            first = doc.split("References\n----------\n", 1)[1].lstrip()
            assert first.startswith(".. [1] docs/MODEL.md "), where


def test_a_crammed_entry_is_caught():
    source = (
        'def f(a, b):\n    """F.\n\n    Parameters\n    ----------\n    a, b : float\n'
        '        A and B.\n    """\n'
    )
    (function,) = ast.parse(source).body
    assert undocumented(function) == ["a", "b", "a, b"]
