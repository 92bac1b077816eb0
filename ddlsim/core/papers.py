"""The seed papers' published numbers: one data file, `configs/reference/papers.yaml`.

Every value a side-by-side table prints beside ddlsim's, and every table of a paper that ddlsim
takes as input or checks against (RAMP Tables 9 and 10), lives in that file with the place in
the paper it comes from (figure, table or section). This module reads it:

    papers = load_papers()
    entry = papers.reference("ramp_fig16")          # one experiment's paper values
    entry.value("speedup_over_baselines")            # PaperValue(quantity, paper, source, value)
    entry.systems("fat_tree")                        # fabric options playing the paper's Fat-Tree
    papers.table("ramp_table9")                      # PaperTable(source, rows as dicts)

The file is read afresh by each `load_papers()` call (a few milliseconds); callers keep the
`Papers` object for as long as they need it. PyYAML is imported lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsim.core.resources import config_file

PAPERS_FILE = config_file("reference", "papers.yaml")


def papers_text() -> str:
    """The data file's text, from the shipped configs (`ddlsim.core.resources`)."""
    return PAPERS_FILE.read_text(encoding="utf-8")


@dataclass(frozen=True)
class PaperValue:
    """One statement of a paper: what it is about, the value as the paper gives it, and where.

    `value` is the number itself when code needs it (a ratio, a percentage, a count); `paper`
    is the text printed in side-by-side tables (``"1.01-16.7x"``, ``"about 25 us"``).
    """

    key: str
    quantity: str
    paper: str
    source: str
    value: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def number(self) -> float:
        if self.value is None:
            raise KeyError(f"paper value {self.key!r} ({self.paper}) has no single number")
        return float(self.value)


@dataclass(frozen=True)
class PaperReference:
    """The paper values of one reproduction (one experiment, one figure or table)."""

    name: str
    title: str
    values: Mapping[str, PaperValue]
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)

    def value(self, key: str) -> PaperValue:
        if key not in self.values:
            raise KeyError(f"{PAPERS_FILE.name}: reference {self.name!r} has no value {key!r} "
                           f"(it has {', '.join(self.values)})")
        return self.values[key]

    def systems(self, role: str) -> tuple[str, ...]:
        """The fabric options (row labels) that play the paper's system `role` in this reproduction."""
        if role not in self.roles:
            raise KeyError(f"{PAPERS_FILE.name}: reference {self.name!r} names no role {role!r} "
                           f"(it has {', '.join(self.roles)})")
        return self.roles[role]


@dataclass(frozen=True)
class PaperTable:
    """A table of a paper as printed: its source and its rows (one dict per row)."""

    name: str
    source: str
    rows: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Papers:
    """Everything in the data file."""

    references: Mapping[str, PaperReference]
    tables: Mapping[str, PaperTable]
    seeds: Mapping[str, str]

    def reference(self, name: str) -> PaperReference:
        if name not in self.references:
            raise KeyError(f"{PAPERS_FILE.name} has no reference {name!r}; "
                           f"known: {', '.join(sorted(self.references))}")
        return self.references[name]

    def table(self, name: str) -> PaperTable:
        if name not in self.tables:
            raise KeyError(f"{PAPERS_FILE.name} has no table {name!r}; known: {', '.join(sorted(self.tables))}")
        return self.tables[name]


def _value(key: str, entry: Mapping[str, Any], reference: str) -> PaperValue:
    missing = [name for name in ("quantity", "paper", "source") if name not in entry]
    if missing:
        raise ValueError(f"{PAPERS_FILE.name}: {reference}.{key} lacks {', '.join(missing)}")
    numbers = {name: float(entry[name]) for name in ("value", "low", "high") if entry.get(name) is not None}
    return PaperValue(key, str(entry["quantity"]), str(entry["paper"]), str(entry["source"]), **numbers)


def _reference(name: str, entry: Mapping[str, Any]) -> PaperReference:
    values = {key: _value(key, item, name) for key, item in (entry.get("values") or {}).items()}
    roles = {role: tuple(str(label) for label in labels) for role, labels in (entry.get("roles") or {}).items()}
    return PaperReference(name, str(entry.get("title", name)), values, roles, dict(entry.get("notes") or {}))


def _table(name: str, entry: Mapping[str, Any]) -> PaperTable:
    columns = list(entry["columns"])
    rows = []
    for row in entry["rows"]:
        if len(row) != len(columns):
            raise ValueError(f"{PAPERS_FILE.name}: table {name} has a row of {len(row)} cells for "
                             f"{len(columns)} columns: {row}")
        rows.append(dict(zip(columns, row, strict=True)))
    return PaperTable(name, str(entry["source"]), tuple(rows))


def load_papers(path: str | Path | None = None) -> Papers:
    """Read and check the data file (`path`, or the shipped one)."""
    import yaml

    text = papers_text() if path is None else Path(path).read_text(encoding="utf-8")
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return Papers(references={name: _reference(name, entry) for name, entry in data["references"].items()},
                  tables={name: _table(name, entry) for name, entry in data["tables"].items()},
                  seeds=dict(data.get("seeds") or {}))


def paper_table(name: str) -> PaperTable:
    return load_papers().table(name)
