"""Plain-text tables for the human summary printed after a run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ddlsim.report.quantities import format_in_unit, format_number


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


def plain(value: object) -> str:
    """Text as it is, numbers with four significant digits, counts exactly, nothing as blank."""
    if value is None:
        return ""
    return format_number(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def quantity_table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str | None],
                   headers: Mapping[str, str] | None = None) -> str:
    """A table whose quantity columns each show all their values in one unit.

    `columns` maps a column to its kind (``time_s``, ``size_bytes``, ``bandwidth_bps``,
    ``flop_per_s``, ``percent`` for fractions, ``ratio``) or to None for text and plain numbers.
    A quantity column's unit is picked from its values and written in its header:
    ``time (ms)``, then ``0.25``, ``12.5``.
    """
    names = dict(headers or {})
    shown: list[dict[str, Any]] = [dict(row) for row in rows]
    for column, kind in columns.items():
        if kind is None:
            continue
        unit, texts = format_in_unit([row.get(column) for row in rows], kind)
        for row, text in zip(shown, texts, strict=True):
            row[column] = text
        names[column] = f"{names.get(column, column)} ({unit})"
    return format_table(shown, {column: plain for column in columns}, names)


def write_rows(rows: Sequence[Mapping[str, Any]], path: str | Path) -> str:
    """Write `rows` (dicts with the same keys) as CSV at `path` and return them as a text table."""
    import csv

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return format_table(rows, {key: str for key in rows[0]})
