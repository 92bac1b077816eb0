"""`model=program` registers without torch: the modules `import ddlsim` may reach never import it
at module level (the capture itself imports torch when it runs)."""

from __future__ import annotations

import ast
from pathlib import Path

import ddlsim

ROOT = Path(ddlsim.__file__).resolve().parent
LIGHT = ["capture/__init__.py", "capture/model.py", "capture/cache.py", "training/trace.py", "__init__.py"]


def _top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_light_modules_do_not_import_torch_or_the_capture_machinery():
    for relative in LIGHT:
        imported = _top_level_imports(ROOT / relative)
        assert "torch" not in imported, relative
        assert not any(name.startswith(("ddlsim.capture.api", "ddlsim.capture.session", "ddlsim.capture.recorder"))
                       for name in imported), relative


def test_capture_and_simulate_are_reachable_from_the_package():
    assert callable(ddlsim.capture) and callable(ddlsim.simulate)
    assert ddlsim.CapturedProgram.__name__ == "CapturedProgram"
