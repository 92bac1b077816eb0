"""The package's import graph, read from the source: every ``import`` and ``from ... import`` of a
ddlsim module, at module level or inside a function, including package ``__init__`` files.

A module that imports ``ddlsim.a.b.c`` also runs the ``__init__`` of ``ddlsim.a`` and ``ddlsim.a.b``,
so those are edges too; the root ``ddlsim/__init__.py`` (the lazy public door, importing nothing
at load) is left out of the graph.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "ddlsim"


@dataclass
class ImportGraph:
    modules: dict[str, Path]
    graph: nx.DiGraph
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (module, imported name) not in the tree


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imported(node: ast.AST, module: str, is_package: bool) -> list[tuple[str, str | None]]:
    """(module imported, name imported from it or None) for one import statement."""
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [(source, alias.name) for alias in node.names]


def _parents(name: str) -> list[str]:
    """The packages whose ``__init__`` importing `name` runs, the root excepted."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(2, len(parts))]


def build_import_graph(root: Path = ROOT) -> ImportGraph:
    modules = {module_name(path, root): path for path in sorted((root / PACKAGE).rglob("*.py"))}
    graph = nx.DiGraph()
    graph.add_nodes_from(name for name in modules if name != PACKAGE)
    unresolved = []
    for name, path in modules.items():
        if name == PACKAGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for source, imported in _imported(node, name, path.name == "__init__.py"):
                if source != PACKAGE and not source.startswith(PACKAGE + "."):
                    continue
                target = f"{source}.{imported}" if imported and f"{source}.{imported}" in modules else source
                if target not in modules:
                    unresolved.append((name, target))
                    continue
                for each in (*_parents(target), target):
                    if each != name and each != PACKAGE:
                        graph.add_edge(name, each)
    return ImportGraph(modules, graph, unresolved)


def room_of(module: str) -> str:
    """The package a module belongs to (``ddlsim.network.fabrics.torus`` -> ``network``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE
