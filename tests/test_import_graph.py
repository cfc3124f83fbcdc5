"""The import graph of ``toolcalls``: no cycles, and the dependency direction of the architecture.

The graph is read from the source with ``ast``, not by importing anything: an edge for every
``import`` and ``from ... import`` of a ``toolcalls`` module, at module level or inside a function
or class, except inside ``if TYPE_CHECKING:`` (never executed). The lazy maps of the facades
(``importlib.import_module`` on first attribute access) are not edges: they run after every module
involved has finished importing.

Direction: ``worker -> workflows, activities``; ``activities -> workflows.models, workflows.rules``;
``workflows`` imports nothing from ``activities`` or ``worker``, and inside it the sub-packages
depend one way, ``reach -> call -> rules -> models``. Workflow modules import only the standard
library, ``temporalio`` and ``pydantic`` besides our own, so the sandbox passes them through.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import toolcalls

PACKAGE = "toolcalls"
WORKFLOWS = "toolcalls.workflows"
ACTIVITIES = "toolcalls.activities"
WORKER = "toolcalls.worker"

WORKFLOWS_MAY_IMPORT_FROM_ACTIVITIES: frozenset[str] = frozenset()
"""ARCHITECTURE.md lets workflows import the plan activity's name from activities; that name is
``toolcalls.workflows.models.call.PLAN_ACTIVITY``, so nothing under activities is imported."""
ACTIVITIES_MAY_IMPORT_FROM_WORKFLOWS = ("toolcalls.workflows.models", "toolcalls.workflows.rules")
"""The pure parts: wire models and rules, never workflow code or the client."""
LAYERS = ("models", "rules", "call", "reach")
"""The sub-packages of ``workflows``, each importing only from itself and those before it."""
WORKFLOW_THIRD_PARTY = frozenset({"temporalio", "pydantic"})


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line`` of ``source``'s file."""

    source: str
    target: str
    line: int


Graph = Mapping[str, Mapping[str, Edge]]
"""Each module's edges, by target module."""


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (symbolic links followed: the
    package's folders are links to the repository's top-level ones)."""
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if (Path(folder) / d / "__init__.py").exists())
        parts = [package, *Path(folder).relative_to(root).parts]
        for name in sorted(files):
            if name.endswith(".py"):
                stem = name.removesuffix(".py")
                dotted = parts if stem == "__init__" else [*parts, stem]
                found[".".join(dotted)] = Path(folder) / name
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: at any depth, outside ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for other in node.orelse:
                yield from runtime_imports(ast.Module(body=[other], type_ignores=[]))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from runtime_imports(node)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names ``node`` imports (a module, or a module and a name in it)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parent = module.split(".") if is_package else module.split(".")[:-1]
        parent = parent[: len(parent) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    for alias in node.names:
        yield f"{base}.{alias.name}"


def build_graph(found: Mapping[str, Path], package: str = PACKAGE) -> Graph:
    """Each module's imports of modules in ``found``; ``from a import b`` is an edge to ``a.b``
    when that is a module, else to ``a``."""
    graph: dict[str, dict[str, Edge]] = {}
    for module, path in found.items():
        edges: dict[str, Edge] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in runtime_imports(tree):
            for dotted in _targets(node, module, path.name == "__init__.py"):
                target = dotted
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != module and target.startswith(package):
                    edges.setdefault(target, Edge(module, target, node.lineno))
        graph[module] = edges
    return graph


def find_cycle(graph: Graph) -> list[Edge] | None:
    """One import cycle, as its edges in order, or ``None``."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[Edge] = []
        on_path = {start: 0}
        stack = [iter(sorted(graph[start].values(), key=lambda e: e.target))]
        while stack:
            edge = next(stack[-1], None)
            if edge is None:
                stack.pop()
                left = path.pop().target if path else start
                on_path.pop(left, None)
                done.add(left)
                continue
            if edge.target in on_path:
                return [*path[on_path[edge.target] :], edge]
            if edge.target in done or edge.target not in graph:
                continue
            path.append(edge)
            on_path[edge.target] = len(path)
            stack.append(iter(sorted(graph[edge.target].values(), key=lambda e: e.target)))
    return None


def describe(cycle: list[Edge]) -> str:
    steps = [f"{edge.source} (line {edge.line})" for edge in cycle]
    return " -> ".join([*steps, cycle[0].source])


def under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crossing(graph: Graph, source: str, target: str) -> list[str]:
    """The edges from modules under ``source`` to modules under ``target``, for a message."""
    return [
        f"{edge.source} (line {edge.line}) imports {edge.target}"
        for module, edges in sorted(graph.items())
        if under(module, source)
        for edge in edges.values()
        if under(edge.target, target)
    ]


@pytest.fixture(scope="module")
def found() -> dict[str, Path]:
    return modules(Path(toolcalls.__file__).parent, PACKAGE)


@pytest.fixture(scope="module")
def graph(found: dict[str, Path]) -> Graph:
    return build_graph(found)


def test_the_graph_covers_every_part_of_the_package(found: dict[str, Path]) -> None:
    for module in (
        "toolcalls",
        "toolcalls.workflows.call.tool_call",
        "toolcalls.activities.catalog",
        "toolcalls.worker.inbox.app",
    ):
        assert module in found


def test_there_is_no_import_cycle(graph: Graph) -> None:
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {describe(cycle)}"


def test_workflows_import_nothing_from_the_worker_or_the_activities(graph: Graph) -> None:
    assert not crossing(graph, WORKFLOWS, WORKER)
    allowed = WORKFLOWS_MAY_IMPORT_FROM_ACTIVITIES
    found = [line for line in crossing(graph, WORKFLOWS, ACTIVITIES) if line not in allowed]
    assert not found


def test_activities_import_nothing_from_the_worker_and_only_the_pure_parts_of_workflows(
    graph: Graph,
) -> None:
    assert not crossing(graph, ACTIVITIES, WORKER)
    impure = [
        line
        for line in crossing(graph, ACTIVITIES, WORKFLOWS)
        if not any(f" imports {pure}." in line for pure in ACTIVITIES_MAY_IMPORT_FROM_WORKFLOWS)
    ]
    assert not impure


def test_the_sub_packages_of_workflows_depend_one_way(graph: Graph) -> None:
    def layer(module: str) -> int:
        """The module's place in ``LAYERS``; the facade ``toolcalls.workflows`` is above all."""
        parts = module.split(".")
        return LAYERS.index(parts[2]) if len(parts) > 2 else len(LAYERS)

    unplaced = [
        module
        for module in sorted(graph)
        if under(module, WORKFLOWS) and module != WORKFLOWS and module.split(".")[2] not in LAYERS
    ]
    assert not unplaced, f"in none of the sub-packages {', '.join(LAYERS)}: {unplaced}"
    against = [
        f"{edge.source} (line {edge.line}) imports {edge.target}"
        for module, edges in sorted(graph.items())
        if under(module, WORKFLOWS)
        for edge in edges.values()
        if under(edge.target, WORKFLOWS) and layer(edge.target) > layer(module)
    ]
    assert not against, f"against {' -> '.join(reversed(LAYERS))}: {against}"


def test_workflow_modules_import_only_the_standard_library_temporalio_and_pydantic(
    found: dict[str, Path],
) -> None:
    allowed = set(sys.stdlib_module_names) | WORKFLOW_THIRD_PARTY | {PACKAGE}
    outside = []
    for module, path in sorted(found.items()):
        if not under(module, WORKFLOWS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in runtime_imports(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            for dotted in _targets(node, module, path.name == "__init__.py"):
                if dotted.partition(".")[0] not in allowed:
                    outside.append(f"{module} (line {node.lineno}) imports {dotted}")
    assert not outside


def test_a_cycle_through_a_function_level_import_is_found_and_type_checking_is_not(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from pkg import c\n")
    (package / "c.py").write_text("from . import a\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    (package / "e.py").write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    import pkg.d\n")
    graph = build_graph(modules(package, "pkg"), "pkg")

    cycle = find_cycle(graph)

    assert cycle is not None
    assert describe(cycle) == "pkg.a (line 1) -> pkg.sub.b (line 2) -> pkg.c (line 1) -> pkg.a"
    assert not graph["pkg.d"]
    assert not graph["pkg.e"]
    (package / "c.py").write_text("")
    assert find_cycle(build_graph(modules(package, "pkg"), "pkg")) is None
