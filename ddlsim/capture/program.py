"""`CapturedProgram`: what one captured training step did, per captured rank, as tables.

    program.collectives   one row per collective call (consecutive identical calls merged, `count`)
    program.compute       one row per kernel-launching aten op
    program.events        both, in program order, with streams and dependencies (what `simulate` uses)
    program.save(path); CapturedProgram.load(path)      one Parquet file

Columns (units in the names): ``op`` (ddlsim collective op, or the aten op), ``size_bytes``
(nccl-tests convention, see docs/capture.md), ``group_size``, ``group_stride`` (the group's
layout in the job's ranks), ``group_num_ranks`` (ranks tiled by such groups), ``count``,
``phase`` (forward, recompute, backward, optimizer), ``module`` (the issuing module's fully
qualified name), ``stream``, ``flop``, ``read_bytes``, ``write_bytes``, ``rank`` (the captured
rank: one per pipeline stage for pipelined programs). The events also carry the values each op
reads and writes (``read_values``, ``read_value_bytes``, ``write_values``,
``write_value_bytes``) and the rank's live tensor bytes (``live_bytes``, `values.py`);
`peak_memory_bytes` is the latter's maximum per rank.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import pandas as pd

from ddlsim.capture.records import (
    COLLECTIVE,
    COLLECTIVE_COLUMNS,
    COMPUTE,
    COMPUTE_COLUMNS,
    RECORD_COLUMNS,
    VALUE_FIELDS,
    OpRecord,
)
from ddlsim.errors import ConfigError

METADATA_KEY = b"ddlsim.capture"
MERGE_KEYS = ("rank", "op", "size_bytes", "group_size", "group_stride", "group_num_ranks", "group_label", "phase",
              "module", "dtype", "torch_op", "root", "peer", "receives")


def records_frame(rank: int, records: Sequence[OpRecord]) -> pd.DataFrame:
    getter = attrgetter(*RECORD_COLUMNS)
    frame = pd.DataFrame([getter(record) for record in records], columns=list(RECORD_COLUMNS))
    frame.insert(0, "rank", rank)
    return frame


@dataclass
class CapturedProgram:
    """One captured training step (see the module docstring)."""

    name: str
    mesh_shape: tuple[int, ...]
    mesh_dim_names: tuple[str, ...]
    ranks: tuple[int, ...]
    events: pd.DataFrame
    stages: tuple[int, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    capture_time_s: float = math.nan

    @property
    def num_ranks(self) -> int:
        return math.prod(self.mesh_shape)

    @property
    def compute(self) -> pd.DataFrame:
        rows = self.events[self.events.kind == COMPUTE]
        return rows.loc[:, ["rank", *COMPUTE_COLUMNS]].reset_index(drop=True)

    @property
    def collectives(self) -> pd.DataFrame:
        rows = self.events.loc[self.events.kind == COLLECTIVE, ["rank", *COLLECTIVE_COLUMNS]]
        if rows.empty:
            return rows.assign(count=pd.Series(dtype="int64")).reset_index(drop=True)
        keys = rows.loc[:, list(MERGE_KEYS)]
        changed = keys.ne(keys.shift()).any(axis=1).cumsum()
        merged = rows.groupby(changed.to_numpy(), sort=False).first()
        merged.insert(merged.columns.get_loc("group_stride") + 1, "count",
                      rows.groupby(changed.to_numpy(), sort=False).size().to_numpy())
        return merged.reset_index(drop=True)

    def collective_summary(self, by: Sequence[str] = ("op", "size_bytes", "group_size", "group_stride", "phase"),
                           rank: int | None = None) -> pd.DataFrame:
        """Calls and bytes grouped by `by` (one captured rank: the first unless `rank` is given)."""
        rows = self.events[(self.events.kind == COLLECTIVE) & ~self.events.receives.astype(bool)]
        rows = rows[rows["rank"] == (self.ranks[0] if rank is None else rank)]
        grouped = rows.groupby(list(by), sort=True)
        return grouped.agg(count=("op", "size"), total_bytes=("size_bytes", "sum")).reset_index()

    def total_bytes(self, op: str, rank: int | None = None) -> int:
        """Bytes (size_bytes summed over calls) of every `op` collective one captured rank issued."""
        rows = self.events[(self.events.kind == COLLECTIVE) & (self.events.op == op)
                           & (self.events["rank"] == (self.ranks[0] if rank is None else rank))]
        return int(rows.size_bytes.sum())

    @property
    def peak_memory_bytes(self) -> dict[int, int]:
        """Per captured rank, the highest live tensor bytes of the step (`values.py`); empty for a
        capture saved without memory tracking."""
        if "live_bytes" not in self.events.columns:
            return {}
        peaks = self.events.groupby("rank", sort=True)["live_bytes"].max()
        return {int(rank): int(peak) for rank, peak in peaks.items()}

    def rank_events(self, rank: int) -> pd.DataFrame:
        return self.events[self.events["rank"] == rank].reset_index(drop=True)

    # ---- files ---------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        return {"name": self.name, "mesh_shape": list(self.mesh_shape), "mesh_dim_names": list(self.mesh_dim_names),
                "ranks": list(self.ranks), "stages": list(self.stages), "options": self.options,
                "capture_time_s": None if math.isnan(self.capture_time_s) else self.capture_time_s}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the capture to one Parquet file (`load` reads it back)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pandas(self.events, preserve_index=False)
        metadata = {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(self.metadata()).encode()}
        pq.write_table(table.replace_schema_metadata(metadata), path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CapturedProgram:
        import pyarrow.parquet as pq

        path = Path(path)
        if not path.is_file():
            raise ConfigError("capture", str(path), "no such file; write one with CapturedProgram.save(path)")
        table = pq.read_table(path)
        raw = (table.schema.metadata or {}).get(METADATA_KEY)
        if raw is None:
            raise ConfigError("capture", str(path), "is not a ddlsim capture (no capture metadata in the file)")
        meta = json.loads(raw)
        events = table.to_pandas()
        for column in ("deps", *VALUE_FIELDS):
            if column in events.columns:
                events[column] = [tuple(int(item) for item in items) for items in events[column]]
        capture_time = meta.get("capture_time_s")
        return cls(name=meta["name"], mesh_shape=tuple(meta["mesh_shape"]),
                   mesh_dim_names=tuple(meta["mesh_dim_names"]),
                   ranks=tuple(meta["ranks"]), events=events, stages=tuple(meta.get("stages", ())),
                   options=meta.get("options", {}), capture_time_s=math.nan if capture_time is None else capture_time)
