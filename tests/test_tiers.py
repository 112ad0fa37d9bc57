"""The package in tiers that import one way: each folder (or file) imports only from itself and from
the tiers below it, and no files import each other in a circle. The order is declared here, once;
each folder's ``__init__`` docstring names its tier and what it may import.

Every import counts, one inside a function or under ``TYPE_CHECKING`` too: a type named from a
tier above is a tie to it all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "scaling_widgets"
HERE = Path(__file__).resolve().parent.parent / PACKAGE

# Lowest first. A name is a folder or a file of the package; "__init__" is the package's face.
PACKAGE_TIERS = (
    ("cost",),  # the numpy model: no widgets, no sentences
    ("presets", "hf_config"),  # data, and a Hugging Face config as a model
    ("catalog",),  # presets by name, your own from JSON
    ("measured",),  # published runs as the model's values
    ("text",),  # the words: units, explanations, reports
    ("fields",),  # every field a user sets, declared once
    ("launch",),  # frameworks' launch files
    ("widgets",),  # the panel's parts
    ("app",),  # the composed panel
    ("demo",),  # the panel served on Voila
    ("cli",),  # the command line
    ("__init__", "__main__"),
)
COST_TIERS = (
    ("ground",),  # how a refusal reads, what a field may hold, choice among formulas, registries
    ("hardware", "schedules", "strategies", "stacks"),  # chips and slices; the registries
    ("transformer",),  # the model's shapes, counts, one layer, experts, context, activations
    ("step",),  # the step's physics, collectives, pipeline, profiles, the whole run
    ("values",),  # Cluster, Workload, Layout, Options: what is evaluated
    ("layout",),  # whether a layout is legal, and how it is split and placed
    ("memory",),  # the memory of a placed layout
    ("evaluation",),  # evaluate(): the one path, and the Estimate
    ("search", "views", "calibrate", "compare"),  # what is built on evaluate()
    ("__init__",),
)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The package's modules that ``source`` (module ``name``) imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            # ``from . import blocks`` imports the module blocks; ``from .x import f``, x
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                found.add(target)
    return found


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Each module's imports of the package's modules; ``sources``: name -> (text, is_package)."""
    modules = set(sources)
    return {name: imports_of(text, name, pkg, modules) for name, (text, pkg) in sources.items()}


def read_package(root: Path = HERE) -> dict[str, tuple[str, bool]]:
    return {
        module_name(path, root): (path.read_text(), path.name == "__init__.py")
        for path in sorted(root.rglob("*.py"))
    }


def unit(module: str, inside: str) -> str | None:
    """The folder or file of ``inside`` that ``module`` belongs to; None outside it."""
    if module == inside:
        return "__init__"
    if not module.startswith(inside + "."):
        return None
    return module[len(inside) + 1 :].split(".")[0]


def up_imports(graph: dict[str, set[str]], inside: str, tiers: tuple) -> list[str]:
    """Every import inside ``inside`` that does not run to its own unit or a lower tier."""
    rank = {name: level for level, names in enumerate(tiers) for name in names}
    wrong = []
    for module, targets in sorted(graph.items()):
        here = unit(module, inside)
        if here is None:
            continue
        assert here in rank, f"{module}: {inside}'s tiers do not name {here!r}"
        for target in sorted(targets):
            there = unit(target, inside)
            if there is None or there == here:
                continue
            assert there in rank, f"{target}: {inside}'s tiers do not name {there!r}"
            if rank[there] >= rank[here]:
                wrong.append(f"{module} -> {target} ({here} may not import {there})")
    return wrong


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a loop (Tarjan's strongly connected
    components of more than one module)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    graph = import_graph(sources)
    return [
        *up_imports(graph, PACKAGE, PACKAGE_TIERS),
        *up_imports(graph, f"{PACKAGE}.cost", COST_TIERS),
        *(f"circle: {' <-> '.join(group)}" for group in circles(graph)),
    ]


def test_every_import_runs_down_a_tier_and_none_in_a_circle():
    assert violations(read_package()) == []


def test_every_folder_and_file_has_a_tier():
    named = {name for tiers in (PACKAGE_TIERS, COST_TIERS) for names in tiers for name in names}
    here = {p.stem for p in HERE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    cost = {
        p.stem
        for p in (HERE / "cost").iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert (here | cost) - named == set()


def test_a_planted_up_import_or_circle_is_caught():
    sources = read_package()
    planted = dict(sources)
    text, pkg = sources[f"{PACKAGE}.cost.ground.refusals"]
    planted[f"{PACKAGE}.cost.ground.refusals"] = (text + "\nfrom ..values import Layout\n", pkg)
    text, pkg = sources[f"{PACKAGE}.text.units"]
    planted[f"{PACKAGE}.text.units"] = (
        text + "\nif TYPE_CHECKING:\n    from ..fields import FIELDS\n",
        pkg,
    )
    found = violations(planted)
    assert any("ground.refusals -> scaling_widgets.cost.values" in v for v in found)
    assert any("text.units -> scaling_widgets.fields" in v for v in found)
    assert any(v.startswith("circle:") and "cost.values" in v for v in found)


def test_every_folder_says_its_tier():
    """Each folder's ``__init__`` docstring names its tier, as the declarations above order it."""
    for tiers, root, within in (
        (PACKAGE_TIERS, HERE, "the package"),
        (COST_TIERS, HERE / "cost", "cost/"),
    ):
        for level, names in enumerate(tiers, start=1):
            for name in names:
                init = root / name / "__init__.py"
                if init.exists() and name != "cost":
                    doc = " ".join((ast.get_docstring(ast.parse(init.read_text())) or "").split())
                    assert f"Tier {level} of {within}" in doc, name
