"""Read a Chakra ET file back with Chakra's own protobuf reader (import after `importorskip("chakra")`)."""

from __future__ import annotations

from pathlib import Path

from chakra.schema.protobuf import et_def_pb2
from chakra.src.third_party.utils.protolib import decodeMessage


def decode_et(path: Path) -> tuple[object, list]:
    """(the global metadata header, every node) of one ET file."""
    nodes = []
    with path.open("rb") as handle:
        header = et_def_pb2.GlobalMetadata()
        assert decodeMessage(handle, header)
        while True:
            node = et_def_pb2.Node()
            if not decodeMessage(handle, node):
                return header, nodes
            nodes.append(node)
