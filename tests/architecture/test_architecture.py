"""The fence around the house (docs/architecture.md): no import circle, every import in the
direction of the layers, nothing loose at the top, no module over 400 lines.

    core <- network, compute <- workload <- training <- capture <- chakra <- tasks, validation <- app
    report imports only core (tasks, validation and app format rows with it)

Imports inside functions and package ``__init__`` files count (`import_graph`).
"""

from __future__ import annotations

import networkx as nx
import pytest

from tests.architecture.import_graph import PACKAGE, ROOT, build_import_graph, room_of

LOWER = {  # room -> the rooms it may import (besides itself)
    "core": set(),
    "network": {"core"},
    "compute": {"core"},
    "report": {"core"},
    "workload": {"core", "network", "compute"},
    "training": {"core", "network", "compute", "workload"},
    "capture": {"core", "network", "compute", "workload", "training"},
    "chakra": {"core", "network", "compute", "workload", "training", "capture"},
    "tasks": {"core", "network", "compute", "workload", "training", "capture", "chakra", "report"},
    "validation": {"core", "network", "compute", "workload", "training", "capture", "chakra", "report"},
    "app": {"core", "network", "compute", "workload", "training", "capture", "chakra", "report", "tasks",
            "validation"},
}
MAX_LINES = 400



@pytest.fixture(scope="module")
def imports():
    return build_import_graph()


def test_every_import_names_a_module_of_the_tree(imports) -> None:
    assert imports.unresolved == []


def test_there_is_no_import_circle(imports) -> None:
    circles = [sorted(group) for group in nx.strongly_connected_components(imports.graph) if len(group) > 1]
    assert circles == []


def test_every_import_goes_down_the_layers(imports) -> None:
    against = sorted(f"{source} -> {target}" for source, target in imports.graph.edges
                     if room_of(source) != room_of(target) and room_of(target) not in LOWER.get(room_of(source), ()))
    assert against == []


def test_only_the_public_door_is_loose_at_the_top(imports) -> None:
    rooms = {room_of(name) for name in imports.modules if name != PACKAGE}
    loose = sorted(room for room in rooms if not (ROOT / PACKAGE / room).is_dir())
    assert loose == []
    assert rooms == set(LOWER)


def test_no_module_is_longer_than_400_lines(imports) -> None:
    long = {name: count for name, path in imports.modules.items()
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
