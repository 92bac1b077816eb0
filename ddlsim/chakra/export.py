"""A captured program as Chakra execution traces: one ``<name>.<rank>.et`` file per rank.

Every rank's file holds the records of the captured rank that stands for it (its pipeline
stage's), in program order, as Chakra nodes:

- compute -> ``COMP_NODE`` with ``num_ops`` (FLOPs), ``tensor_size`` (bytes read + written) and
  ``op_type`` (the torch op); no duration, so ASTRA-sim's roofline prices it;
- a collective -> ``COMM_COLL_NODE`` with ``comm_type``, ``comm_size`` (bytes per rank, the
  nccl-tests convention) and ``pg_name`` (the process group: mesh dimension label, size, stride);
- a point-to-point send or receive -> ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` with
  ``comm_src``, ``comm_dst`` and ``comm_size``;
- dependencies: the record's own waits as ``data_deps``, the previous node of the same stream as a
  ``ctrl_deps`` (streams run in order).

Each node also carries its whole record as JSON (``ddlsim.record``) and the file's
GlobalMetadata the program's metadata, so that `load.load_chakra` rebuilds the program exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddlsim.chakra.schema import (
    CAPTURED_RANK_ATTR,
    COMM_TYPES,
    METADATA_ATTR,
    RECORD_ATTR,
    SCHEMA_VERSION,
    require_chakra,
)
from ddlsim.errors import ConfigError


def _plain(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (tuple, list, np.ndarray)):
        return [_plain(item) for item in value]
    return value


def captured_rank_of(program: Any, rank: int) -> int:
    """The captured rank whose records `rank` runs (its pipeline stage's; the only one otherwise)."""
    ranks = sorted(program.ranks)
    if len(ranks) == 1:
        return ranks[0]
    inner = ranks[1] - ranks[0]
    return ranks[(rank // inner) % len(ranks)]


def _nodes(et: Any, events: pd.DataFrame) -> list[Any]:
    nodes, last_on_stream = [], {}
    columns = list(events.columns)
    for row in events.itertuples(index=False):
        record = {column: _plain(value) for column, value in zip(columns, row, strict=True)}
        node = et.Node(id=int(record["index"]), name=f"{record['op']}:{record['module'] or 'step'}")
        if record["kind"] == "compute":
            node.type = et.COMP_NODE
            node.attr.add(name="num_ops", int64_val=int(round(record["flop"])))
            node.attr.add(name="tensor_size", uint64_val=int(record["read_bytes"]) + int(record["write_bytes"]))
            node.attr.add(name="op_type", string_val=str(record["op"]))
        elif record["op"] == "send_recv":
            node.type = et.COMM_RECV_NODE if record["receives"] else et.COMM_SEND_NODE
            node.attr.add(name="comm_size", int64_val=int(record["size_bytes"]))
            peer_key = "comm_src" if record["receives"] else "comm_dst"
            node.attr.add(name=peer_key, int32_val=int(record["peer"]))
            node.attr.add(name="comm_tag", int32_val=0)
        elif record["op"] in COMM_TYPES:
            node.type = et.COMM_COLL_NODE
            node.attr.add(name="comm_type", int64_val=getattr(et, COMM_TYPES[record["op"]]))
            node.attr.add(name="comm_size", int64_val=int(record["size_bytes"]))
            node.attr.add(name="pg_name", string_val=f"{record['group_label'] or 'group'}:{record['group_size']}"
                                                     f"x{record['group_stride']}")
        else:
            raise ConfigError("chakra.export", record["op"], "has no Chakra node type")
        node.attr.add(name="is_cpu_op", bool_val=False)
        node.attr.add(name=RECORD_ATTR, string_val=json.dumps(record, sort_keys=True))
        node.data_deps.extend(int(dep) for dep in record["deps"])
        previous = last_on_stream.get(record["stream"])
        if previous is not None and previous not in record["deps"]:
            node.ctrl_deps.append(previous)
        last_on_stream[record["stream"]] = int(record["index"])
        nodes.append(node)
    return nodes


def write_chakra(program: Any, directory: str | Path, *, ranks: str = "all") -> list[Path]:
    """Write `program` as Chakra ETs into `directory`: every rank (``ranks="all"``, what ASTRA-sim
    runs) or only the captured ranks (``"captured"``). Returns the files written."""
    if ranks not in ("all", "captured"):
        raise ConfigError("ranks", ranks, "must be 'all' or 'captured'")
    et, encode, _ = require_chakra()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    metadata = json.dumps(program.metadata() | {"replays": []}, sort_keys=True)
    nodes = {rank: _nodes(et, program.rank_events(rank)) for rank in program.ranks}
    written = []
    for rank in (range(program.num_ranks) if ranks == "all" else sorted(program.ranks)):
        captured = captured_rank_of(program, rank)
        path = directory / f"{program.name}.{rank}.et"
        with path.open("wb") as handle:
            header = et.GlobalMetadata(version=SCHEMA_VERSION)
            header.attr.add(name=METADATA_ATTR, string_val=metadata)
            header.attr.add(name=CAPTURED_RANK_ATTR, int64_val=captured)
            encode(handle, header)
            for node in nodes[captured]:
                encode(handle, node)
        written.append(path)
    return written
