"""The cost layer stays pure numpy: importing it pulls in no widget library (STYLE)."""

import subprocess
import sys


def test_importing_the_cost_layer_leaves_widget_libraries_out():
    code = (
        "import sys, scaling_widgets.cost, scaling_widgets.presets, scaling_widgets.cli; "
        "print([m for m in ('ipywidgets', 'bqplot', 'traitlets') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cost_layer_holds_no_sentences():
    """Words for people live in text/; cost/ may only word its refusals (STYLE)."""
    import ast
    import pathlib
    import re

    errors = {"refuse", "require", "ValueError", "TypeError", "InputError", "FrozenInstanceError"}
    # a field's check, and its words
    errors |= {"Number", "Whole", "Choice", "Switch", "Instance", "Maybe"}
    found = []
    for path in sorted(pathlib.Path("scaling_widgets/cost").rglob("*.py")):
        if path.name == "checks.py":  # the words of every refusal: what a field may hold
            continue
        tree = ast.parse(path.read_text())
        allowed = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(
                node, clean=False
            ):
                allowed.add(id(node.body[0].value))
            if isinstance(node, ast.Expr) and isinstance(
                node.value, ast.Constant
            ):  # an attribute's docstring
                allowed.add(id(node.value))
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) in errors
            ):
                allowed.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in allowed
            ):
                if (
                    len(re.findall(r"[A-Za-z]{2,}", node.value)) >= 4 and " " in node.value.strip()
                ):  # a sentence
                    found.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
    assert found == []
