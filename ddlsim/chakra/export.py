"""A captured program as Chakra execution traces: one ``<name>.<rank>.et`` file per rank.

Every rank's file holds the records of the captured rank that stands for it (its pipeline
stage's), in program order, as Chakra nodes, with that rank's own groups and peers:

- compute -> ``COMP_NODE`` with ``num_ops`` (FLOPs; for ops of no FLOPs, such as copies and
  elementwise ops, one operation per element moved), ``tensor_size`` (bytes read + written) and
  ``op_type`` (the torch op), which ASTRA-sim's roofline prices; given a compute model, also
  ``duration_micros``: the op's time as ddlsim prices it on that model's device, which
  ASTRA-sim replays when its roofline is off;
- a collective -> ``COMM_COLL_NODE`` with ``comm_type``, ``comm_size`` (Chakra's convention:
  `schema.chakra_comm_size`) and ``pg_name``: the id of the rank's own group, numbered from 1
  (`schema.GroupIds`; ``comm_group.json`` beside the files maps ids to ranks);
- a point-to-point send or receive -> ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` with
  ``comm_src``, ``comm_dst`` (the rank's own peer), ``comm_size`` and ``comm_tag`` (the
  exchange's sequence number between the two ranks, the same on both sides);
- dependencies: the record's own waits as ``data_deps``, the previous node of the same stream as a
  ``ctrl_deps`` (streams run in order).

Each node also carries its captured record as JSON (``ddlsim.record``) and each file's
GlobalMetadata the program's metadata, so that `load.load_chakra` rebuilds the program exactly.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddlsim.capture.graph import OP_KEY_COLUMNS
from ddlsim.capture.pricing import TIMED_OP, SegmentPricer
from ddlsim.chakra.protoio import write_message, write_serialized
from ddlsim.chakra.schema import (
    CAPTURED_RANK_ATTR,
    COMM_TYPES,
    ET,
    METADATA_ATTR,
    RECORD_ATTR,
    SCHEMA_VERSION,
    GroupIds,
    chakra_comm_size,
    compute_ops,
)
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import GroupLayout

MICROSECONDS = 1e6


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


def group_of(record: dict[str, Any], rank: int, captured: int, world: int) -> tuple[int, ...]:
    """The ranks of `rank`'s group for a collective that captured rank `captured` recorded: the group
    of the same layout that holds `rank`, or, where the captured group is not one of a regular
    tiling, the captured group moved by ``rank - captured``."""
    size, stride, num_ranks = int(record["group_size"]), int(record["group_stride"]), int(record["group_num_ranks"])
    first = int(record["group_first_rank"])
    captured_group = tuple(first + member * stride for member in range(size))
    if record["group_regular"] and max(rank, captured) < num_ranks:
        layout = GroupLayout(size, stride, num_ranks)
        if layout.ranks(layout.position(captured)[0]) == captured_group:
            return layout.ranks(layout.position(rank)[0])
    return tuple(sorted((member + rank - captured) % world for member in captured_group))


class _Template:
    """One record's node, built once per captured rank; a collective's group or a send's peer is
    set per rank before the node is written."""

    def __init__(self, record: dict[str, Any], node: Any, rank_attr: Any | None) -> None:
        self.record, self.node, self.rank_attr = record, node, rank_attr
        self.fixed = None if rank_attr is not None else node.SerializeToString()


def _templates(events: pd.DataFrame, pricer: SegmentPricer | None) -> list[_Template]:
    templates, last_on_stream, exchanges = [], {}, Counter()
    columns = list(events.columns)
    for row in events.itertuples(index=False):
        record = {column: _plain(value) for column, value in zip(columns, row, strict=True)}
        node = ET.Node(id=int(record["index"]), name=f"{record['op']}:{record['module'] or 'step'}")
        rank_attr = None
        if record["kind"] == "compute":
            node.type = ET.COMP_NODE
            moved = int(record["read_bytes"]) + int(record["write_bytes"])
            if record["op"] == TIMED_OP:  # a foreign node of a duration only (load.py): its duration
                node.duration_micros = round(record["flop"] * MICROSECONDS)
            else:
                node.attr.add(name="num_ops", int64_val=compute_ops(record["flop"], moved, record["dtype"]))
                if pricer is not None:
                    key = tuple(record[column] for column in OP_KEY_COLUMNS)
                    node.duration_micros = round(pricer.price([key]).time_s * MICROSECONDS)
            node.attr.add(name="tensor_size", uint64_val=moved)
            node.attr.add(name="op_type", string_val=str(record["torch_op"] or record["op"]))
        elif record["op"] == "send_recv":
            receives = bool(record["receives"])
            node.type = ET.COMM_RECV_NODE if receives else ET.COMM_SEND_NODE
            node.attr.add(name="comm_size", int64_val=int(record["size_bytes"]))
            rank_attr = node.attr.add(name="comm_src" if receives else "comm_dst", int32_val=int(record["peer"]))
            key = (int(record["peer"]), receives)
            node.attr.add(name="comm_tag", int32_val=exchanges[key])
            exchanges[key] += 1
        elif record["op"] in COMM_TYPES:
            node.type = ET.COMM_COLL_NODE
            node.attr.add(name="comm_type", int64_val=ET.CollectiveCommType.Value(COMM_TYPES[record["op"]]))
            node.attr.add(name="comm_size", int64_val=chakra_comm_size(record["op"], int(record["size_bytes"]),
                                                                      int(record["group_size"])))
            rank_attr = node.attr.add(name="pg_name", string_val="")
        else:
            raise ConfigError("chakra.export", record["op"], "has no Chakra node type")
        node.attr.add(name="is_cpu_op", bool_val=False)
        node.attr.add(name=RECORD_ATTR, string_val=json.dumps(record, sort_keys=True))
        node.data_deps.extend(int(dep) for dep in record["deps"])
        previous = last_on_stream.get(record["stream"])
        if previous is not None and previous not in record["deps"]:
            node.ctrl_deps.append(previous)
        last_on_stream[record["stream"]] = int(record["index"])
        templates.append(_Template(record, node, rank_attr))
    return templates


def _rank_bytes(template: _Template, rank: int, captured: int, world: int, groups: GroupIds) -> bytes:
    if template.fixed is not None:
        return template.fixed
    record = template.record
    if record["op"] == "send_recv":
        template.rank_attr.int32_val = (int(record["peer"]) + rank - captured) % world
    else:
        template.rank_attr.string_val = groups.id_of(group_of(record, rank, captured, world))
    return template.node.SerializeToString()


def write_chakra(program: Any, directory: str | Path, *, ranks: str = "all", compute: Any = None) -> list[Path]:
    """Write `program` as Chakra ETs into `directory`, with ``comm_group.json``: every rank
    (``ranks="all"``, what ASTRA-sim runs) or only the captured ranks (``"captured"``). With
    `compute` (a `ddlsim.compute.ComputeModel`), compute nodes carry their priced durations too.
    Returns the ET files written."""
    if ranks not in ("all", "captured"):
        raise ConfigError("ranks", ranks, "must be 'all' or 'captured'")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    metadata = json.dumps(program.metadata() | {"replays": []}, sort_keys=True)
    pricer = None if compute is None else SegmentPricer(compute)
    templates = {rank: _templates(program.rank_events(rank), pricer) for rank in program.ranks}
    world, groups, written = program.num_ranks, GroupIds(), []
    for rank in (range(world) if ranks == "all" else sorted(program.ranks)):
        captured = captured_rank_of(program, rank)
        header = ET.GlobalMetadata(version=SCHEMA_VERSION)
        header.attr.add(name=METADATA_ATTR, string_val=metadata)
        header.attr.add(name=CAPTURED_RANK_ATTR, int64_val=captured)
        path = directory / f"{program.name}.{rank}.et"
        with path.open("wb") as handle:
            write_message(handle, header)
            for template in templates[captured]:
                write_serialized(handle, _rank_bytes(template, rank, captured, world, groups))
        written.append(path)
    groups.write(directory)
    return written

