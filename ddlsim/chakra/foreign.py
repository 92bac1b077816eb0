"""Chakra ETs that another tool wrote (Chakra's generator, its PyTorch converter, ASTRA-sim's
examples), as a `CapturedProgram` that ddlsim prices.

- ``COMP_NODE``: compute of ``num_ops`` FLOPs and ``tensor_size`` bytes, priced by the device's
  roofline; one with a ``duration_micros`` and neither takes that duration on every device.
- ``COMM_COLL_NODE``: its ``comm_type`` over ``comm_size`` bytes in Chakra's convention (an
  ALL_GATHER's or GATHER's size is each rank's contribution: ddlsim's `size_bytes` is that times
  the group size), within the group ``pg_name`` names (`process_groups`); no ``pg_name`` (or
  ``"0"`` where no group of that name is declared) is every rank of the trace.
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: a point-to-point exchange with ``comm_dst`` / ``comm_src``.
- ``data_deps`` and ``ctrl_deps`` become the record's waits; each file is one stream;
  ``METADATA_NODE`` carries the process groups and nothing to price.

The ranks must run the same nodes (SPMD): one rank's records then stand for every rank. The
files are checked before (`checks`, called by `load.load_chakra`).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pandas as pd

from ddlsim.capture.groups import group_shape
from ddlsim.capture.pricing import TIMED_OP, WORK_OP
from ddlsim.capture.program import CapturedProgram, records_frame, replays_frame
from ddlsim.capture.records import COLLECTIVE, COMPUTE, OpRecord
from ddlsim.chakra.files import attributes, node_label
from ddlsim.chakra.schema import COMM_GROUPS_FILE, COMM_TYPES, ET, ddlsim_size_bytes
from ddlsim.core.errors import ConfigError

_OP_OF_COMM_TYPE = {name: op for op, name in COMM_TYPES.items()}
WORLD = "0"  # ASTRA-sim's and PyTorch's default group: every rank


def _parsed(text: str) -> Any:
    """JSON or a Python literal (Chakra's converter writes a node's inputs as ``str(list)``)."""
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _group_configs(value: Any) -> list[dict[str, Any]]:
    """Every process-group record (a mapping with a ``pg_name``) inside a parsed METADATA value."""
    if isinstance(value, str):
        return _group_configs(_parsed(value)) if value.lstrip()[:1] in "[{" else []
    if isinstance(value, dict):
        if "pg_name" in value:
            return [value]
        return [config for item in value.values() for config in _group_configs(item)]
    if isinstance(value, (list, tuple)):
        return [config for item in value for config in _group_configs(item)]
    return []


def _metadata_groups(nodes: list[Any], world: int) -> dict[str, tuple[int, ...]]:
    """pg_name -> ranks from a file's METADATA nodes (PyTorch's ``## process_group:init ##``:
    ``pg_name``, ``ranks``; an empty ``ranks`` is every rank)."""
    groups = {}
    for node in nodes:
        if node.type != ET.METADATA_NODE:
            continue
        texts = [node.inputs.values, *(value for value in attributes(node).values() if isinstance(value, str))]
        for config in (config for text in texts for config in _group_configs(text)):
            ranks = tuple(int(rank) for rank in config.get("ranks") or ())
            groups[str(config["pg_name"])] = ranks or tuple(range(world))
    return groups


def process_groups(directory: Path, nodes_of: list[list[Any]]) -> list[dict[str, tuple[int, ...]]]:
    """Per rank, pg_name -> ranks: ASTRA-sim's ``comm_group.json`` beside the files, then every
    file's METADATA groups (a name declared with different ranks in different files is left to
    those files), then the rank's own METADATA groups."""
    world = len(nodes_of)
    shared: dict[str, tuple[int, ...]] = {}
    table = directory / COMM_GROUPS_FILE
    if table.is_file():
        try:
            entries = json.loads(table.read_text()).items()
            shared = {str(name): tuple(int(rank) for rank in ranks) for name, ranks in entries}
        except (ValueError, TypeError, AttributeError) as error:
            raise ConfigError("trace", str(table), f"is not a comm-group table of id -> ranks ({error})") from None
    own = [_metadata_groups(nodes, world) for nodes in nodes_of]
    declared: dict[str, set[tuple[int, ...]]] = {}
    for groups in own:
        for name, ranks in groups.items():
            declared.setdefault(name, set()).add(ranks)
    shared |= {name: next(iter(sets)) for name, sets in declared.items() if len(sets) == 1}
    return [shared | groups for groups in own]


def _group_fields(node: Any, file: Path, rank: int, world: int, groups: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    name = str(attributes(node).get("pg_name", "") or "")
    if not name or (name == WORLD and name not in groups):
        ranks = tuple(range(world))
    elif name in groups:
        ranks = groups[name]
    else:
        raise ConfigError("trace", str(file), f"{node_label(node)} names process group {name!r}, which no METADATA "
                                              f"node and no {COMM_GROUPS_FILE} declares")
    if rank not in ranks:
        raise ConfigError("trace", str(file), f"{node_label(node)} runs in process group {name!r} of ranks "
                                              f"{list(ranks)[:8]}, which does not hold rank {rank}")
    shape = group_shape(ranks, world)
    return dict(group_size=shape.size, group_stride=shape.stride, group_num_ranks=shape.num_ranks,
                group_regular=shape.regular, group_first_rank=min(ranks), group_label=name or "world")


def _record(node: Any, index: int, deps: tuple[int, ...], rank: int, world: int, file: Path,
            groups: dict[str, tuple[int, ...]]) -> OpRecord | None:
    attrs = attributes(node)
    common = dict(index=index, stream="compute", deps=deps, module=node.name, phase="forward", dtype="bfloat16")
    if node.type == ET.METADATA_NODE:
        return None
    if node.type == ET.COMP_NODE:
        flop, size = float(attrs.get("num_ops", 0) or 0), int(attrs.get("tensor_size", 0) or 0)
        if flop == 0 and size == 0 and node.duration_micros:
            return OpRecord(kind=COMPUTE, op=TIMED_OP, flop=node.duration_micros * 1e-6, **common)
        return OpRecord(kind=COMPUTE, op=WORK_OP, flop=flop, read_bytes=size, torch_op=str(attrs.get("op_type", "")),
                        **common)
    if node.type == ET.COMM_COLL_NODE:
        comm_type = int(attrs.get("comm_type", -1))
        names = {value: name for name, value in ET.CollectiveCommType.items()}
        op = _OP_OF_COMM_TYPE.get(names.get(comm_type, ""))
        if op is None:
            raise ConfigError("trace", str(file), f"{node_label(node)} has comm_type {comm_type}, which ddlsim cannot "
                                                  "price")
        group = _group_fields(node, file, rank, world, groups)
        size = ddlsim_size_bytes(op, int(attrs.get("comm_size", 0) or 0), group["group_size"])
        return OpRecord(kind=COLLECTIVE, op=op, size_bytes=size, **group, **common)
    if node.type in (ET.COMM_SEND_NODE, ET.COMM_RECV_NODE):
        receives = node.type == ET.COMM_RECV_NODE
        peer = int(attrs["comm_src" if receives else "comm_dst"])
        shape = group_shape((rank, peer), world)
        return OpRecord(kind=COLLECTIVE, op="send_recv", size_bytes=int(attrs.get("comm_size", 0) or 0),
                        group_size=shape.size, group_stride=shape.stride, group_num_ranks=shape.num_ranks,
                        group_first_rank=min(rank, peer), peer=peer, receives=receives, **common)
    type_name = ET.NodeType.Name(node.type) if node.type in ET.NodeType.values() else str(node.type)
    raise ConfigError("trace", str(file), f"{node_label(node)} is a {type_name}, which ddlsim cannot price (it prices "
                                          "COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE and COMM_RECV_NODE)")


def _signature(frame: pd.DataFrame, rank: int) -> tuple:
    """What a rank runs, whatever its own ids, groups and peers (those differ from rank to rank)."""
    relative = frame.assign(peer=frame.peer.where(frame.peer < 0, frame.peer - rank))
    return tuple(relative.drop(columns=["rank", "group_first_rank", "group_label"]).itertuples(index=False, name=None))


def foreign_program(name: str, files: list[Path], nodes_of: list[list[Any]]) -> CapturedProgram:
    """The program of SPMD ETs another tool wrote (module docstring); the files are checked."""
    world = len(files)
    groups_of = process_groups(files[0].parent, nodes_of)
    frames, ranks, seen = [], [], {}
    for rank, (file, nodes) in enumerate(zip(files, nodes_of, strict=True)):
        index_of = {node.id: position for position, node in enumerate(nodes)}
        records = []
        for position, node in enumerate(nodes):
            deps = tuple(sorted({index_of[parent] for parent in (*node.data_deps, *node.ctrl_deps)}))
            record = _record(node, position, deps, rank, world, file, groups_of[rank])
            if record is not None:
                records.append(record)
        frame = records_frame(rank, records)
        signature = _signature(frame, rank)
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
