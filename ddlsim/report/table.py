"""Plain-text tables for the human summary printed after a run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any


def format_table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Callable[[Any], str]],
                 headers: Mapping[str, str] | None = None) -> str:
    """Columns in the given order, each value passed through its formatter, left-aligned.

    `headers` renames columns in the header line (``{"series": "fabric"}``).
    """
    header = [(headers or {}).get(name, name) for name in columns]
    body = [[formatter(row[name]) for name, formatter in columns.items()] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(header, *body)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
             for line in [header, *body]]
    return "\n".join(lines)
