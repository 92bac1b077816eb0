"""docs/architecture.md is current: its package table is the one the code generates."""

from __future__ import annotations

import importlib.util

from tests.architecture.import_graph import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("architecture_table", ROOT / "scripts" / "architecture_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_table_is_current() -> None:
    script = _script()
    text = script.DOC.read_text(encoding="utf-8")
    assert script.document_with(text, script.table()) == text, \
        "docs/architecture.md is stale: run python scripts/architecture_table.py --write"


def test_contributing_points_to_the_architecture() -> None:
    assert "docs/architecture.md" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
