"""The profile file: ``profiles/<device-slug>/<model_kind>.csv``, one row per (shard, phase).

A row is keyed by the shard signature's key, the phase and the device name. Rows are written
sorted, so the same measurements give the same file; an existing row is replaced only when the
caller asks (``replace=True``).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ddlsim.compute.identity import device_slug
from ddlsim.core.errors import ConfigError
from ddlsim.core.files import atomic_write
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ShardSignature

COLUMNS: tuple[str, ...] = (
    "signature_key", "model_kind", "shape", "local_batch", "precision", "checkpointing", "phase", "device",
    "time_s", "statistic", "time_median_s", "time_min_s", "time_mean_s", "time_std_s", "wall_time_s", "kernels",
    "counted_flop", "counted_bytes", "achieved_flop_per_s", "task_flop", "task_memory_bytes",
    "run_precision", "iterations", "warmup", "torch_version", "cuda_version", "date",
)
_PHASE_RANK = {phase.value: rank for rank, phase in enumerate(
    (Phase.FORWARD, Phase.RECOMPUTE, Phase.BACKWARD, Phase.OPTIMIZER))}

Row = dict[str, str]


@dataclass(frozen=True)
class ProfileRow:
    """One measured (shard, phase) on one device, as the store uses it."""

    signature: ShardSignature
    phase: Phase
    device: str
    time_s: float
    flop: float           # the workload's FLOPs for this task when known, else the counted ones
    memory_bytes: float   # likewise for bytes
    kernels: int

    @property
    def key(self) -> tuple[str, str]:
        return self.signature.key(), self.phase.value


def profile_path(root: str | os.PathLike[str], device_name: str, model_kind: str) -> Path:
    return Path(root) / device_slug(device_name) / f"{device_slug(model_kind)}.csv"


def encode_shape(signature: ShardSignature) -> str:
    return ";".join(f"{name}={value}" for name, value in signature.shape)


def decode_signature(row: Mapping[str, str]) -> ShardSignature:
    shape = []
    for item in filter(None, row["shape"].split(";")):
        name, _, value = item.partition("=")
        shape.append((name, int(value)))
    return ShardSignature(model_kind=row["model_kind"], shape=tuple(shape), local_batch=int(row["local_batch"]),
                          precision=Precision(row["precision"]), checkpointing=row["checkpointing"] == "true")


def parse_signature_key(key: str) -> ShardSignature:
    """The inverse of `ShardSignature.key()`: ``kind|a=1,b=2|b=8|fp16|ckpt``."""
    parts = key.split("|")
    if len(parts) != 5 or not parts[2].startswith("b=") or parts[4] not in ("ckpt", "nockpt"):
        raise ConfigError("signature", key, "must read kind|name=value,...|b=<local batch>|<precision>|ckpt or nockpt")
    try:
        shape = tuple((name, int(value)) for name, _, value in
                      (item.partition("=") for item in filter(None, parts[1].split(","))))
        return ShardSignature(model_kind=parts[0], shape=shape, local_batch=int(parts[2][2:]),
                              precision=Precision(parts[3]), checkpointing=parts[4] == "ckpt")
    except ValueError as error:
        raise ConfigError("signature", key, f"does not parse: {error}") from None


def format_number(value: float | int | None) -> str:
    """Shortest exact text for a number (repr of a float round-trips); empty for None."""
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ConfigError("value", value, "profile numbers must be finite")
    return repr(float(value))


def _sort_key(row: Row) -> tuple[str, int, str]:
    return row["signature_key"], _PHASE_RANK.get(row["phase"], len(_PHASE_RANK)), row["device"]


def _row_key(row: Row) -> tuple[str, str, str]:
    return row["signature_key"], row["phase"], row["device"]


def read_rows(path: str | os.PathLike[str]) -> list[Row]:
    """The raw rows of a profile file; a missing file has none."""
    path = Path(path)
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in ("signature_key", "phase", "device", "time_s")
                   if column not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError("profile", str(path), f"is not a ddlsim profile: columns {missing} are missing")
        return list(reader)


def parse_row(row: Mapping[str, str], path: str | os.PathLike[str] = "") -> ProfileRow:
    try:
        signature = decode_signature(row)
        counted_flop, counted_bytes = float(row["counted_flop"] or 0), float(row["counted_bytes"] or 0)
        flop = float(row["task_flop"]) if row.get("task_flop") else counted_flop
        memory_bytes = float(row["task_memory_bytes"]) if row.get("task_memory_bytes") else counted_bytes
        return ProfileRow(signature=signature, phase=Phase(row["phase"]), device=row["device"],
                          time_s=float(row["time_s"]), flop=flop, memory_bytes=memory_bytes,
                          kernels=int(row.get("kernels") or 0))
    except (KeyError, ValueError) as error:
        raise ConfigError("profile", str(path), f"has a malformed row {dict(row)!r}: {error}") from None


@dataclass(frozen=True)
class WriteReport:
    path: Path
    added: int
    replaced: int
    kept: int


def merge_rows(existing: Sequence[Row], new: Iterable[Row], *, replace: bool) -> tuple[list[Row], int, int, int]:
    """Existing rows plus new ones; a new row with an existing key wins only if `replace`."""
    merged = {_row_key(row): row for row in existing}
    added = replaced = kept = 0
    for row in new:
        key = _row_key(row)
        if key not in merged:
            added += 1
        elif replace:
            replaced += 1
        else:
            kept += 1
            continue
        merged[key] = row
    return sorted(merged.values(), key=_sort_key), added, replaced, kept


def write_rows(path: str | os.PathLike[str], new: Iterable[Row], *, replace: bool = False) -> WriteReport:
    """Merge `new` into the file at `path` (atomically: a crash never leaves half a file)."""
    path = Path(path)
    rows, added, replaced, kept = merge_rows(read_rows(path), new, replace=replace)

    def write(target: str) -> None:
        with open(target, "w", newline="", encoding="utf-8") as stream:
            writer = csv.DictWriter(stream, fieldnames=COLUMNS, extrasaction="raise", lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow({column: row.get(column, "") for column in COLUMNS})

    atomic_write(path, write)
    return WriteReport(path=path, added=added, replaced=replaced, kept=kept)
