"""Caches with one owner each, and `clear_caches()`, which empties them all.

A cache belongs to the object whose answers it keeps: an estimator (`ComputeModel`, a model's
kernel byte counts) holds a `Memo` of its own, which lives and dies with it. Values that depend
on their key alone (a profile file's rows, a named image model's parameter count, a Hugging Face
config's shapes, the display table) are kept by the process's `PROCESS_CACHES`, one object with
one `Memo` per kind of value. Keys are the frozen records themselves (a `ComputeTask`, a
`ShardSignature`, a `FileStamp`) or a function's own arguments, never fields picked by hand, so a
field added to a record can never be left out of a key.

`clear_caches()` (also ``ddlsim.clear_caches``) empties every `Memo` alive in the process and the
network room's caches (`ddlsim.network.clear_caches`) when that room is loaded. Prices never
depend on what a cache holds: a cleared cache only makes the next call slower.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_LIVE: weakref.WeakSet[Memo] = weakref.WeakSet()  # every Memo, so that one call clears them all
_MISSING = object()


class Memo:
    """Computed values by key, for one owner; the oldest entry goes first beyond `maxsize`.

    ``memo.get(key)`` is the dict's own lookup (None when absent), ``memo.put(key, value)``
    stores and returns `value`; ``memo.get_or_make(key, make)`` does both for values that may
    be None.
    """

    def __init__(self, name: str, maxsize: int | None = None) -> None:
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"maxsize of cache {name!r} must be >= 1 or None, got {maxsize}")
        self.name = name
        self.maxsize = maxsize
        self._values: dict[Hashable, Any] = {}
        self.get = self._values.get  # the hot path stays a plain dict lookup
        _LIVE.add(self)

    def put(self, key: Hashable, value: Any) -> Any:
        values = self._values
        values[key] = value
        if self.maxsize is not None and len(values) > self.maxsize:
            del values[next(iter(values))]
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        value = self._values.get(key, _MISSING)
        return self.put(key, make()) if value is _MISSING else value

    def clear(self) -> None:
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Memo({self.name!r}, {len(self)} entries)"


class ProcessCaches:
    """The caches of values that depend on their key alone: one `Memo` per kind, one owner per process."""

    def __init__(self) -> None:
        self._memos: dict[str, Memo] = {}

    def memo(self, name: str, maxsize: int | None = None) -> Memo:
        memo = self._memos.get(name)
        if memo is None:
            memo = self._memos[name] = Memo(name, maxsize)
        return memo

    def sizes(self) -> dict[str, int]:
        return {name: len(memo) for name, memo in sorted(self._memos.items())}

    def clear(self, prefix: str = "") -> None:
        """Empty every memo (or those whose name starts with `prefix`, e.g. ``"network."``)."""
        for name, memo in self._memos.items():
            if name.startswith(prefix):
                memo.clear()


PROCESS_CACHES = ProcessCaches()


@dataclass(frozen=True)
class FileStamp:
    """A file as a cache key: its path, size and modification time, so an edited file is re-read."""

    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> FileStamp:
        status = Path(path).stat()
        return cls(str(path), status.st_size, status.st_mtime_ns)


def live_caches() -> list[Memo]:
    """Every `Memo` alive in this process (per-estimator ones included)."""
    return sorted(_LIVE, key=lambda memo: memo.name)


def clear_caches() -> None:
    """Empty every cache of the process: every live `Memo`, the network room's caches and the captures."""
    for memo in list(_LIVE):
        memo.clear()
    network = sys.modules.get("ddlsim.network")
    if network is not None:  # not loaded: its caches are empty
        network.clear_caches()
    captures = sys.modules.get("ddlsim.capture.cache")
    if captures is not None:
        captures.CAPTURES.clear()
