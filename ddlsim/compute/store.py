"""The profile store: measured rows of one device, looked up by shard signature and phase.

The store reads ``<dir>/<device-slug>/*.csv`` from each profile directory, in order (an earlier
directory wins when two hold the same key), and only for its own device: a row whose device
column names another device is an error, never a silent substitute. Each file is parsed once
per process (cached by path, size and modification time), so a sweep that builds many stores
reads each CSV once, and a file re-written by the profiler is read again.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ddlsim.compute.identity import device_slug
from ddlsim.compute.profile_file import ProfileRow, parse_row, read_rows
from ddlsim.core.caches import PROCESS_CACHES, FileStamp
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase
from ddlsim.core.work import ShardSignature

KindKey = tuple[str, Phase, str, bool]  # model_kind, phase, precision, checkpointing


def load_file(path: Path) -> tuple[ProfileRow, ...]:
    """The parsed rows of one profile file, read once per process and version of the file."""
    stamp = FileStamp.of(path)
    return PROCESS_CACHES.memo("profile files", maxsize=512).get_or_make(
        stamp, lambda: tuple(parse_row(row, stamp.path) for row in read_rows(stamp.path)))


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
        self._index: dict[KindKey, tuple[list[str], np.ndarray, list[ProfileRow]]] = {}
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
        """The measured row of the same kind, phase, precision and checkpointing whose shape is
        nearest to `signature`'s (see `shape_distance`); ties go to the row whose work is closer to
        (`flop`, `memory_bytes`) on a log scale, then to the smaller signature key."""
        size = work_size(flop, memory_bytes)
        if size <= 0:
            return None
        index = self._kind_index(_kind_key(signature, Phase(phase)))
        if index is None:
            return None
        names, coordinates, rows = index
        distances = np.abs(coordinates - _coordinates(signature, names)).sum(axis=1)
        best = distances.min()
        tied = [rows[i] for i in np.flatnonzero(distances <= best + 1e-9)]
        return min(tied, key=lambda row: (round(abs(math.log(work_size(row.flop, row.memory_bytes) / size)), 9),
                                          row.signature.key()))

    def _kind_index(self, kind: KindKey) -> tuple[list[str], np.ndarray, list[ProfileRow]] | None:
        index = self._index.get(kind)
        if index is None:
            rows = [row for row in self._by_kind.get(kind, ()) if work_size(row.flop, row.memory_bytes) > 0]
            if not rows:
                return None
            names = sorted({name for row in rows for name, _ in row.signature.shape})
            coordinates = np.array([_coordinates(row.signature, names) for row in rows])
            index = self._index[kind] = (names, coordinates, rows)
        return index


def _coordinates(signature: ShardSignature, names: list[str]) -> np.ndarray:
    shape = signature.shape_dict
    return np.log1p([max(shape.get(name, 0), 0) for name in names] + [signature.local_batch])


def shape_distance(a: ShardSignature, b: ShardSignature) -> float:
    """Sum over shape entries and the local batch of |log(1 + a) - log(1 + b)|: 0 for equal
    shapes, about |log 2| per doubled dimension, and a penalty for any differing 0/1 flag."""
    names = sorted({name for name, _ in a.shape} | {name for name, _ in b.shape})
    return float(np.abs(_coordinates(a, names) - _coordinates(b, names)).sum())
