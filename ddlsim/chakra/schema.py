"""ddlsim's Chakra ET schema (`et_def.proto`), loaded at import, and the names both directions share.

`ET` holds the message classes (`ET.Node`, `ET.GlobalMetadata`, `ET.AttributeProto`), the two
enums (`ET.NodeType`, `ET.CollectiveCommType`, with ``Name``/``Value``/``items``) and every enum
value by name (`ET.COMP_NODE`, `ET.ALL_GATHER`, ...), as protoc's generated module would. The
classes come from the compiled descriptor beside this file, added to a descriptor pool of ddlsim's
own, so that an installed copy of Chakra's own schema never clashes with it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

RECORD_ATTR = "ddlsim.record"  # the whole captured record, as JSON: what makes a round trip exact
METADATA_ATTR = "ddlsim.program"  # the program's metadata (GlobalMetadata), as JSON
CAPTURED_RANK_ATTR = "ddlsim.captured_rank"  # which captured rank's records this file's rank runs
ANALYTIC_ATTR = "ddlsim.analytic"  # an analytic workload's record (GlobalMetadata), as JSON: `graph_records`
STAGE_ATTR = "ddlsim.stage"  # the pipeline stage an analytic export's rank runs (GlobalMetadata)
RANK_ATTR = "ddlsim.rank"  # the rank an analytic export's file belongs to (GlobalMetadata)
NODES_SHA256_ATTR = "ddlsim.nodes_sha256"  # the SHA-256 of the file's bytes after its GlobalMetadata
OP_ATTR = "ddlsim.op"  # one op of an analytic iteration graph, as JSON (on the first node of the op)
COMM_GROUPS_FILE = "comm_group.json"  # group id -> ranks (ASTRA-sim's --comm-group-configuration)
SCHEMA_VERSION = "0.0.4"
PACKAGE = "ddlsim.et"
MESSAGES = ("AttributeProto", "GlobalMetadata", "Node", "IOInfo")
ENUMS = ("NodeType", "CollectiveCommType")

# ddlsim collective op -> Chakra CollectiveCommType name
COMM_TYPES = {"all_reduce": "ALL_REDUCE", "reduce": "REDUCE", "all_gather": "ALL_GATHER", "gather": "GATHER",
              "scatter": "SCATTER", "broadcast": "BROADCAST", "all_to_all": "ALL_TO_ALL",
              "reduce_scatter": "REDUCE_SCATTER", "barrier": "BARRIER"}
# Ops whose Chakra comm_size is what one rank contributes, where ddlsim's size_bytes is the whole
# gathered output (the nccl-tests convention): Chakra = ddlsim / group size, and back.
PER_RANK_COMM_SIZE = frozenset({"all_gather", "gather"})


@cache
def _schema() -> SimpleNamespace:
    compiled = resources.files("ddlsim.chakra").joinpath("et_def.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(compiled).file:
        pool.Add(file)
    namespace = SimpleNamespace()
    for name in MESSAGES:
        setattr(namespace, name, message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}")))
    for name in ENUMS:
        enum = EnumTypeWrapper(pool.FindEnumTypeByName(f"{PACKAGE}.{name}"))
        setattr(namespace, name, enum)
        for value_name, number in enum.items():
            setattr(namespace, value_name, number)
    return namespace


ET: Any = _schema()


def chakra_comm_size(op: str, size_bytes: int, group_size: int) -> int:
    """The ``comm_size`` Chakra (and ASTRA-sim) reads for a ddlsim call of `size_bytes`."""
    return size_bytes // max(group_size, 1) if op in PER_RANK_COMM_SIZE else size_bytes


def ddlsim_size_bytes(op: str, comm_size: int, group_size: int) -> int:
    """ddlsim's `size_bytes` (nccl-tests convention) for a Chakra node of `comm_size`."""
    return comm_size * group_size if op in PER_RANK_COMM_SIZE else comm_size


def attribute_value(attribute: Any) -> Any:
    """The value of a Chakra AttributeProto, whichever of its fields is set."""
    which = attribute.WhichOneof("value")
    if which is None:
        return None
    value = getattr(attribute, which)
    return list(value.values) if which.endswith("_list") else value


def element_bytes(dtype: str) -> int:
    """Bytes of one element of a torch dtype name (``bfloat16`` -> 2, ``float8_e4m3fn`` -> 1, ``bool`` -> 1)."""
    bits = re.search(r"\d+", dtype or "")
    return max(1, int(bits.group()) // 8) if bits else 1


def compute_ops(flop: float, moved_bytes: int, dtype: str) -> int:
    """A COMP node's ``num_ops``: its FLOPs, or, for work counted in no FLOPs (copies, elementwise
    ops, norms), one operation per element it moves, so that ASTRA-sim's roofline never divides 0 by 0."""
    if flop >= 1:
        return round(flop)
    return max(1, moved_bytes // element_bytes(dtype))


class GroupIds:
    """Numbers communication groups as ASTRA-sim reads ``pg_name``: each distinct set of ranks an
    id from 1 (ASTRA-sim takes 0 for the whole world), written to ``comm_group.json`` beside the ETs."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, ...], int] = {}

    def id_of(self, ranks: tuple[int, ...]) -> str:
        return str(self.ids.setdefault(tuple(sorted(ranks)), len(self.ids) + 1))

    def write(self, directory: Path) -> Path:
        path = directory / COMM_GROUPS_FILE
        path.write_text(json.dumps({str(index): list(group) for group, index in self.ids.items()}, indent=1))
        return path
