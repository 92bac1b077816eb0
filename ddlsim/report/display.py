"""Display names and fixed colours, read from the one table in ``configs/display.yaml``.

Figures and summaries never spell a fabric, algorithm or operation themselves: they look the
code name (``superpod_sipac``, ``h_ring``, ``all_reduce``) up here and show the readable one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.resources import config_file

DISPLAY_FILE = "display.yaml"
_SEPARATORS = "_- ("


def display_text() -> str:
    """The text of ``display.yaml``, from the shipped configs (`ddlsim.core.resources`)."""
    return config_file(DISPLAY_FILE).read_text(encoding="utf-8")


@dataclass(frozen=True)
class FabricLook:
    """How one fabric appears: its label, colour and marker."""

    key: str
    label: str
    color: str
    marker: str


@dataclass(frozen=True)
class DisplayTable:
    fabrics: dict[str, FabricLook]
    algorithms: dict[str, str] = field(default_factory=dict)
    ops: dict[str, str] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)
    # Every name a fabric goes by (key, alias, label; lower case) -> its key.
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> DisplayTable:
        data: dict[str, Any] = yaml.safe_load(text) or {}
        raw = data.get("fabrics") or {}
        fabrics: dict[str, FabricLook] = {}
        for key, entry in raw.items():
            base = raw[entry["like"]] if "like" in entry else entry
            if "color" not in base and "color" not in entry:
                raise ValueError(f"{DISPLAY_FILE}: fabric {key} has no color and no 'like' entry with one")
            fabrics[key] = FabricLook(key, entry.get("label", key), entry.get("color", base.get("color")),
                                      entry.get("marker", base.get("marker", "o")))
        names: dict[str, str] = {}
        for key, entry in raw.items():
            for name in (key, *(entry.get("aliases") or [])):
                names.setdefault(str(name).lower(), key)
        for key, look in fabrics.items():
            names.setdefault(look.label.lower(), key)
        return cls(fabrics, dict(data.get("algorithms") or {}), dict(data.get("ops") or {}),
                   dict(data.get("columns") or {}), names)

    def fabric(self, label: str) -> FabricLook | None:
        """The fabric a series label names: exactly, or by the longest name it starts with."""
        text = str(label).lower()
        if text in self.names:
            return self.fabrics[self.names[text]]
        best = ""
        for name in self.names:
            if len(name) > len(best) and text.startswith(name) and text[len(name)] in _SEPARATORS:
                best = name
        return self.fabrics[self.names[best]] if best else None

    def series(self, label: str) -> str:
        """A legend entry: a fabric key becomes its label, extra words kept (``ramp #3`` -> ``RAMP #3``);
        an algorithm or op its readable name; anything else (a script's own name) stays."""
        text = str(label)
        head, space, rest = text.partition(" ")
        if head in self.fabrics:
            return f"{self.fabrics[head].label}{space}{rest}"
        return self.algorithms.get(text) or self.ops.get(text) or text

    def algorithm(self, name: str) -> str:
        """``h_ring`` -> ``hierarchical ring``; ``best(exclude=direct)`` keeps its brackets."""
        head, bracket, rest = str(name).partition("(")
        return self.algorithms.get(head, head) + (f" ({rest.rstrip(')')})" if bracket else "")

    def op(self, name: str) -> str:
        return self.ops.get(str(name), str(name))

    def column(self, name: str) -> str:
        return self.columns.get(name, re.sub(r"_(s|bytes|bps|w|j|usd)$", "", name).replace("_", " "))


def display_table() -> DisplayTable:
    """The display table, read once per process."""
    return PROCESS_CACHES.memo("display table", maxsize=1).get_or_make(
        DISPLAY_FILE, lambda: DisplayTable.parse(display_text()))
