"""One capture per process for a sweep: `CaptureCache`, keyed by the capture's definition.

A sweep over fabrics (``ddlsim -m model=program model.entry=... fabric=ramp,superpod``) prices
the same program many times; with the in-process launcher every job of one process reuses the
first job's capture. The key is the `ProgramModel`'s definition (entry, mesh, build options,
warm-up, or the saved file with its modification time), so changing any of them captures again.
`CAPTURES.clear()` forgets everything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import Any


class CaptureCache:
    """Captured programs by definition; `get(key, make)` captures once, `clear()` forgets them."""

    def __init__(self, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._programs: dict[Hashable, Any] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        program = self._programs.get(key)
        if program is not None:
            self.hits += 1
            return program
        self.misses += 1
        program = make()
        if len(self._programs) >= self.max_entries:
            self._programs.pop(next(iter(self._programs)))
        self._programs[key] = program
        return program

    def clear(self) -> None:
        self._programs.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._programs)


def file_key(path: str) -> tuple[str, float]:
    """A saved capture's identity: its absolute path and modification time."""
    absolute = os.path.abspath(path)
    return absolute, os.path.getmtime(absolute) if os.path.exists(absolute) else 0.0


CAPTURES = CaptureCache()
