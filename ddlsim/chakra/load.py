"""Chakra execution traces as a `CapturedProgram`, priced like any capture (``model=chakra``).

Files: a directory (every ``*.et`` in it) or a glob; a file's rank is the number before ``.et``
(``name.<rank>.et``, Chakra's naming), and the ranks must be 0..n-1.

- ETs that ddlsim wrote (`export.write_chakra`) carry each record whole: the program comes back
  exactly, so it prices exactly as the capture did. ETs it wrote from an analytic workload
  (`analytic_export`) come back as that workload's iteration graph (`analytic_load`).
- Other ETs (Chakra's generator, its converter of PyTorch host and device traces): one rank of
  each distinct node sequence is kept, as a capture keeps one rank per stage. ``COMP_NODE`` ->
  compute of ``num_ops`` FLOPs and ``tensor_size`` bytes, priced by the device's roofline; one
  with a ``duration_micros`` and neither takes that duration on every device.
  ``COMM_COLL_NODE`` -> the collective of its ``comm_type`` over ``comm_size`` bytes per rank, on
  all ranks; ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` -> a point-to-point exchange with
  ``comm_dst`` / ``comm_src``. ``data_deps`` and ``ctrl_deps`` become the record's waits; each
  file is one stream. ``METADATA_NODE`` carries nothing to price and is dropped; any other node
  type is a one-line error naming the node.
"""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ddlsim.capture.pricing import TIMED_OP, WORK_OP
from ddlsim.capture.program import CapturedProgram, records_frame, replays_frame
from ddlsim.capture.records import COLLECTIVE, COMPUTE, RECORD_COLUMNS, OpRecord
from ddlsim.chakra.schema import (
    ANALYTIC_ATTR,
    CAPTURED_RANK_ATTR,
    COMM_TYPES,
    METADATA_ATTR,
    RECORD_ATTR,
    attribute_value,
    require_chakra,
)
from ddlsim.errors import ConfigError

_RANK = re.compile(r"\.(\d+)\.et$")
_OP_OF_COMM_TYPE = {name: op for op, name in COMM_TYPES.items()}


def trace_files(trace: str, key: str = "trace") -> list[Path]:
    """The ET files of `trace` (a directory or a glob), ordered by rank."""
    path = Path(trace).expanduser()
    files = sorted(path.glob("*.et")) if path.is_dir() else [Path(name) for name in glob.glob(str(path))]
    if not files:
        raise ConfigError(key, trace, "no Chakra ET files (*.et) there; give a directory or a glob")
    ranked = {}
    for file in files:
        match = _RANK.search(file.name)
        if match is None:
            raise ConfigError(key, str(file), "must be named <name>.<rank>.et, as Chakra names its traces")
        ranked[int(match.group(1))] = file
    if sorted(ranked) != list(range(len(ranked))):
        raise ConfigError(key, trace, f"ranks must be 0..{len(ranked) - 1}; found {sorted(ranked)[:8]}...")
    return [ranked[rank] for rank in range(len(ranked))]


def read_et(file: Path, *, header_only: bool = False) -> tuple[Any, list[Any]]:
    """The GlobalMetadata and the nodes of one ET file (no nodes with `header_only`)."""
    et, _, decode = require_chakra()
    header, nodes = et.GlobalMetadata(), []
    try:
        with file.open("rb") as handle:
            if not decode(handle, header):
                raise ValueError("empty file")
            while not header_only:
                node = et.Node()
                if not decode(handle, node):
                    break
                nodes.append(node)
    except Exception as error:  # protobuf's DecodeError, a truncated varint, a short read
        reason = str(error).splitlines()[0] if str(error) else "unreadable"
        raise ConfigError("trace", str(file), f"is not a Chakra ET ({type(error).__name__}: {reason})") from None
    return header, nodes


def _attrs(node: Any) -> dict[str, Any]:
    return {attribute.name: attribute_value(attribute) for attribute in node.attr}


def _own_program(headers: list[Any], nodes_of: list[list[Any]]) -> CapturedProgram:
    meta = json.loads(_attrs(headers[0])[METADATA_ATTR])
    captured_ranks = [_attrs(header).get(CAPTURED_RANK_ATTR) for header in headers]
    records = [json.loads(_attrs(node)[RECORD_ATTR])
               for rank in meta["ranks"] for node in nodes_of[captured_ranks.index(rank)]]
    return CapturedProgram.from_metadata(meta, pd.DataFrame(records, columns=["rank", *RECORD_COLUMNS]))


def _record(et: Any, node: Any, index: int, deps: tuple[int, ...], world: int, file: Path) -> OpRecord | None:
    attrs = _attrs(node)
    common = dict(index=index, stream="compute", deps=deps, module=node.name, phase="forward", dtype="bfloat16")
    if node.type == et.METADATA_NODE:
        return None
    if node.type == et.COMP_NODE:
        flop, size = float(attrs.get("num_ops", 0) or 0), int(attrs.get("tensor_size", 0) or 0)
        if flop == 0 and size == 0 and node.duration_micros:
            return OpRecord(kind=COMPUTE, op=TIMED_OP, flop=node.duration_micros * 1e-6, **common)
        return OpRecord(kind=COMPUTE, op=WORK_OP, flop=flop, read_bytes=size, torch_op=str(attrs.get("op_type", "")),
                        **common)
    if node.type == et.COMM_COLL_NODE:
        comm_type = int(attrs.get("comm_type", -1))
        names = {value: name for name, value in et.CollectiveCommType.items()}
        op = _OP_OF_COMM_TYPE.get(names.get(comm_type, ""))
        if op is None:
            raise ConfigError("trace", str(file), f"node {node.id} ({node.name!r}) has comm_type {comm_type}, which "
                                                  f"ddlsim cannot price")
        size = int(attrs.get("comm_size", 0) or 0)
        return OpRecord(kind=COLLECTIVE, op=op, size_bytes=size, group_size=world, group_num_ranks=world,
                        group_label=str(attrs.get("pg_name", "") or "world"), **common)
    if node.type in (et.COMM_SEND_NODE, et.COMM_RECV_NODE):
        receives = node.type == et.COMM_RECV_NODE
        peer = int(attrs.get("comm_src" if receives else "comm_dst", -1))
        size = int(attrs.get("comm_size", attrs.get("tensor_size", 0)) or 0)
        return OpRecord(kind=COLLECTIVE, op="send_recv", size_bytes=size, group_size=2, group_num_ranks=2,
                        peer=peer, receives=receives, **common)
    type_name = et.NodeType.Name(node.type) if node.type in et.NodeType.values() else str(node.type)
    raise ConfigError("trace", str(file), f"node {node.id} ({node.name!r}) is a {type_name}, which ddlsim cannot "
                                          "price (it prices COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE and "
                                          "COMM_RECV_NODE)")


def _foreign_program(name: str, files: list[Path], nodes_of: list[list[Any]]) -> CapturedProgram:
    et, _, _ = require_chakra()
    world = len(files)
    frames, ranks, seen = [], [], {}
    for rank, (file, nodes) in enumerate(zip(files, nodes_of, strict=True)):
        index_of = {node.id: position for position, node in enumerate(nodes)}
        records = []
        for position, node in enumerate(nodes):
            parents = [*node.data_deps, *node.ctrl_deps]
            missing = [parent for parent in parents if parent not in index_of]
            if missing:
                raise ConfigError("trace", str(file), f"node {node.id} ({node.name!r}) depends on node {missing[0]}, "
                                                      "which the file does not hold")
            record = _record(et, node, position, tuple(sorted({index_of[p] for p in parents})), world, file)
            if record is not None:
                records.append(record)
        frame = records_frame(rank, records)
        # Node ids differ between ranks (Chakra's generator numbers nodes across files): compare what runs.
        signature = tuple(frame.drop(columns="rank").itertuples(index=False, name=None))
        if signature in seen:
            continue
        seen[signature] = rank
        frames.append(frame)
        ranks.append(rank)
    if len(ranks) > 1:
        raise ConfigError("trace", str(files[0].parent), f"{len(ranks)} ranks run different node sequences; ddlsim "
                                                         "prices traces whose ranks run the same nodes (SPMD) unless "
                                                         "ddlsim wrote them")
    return CapturedProgram(name=name, mesh_shape=(world,), mesh_dim_names=("world",), ranks=tuple(ranks),
                           events=pd.concat(frames, ignore_index=True), replays=replays_frame(0, []))


def load_chakra(trace: str, *, key: str = "trace") -> Any:
    """The program the ET files of `trace` (a directory or a glob) describe: a `CapturedProgram`, or
    an `analytic_load.AnalyticTrace` for ETs ddlsim wrote from an analytic workload; see the
    module docstring."""
    files = trace_files(trace, key)
    if ANALYTIC_ATTR in _attrs(read_et(files[0], header_only=True)[0]):
        from ddlsim.chakra.analytic_load import analytic_trace

        return analytic_trace(trace, files, key)
    read = [read_et(file) for file in files]
    headers, nodes_of = [header for header, _ in read], [nodes for _, nodes in read]
    if METADATA_ATTR in _attrs(headers[0]):
        program = _own_program(headers, nodes_of)
        if program.num_ranks != len(files):
            raise ConfigError(key, trace, f"holds {len(files)} rank files but the program ran on "
                                          f"{program.num_ranks} ranks")
        return program
    name = _RANK.sub("", files[0].name) or "chakra"
    return _foreign_program(name, files, nodes_of)
