"""Functions a reader takes in at once: no function body in the package runs over 60 lines of
code, its docstring aside (STYLE; a longer one is split by what its parts do)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "scaling_widgets"
LONGEST = 60


def code_lines(node: ast.FunctionDef) -> int:
    """The lines of a function's body, its docstring left out."""
    body = node.body
    if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:] or body
    return body[-1].end_lineno - body[0].lineno + 1


def long_functions(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (n := code_lines(node)) > LONGEST:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {n}")
    return found


def test_no_function_body_runs_over_60_lines():
    assert long_functions() == []


def test_a_long_function_is_caught(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST + 1))
    (tmp_path / "long.py").write_text(f'def f():\n    """Doc."""\n{body}\n')
    assert long_functions(tmp_path) == [f"{tmp_path.name}/long.py:1 f: {LONGEST + 1}"]
