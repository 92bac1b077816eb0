"""The package table of docs/architecture.md, generated from the code.

    python scripts/architecture_table.py            # print the table
    python scripts/architecture_table.py --write    # rewrite it in docs/architecture.md

One row per package of ddlsim/: its modules, its lines, what it owns (the first sentence of its
``__init__`` docstring) and the rooms it may import (tests/architecture/test_architecture.py's
LOWER). tests/architecture/test_architecture_doc.py fails when the document's table is stale.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- package-table: begin -->", "<!-- package-table: end -->"
sys.path.insert(0, str(ROOT))

from tests.architecture.test_architecture import LOWER  # noqa: E402


def _owns(init: Path) -> str:
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    first = " ".join(docstring.split("\n\n")[0].split())
    return first.replace("|", "\\|")


def table() -> str:
    rows = ["| package | modules | lines | owns | may import |", "| --- | ---: | ---: | --- | --- |"]
    for init in sorted((ROOT / "ddlsim").rglob("__init__.py")):
        package = init.parent
        name = ".".join(package.relative_to(ROOT).parts)
        modules = sorted(package.glob("*.py"))
        lines = sum(len(module.read_text(encoding="utf-8").splitlines()) for module in modules)
        parts = name.split(".")
        room = parts[1] if len(parts) > 1 else None
        may = ", ".join(sorted(LOWER[room])) if room in LOWER and len(parts) == 2 else ""
        if room is None:
            may = "everything (lazily, by name)"
        elif len(parts) > 2:
            may = f"as {room}"
        rows.append(f"| `{name}` | {len(modules)} | {lines:,} | {_owns(init)} | {may or 'nothing of ddlsim'} |")
    return "\n".join(rows)


def document_with(text: str, generated: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + generated + "\n" + text[end:]


def main() -> int:
    generated = table()
    if "--write" in sys.argv[1:]:
        DOC.write_text(document_with(DOC.read_text(encoding="utf-8"), generated), encoding="utf-8")
        print(f"wrote the package table of {DOC.relative_to(ROOT)}")
    else:
        print(generated)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
