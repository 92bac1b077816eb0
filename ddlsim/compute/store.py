"""The profile store: measured rows of one device, looked up by shard signature and phase.

The store reads ``<dir>/<device-slug>/*.csv`` from each profile directory, in order (an earlier
directory wins when two hold the same key), and only for its own device: a row whose device
column names another device is an error, never a silent substitute. Each file is parsed once
per process (cached by path, size and modification time), so a sweep that builds many stores
reads each CSV once, and a file re-written by the profiler is read again.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from ddlsim.compute.identity import device_slug
from ddlsim.compute.profile_file import ProfileRow, parse_row, read_rows
from ddlsim.errors import ConfigError
from ddlsim.types import Phase, ShardSignature

KindKey = tuple[str, Phase, str, bool]  # model_kind, phase, precision, checkpointing


@functools.lru_cache(maxsize=512)
def _load_file(path: str, size: int, mtime_ns: int) -> tuple[ProfileRow, ...]:
    del size, mtime_ns  # part of the cache key only
    return tuple(parse_row(row, path) for row in read_rows(path))


def load_file(path: Path) -> tuple[ProfileRow, ...]:
    status = path.stat()
    return _load_file(str(path), status.st_size, status.st_mtime_ns)


def work_size(flop: float, memory_bytes: float) -> float:
    """What "nearest shape" compares: FLOPs, or bytes for work without FLOPs (optimizer steps)."""
    return flop if flop > 0 else memory_bytes


def _kind_key(signature: ShardSignature, phase: Phase) -> KindKey:
    return signature.model_kind, Phase(phase), signature.precision.value, signature.checkpointing


class ProfileStore:
    """Every measured row of device `device_name` found under `directories`."""

    def __init__(self, directories: Sequence[str | os.PathLike[str]], device_name: str) -> None:
        self.directories = tuple(Path(directory) for directory in directories)
        self.device_name = device_name
        self.files: list[Path] = []
        self._exact: dict[tuple[str, str], ProfileRow] = {}
        self._by_kind: dict[KindKey, list[ProfileRow]] = defaultdict(list)
        self._sorted: dict[KindKey, tuple[list[float], list[ProfileRow]]] = {}
        for directory in self.directories:
            device_dir = directory / device_slug(device_name)
            if device_dir.is_dir():
                for path in sorted(device_dir.glob("*.csv")):
                    self._add_file(path)

    def _add_file(self, path: Path) -> None:
        self.files.append(path)
        for row in load_file(path):
            if row.device != self.device_name:
                raise ConfigError("profile", str(path), f"holds a row measured on {row.device!r}, not on "
                                  f"{self.device_name!r}; profiles of one device must not be mixed with another's")
            if row.key in self._exact:
                continue  # an earlier directory already has this key
            self._exact[row.key] = row
            self._by_kind[_kind_key(row.signature, row.phase)].append(row)

    def __len__(self) -> int:
        return len(self._exact)

    def exact(self, signature: ShardSignature, phase: Phase | str) -> ProfileRow | None:
        return self._exact.get((signature.key(), Phase(phase).value))

    def nearest(self, signature: ShardSignature, phase: Phase | str, flop: float,
                memory_bytes: float) -> ProfileRow | None:
        """The measured row of the same kind, phase, precision and checkpointing whose work is
        closest to (`flop`, `memory_bytes`) on a log scale; ties go to the smaller signature key."""
        size = work_size(flop, memory_bytes)
        if size <= 0:
            return None
        logs, rows = self._sorted_rows(_kind_key(signature, Phase(phase)))
        if not rows:
            return None
        target = math.log(size)
        index = bisect.bisect_left(logs, target)
        best = min(abs(logs[i] - target) for i in (index - 1, index) if 0 <= i < len(logs))
        # Every row at that distance sits at one or two runs of equal sizes around `index`.
        low = bisect.bisect_left(logs, target - best - 1e-12)
        high = bisect.bisect_right(logs, target + best + 1e-12)
        return min((rows[i] for i in range(low, high) if abs(abs(logs[i] - target) - best) <= 1e-12),
                   key=lambda row: row.signature.key())

    def _sorted_rows(self, kind: KindKey) -> tuple[list[float], list[ProfileRow]]:
        index = self._sorted.get(kind)
        if index is None:
            rows = sorted((row for row in self._by_kind.get(kind, ()) if work_size(row.flop, row.memory_bytes) > 0),
                          key=lambda row: (work_size(row.flop, row.memory_bytes), row.signature.key()))
            index = self._sorted[kind] = ([math.log(work_size(row.flop, row.memory_bytes)) for row in rows], rows)
        return index
