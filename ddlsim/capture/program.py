"""`CapturedProgram`: what one captured training step did, per captured rank, as tables.

    program.collectives   one row per collective call (consecutive identical calls merged, `count`)
    program.compute       one row per kernel-launching aten op
    program.events        both, in program order, with streams and dependencies (what `simulate` uses)
    program.replays       replicated pipeline chunks (``capture(..., replicate=True)``): record ranges
                          that repeat recorded ones; `full_events()` writes them out
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

import numpy as np
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
from ddlsim.core.errors import ConfigError, debug_cause

METADATA_KEY = b"ddlsim.capture"
MERGE_KEYS = ("rank", "op", "size_bytes", "group_size", "group_stride", "group_num_ranks", "group_label", "phase",
              "module", "dtype", "torch_op", "root", "peer", "receives")
REPLAY_COLUMNS = ("rank", "index", "template", "length", "deps")


def records_frame(rank: int, records: Sequence[OpRecord]) -> pd.DataFrame:
    getter = attrgetter(*RECORD_COLUMNS)
    frame = pd.DataFrame([getter(record) for record in records], columns=list(RECORD_COLUMNS))
    frame.insert(0, "rank", rank)
    return frame


def replays_frame(rank: int, replays: Sequence[Any]) -> pd.DataFrame:
    """One row per `replicate.Replay` of `rank` (none: an empty frame with the columns)."""
    return pd.DataFrame([(rank, replay.index, replay.template, replay.length, replay.deps) for replay in replays],
                        columns=list(REPLAY_COLUMNS))


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
    replays: pd.DataFrame = field(default_factory=lambda: replays_frame(0, []))

    @property
    def num_ranks(self) -> int:
        return math.prod(self.mesh_shape)

    @property
    def num_records(self) -> int:
        """Records of the whole step, replicated ones included."""
        return len(self.events) + int(self.replays.length.sum())

    def multiplicity(self) -> np.ndarray:
        """How often each row of `events` occurs in the whole step (1 + the replays that repeat it)."""
        counts = np.ones(len(self.events), dtype=np.int64)
        for rank, replays in self.replays.groupby("rank", sort=False):
            positions = np.flatnonzero(self.events["rank"].to_numpy() == rank)
            indices = self.events["index"].to_numpy()[positions]
            change = np.zeros(len(positions) + 1, dtype=np.int64)
            starts = np.searchsorted(indices, replays.template.to_numpy())
            np.add.at(change, starts, 1)
            np.add.at(change, starts + replays.length.to_numpy(), -1)
            counts[positions] += np.cumsum(change[:-1])
        return counts

    def full_events(self, rank: int | None = None) -> pd.DataFrame:
        """`events` with every replicated chunk written out (its own indices and dependencies), in
        program order; one captured rank if `rank` is given."""
        ranks = self.ranks if rank is None else (rank,)
        frames = []
        for each in ranks:
            mine = self.events["rank"].to_numpy() == each
            positions = np.flatnonzero(mine)
            replays = self.replays[self.replays["rank"] == each].sort_values("index")
            if replays.empty:
                frames.append(self.events.iloc[positions])
                continue
            indices = self.events["index"].to_numpy()[positions]
            order, new_index, new_deps = [], [], []
            cursor = 0
            for replay in replays.itertuples(index=False):
                stop = int(np.searchsorted(indices, replay.index))
                order.append(positions[cursor:stop])
                new_index.append(indices[cursor:stop])
                new_deps.extend(self.events["deps"].iloc[positions[cursor:stop]])
                cursor = stop
                first = int(np.searchsorted(indices, replay.template))
                order.append(positions[first:first + replay.length])
                new_index.append(np.arange(replay.index, replay.index + replay.length))
                waits = dict(replay.deps)
                new_deps.extend(tuple(waits.get(offset, ())) for offset in range(replay.length))
            order.append(positions[cursor:])
            new_index.append(indices[cursor:])
            new_deps.extend(self.events["deps"].iloc[positions[cursor:]])
            frame = self.events.iloc[np.concatenate(order)].copy()
            frame["index"] = np.concatenate(new_index)
            frame["deps"] = new_deps
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else self.events.iloc[:0]

    @property
    def compute(self) -> pd.DataFrame:
        events = self.full_events() if len(self.replays) else self.events
        rows = events[events.kind == COMPUTE]
        return rows.loc[:, ["rank", *COMPUTE_COLUMNS]].reset_index(drop=True)

    @property
    def collectives(self) -> pd.DataFrame:
        events = self.full_events() if len(self.replays) else self.events
        rows = events.loc[events.kind == COLLECTIVE, ["rank", *COLLECTIVE_COLUMNS]]
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
        events = self.events.assign(calls=self.multiplicity())
        rows = events[(events.kind == COLLECTIVE) & ~events.receives.astype(bool)]
        rows = rows[rows["rank"] == (self.ranks[0] if rank is None else rank)]
        rows = rows.assign(total_bytes=rows.size_bytes * rows.calls)
        grouped = rows.groupby(list(by), sort=True)
        return grouped.agg(count=("calls", "sum"), total_bytes=("total_bytes", "sum")).reset_index()

    def total_bytes(self, op: str, rank: int | None = None) -> int:
        """Bytes (size_bytes summed over calls) of every `op` collective one captured rank issued."""
        selected = ((self.events.kind == COLLECTIVE) & (self.events.op == op)
                    & (self.events["rank"] == (self.ranks[0] if rank is None else rank))).to_numpy()
        return int((self.events.size_bytes.to_numpy()[selected] * self.multiplicity()[selected]).sum())

    @property
    def peak_memory_bytes(self) -> dict[int, int]:
        """Per captured rank, the highest live tensor bytes of the step (`values.py`); empty for a
        capture saved without memory tracking."""
        if "live_bytes" not in self.events.columns:
            return {}
        peaks = self.events.groupby("rank", sort=True)["live_bytes"].max()
        return {int(rank): int(peak) for rank, peak in peaks.items()}

    def rank_events(self, rank: int) -> pd.DataFrame:
        """One captured rank's records of the whole step (replicated chunks written out)."""
        return self.full_events(rank).reset_index(drop=True)

    # ---- files ---------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        return {"name": self.name, "mesh_shape": list(self.mesh_shape), "mesh_dim_names": list(self.mesh_dim_names),
                "ranks": list(self.ranks), "stages": list(self.stages), "options": self.options,
                "capture_time_s": None if math.isnan(self.capture_time_s) else self.capture_time_s,
                "replays": [[int(row.rank), int(row.index), int(row.template), int(row.length),
                             [[int(offset), [int(dep) for dep in deps]] for offset, deps in row.deps]]
                            for row in self.replays.itertuples(index=False)]}

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
        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ConfigError("capture", str(path), f"is not a readable Parquet capture ({first_line})"
                              ).keep_cause(error) from debug_cause(error)
        raw = (table.schema.metadata or {}).get(METADATA_KEY)
        if raw is None:
            raise ConfigError("capture", str(path), "is not a ddlsim capture (no capture metadata in the file)")
        return cls.from_metadata(json.loads(raw), table.to_pandas())

    @classmethod
    def from_metadata(cls, meta: dict[str, Any], events: pd.DataFrame) -> CapturedProgram:
        """The program `metadata()` describes, with `events` as read back from a file (list-valued
        columns become tuples again); `load` and the Chakra reader share it."""
        for column in ("deps", *VALUE_FIELDS):
            if column in events.columns:
                events[column] = [tuple(int(item) for item in items) for items in events[column]]
        capture_time = meta.get("capture_time_s")
        replays = pd.DataFrame([(rank, index, template, length, tuple((offset, tuple(deps)) for offset, deps in waits))
                                for rank, index, template, length, waits in meta.get("replays", [])],
                               columns=list(REPLAY_COLUMNS))
        return cls(name=meta["name"], mesh_shape=tuple(meta["mesh_shape"]),
                   mesh_dim_names=tuple(meta["mesh_dim_names"]),
                   ranks=tuple(meta["ranks"]), events=events, stages=tuple(meta.get("stages", ())),
                   options=meta.get("options", {}), capture_time_s=math.nan if capture_time is None else capture_time,
                   replays=replays)
