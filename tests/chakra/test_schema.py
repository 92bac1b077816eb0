"""ddlsim's own Chakra schema and file layout (issue 30): the compiled descriptor is the proto's, the
bytes on the wire are Chakra's field numbers and types, and the length-prefixed layout reads back."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsim.chakra.protoio import TruncatedError, message_bytes, read_varint, varint, write_message
from ddlsim.chakra.schema import ET, chakra_comm_size, compute_ops, ddlsim_size_bytes

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_descriptor_is_the_proto_compiled() -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (the dev extra) compiles the proto")
    done = subprocess.run([sys.executable, "scripts/generate_chakra_schema.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_node_is_chakras_bytes() -> None:
    """Derived by hand from Chakra's schema: Node.id = 1 (varint), name = 2 (bytes), type = 3 (enum,
    COMP_NODE = 4), data_deps = 5 (packed uint64), attr = 10 (message: name = 1, int64_val = 9)."""
    node = ET.Node(id=7, name="mm", type=ET.COMP_NODE, data_deps=[3, 4])
    node.attr.add(name="num_ops", int64_val=300)
    expected = bytes([0x08, 7, 0x12, 2]) + b"mm" + bytes([0x18, 4, 0x2A, 2, 3, 4, 0x52, 12, 0x0A, 7]) + b"num_ops" \
        + bytes([0x48, 0xAC, 0x02])
    assert node.SerializeToString() == expected
    comm = ET.Node(id=1, type=ET.COMM_COLL_NODE)
    comm.attr.add(name="comm_type", int64_val=ET.ALL_GATHER)  # CollectiveCommType: ALL_REDUCE 0 ... ALL_GATHER 2
    comm.attr.add(name="pg_name", string_val="3")  # string_val = 29
    comm.attr.add(name="is_cpu_op", bool_val=False)  # bool_val = 27, written even when false (a oneof member)
    assert comm.SerializeToString() == (bytes([0x08, 1, 0x18, 7, 0x52, 13, 0x0A, 9]) + b"comm_type"
                                        + bytes([0x48, 2, 0x52, 13, 0x0A, 7]) + b"pg_name" + bytes([0xEA, 0x01, 1])
                                        + b"3" + bytes([0x52, 14, 0x0A, 9]) + b"is_cpu_op" + bytes([0xD8, 0x01, 0]))
    header = ET.GlobalMetadata(version="0.0.4")
    assert header.SerializeToString() == b"\x0a\x050.0.4"


def test_length_prefixed_messages_round_trip() -> None:
    handle = io.BytesIO()
    nodes = [ET.Node(id=index, name="x" * (index * 50)) for index in range(6)]  # sizes past one varint byte
    for node in nodes:
        write_message(handle, node)
    read = [ET.Node.FromString(data) for data in message_bytes(handle.getvalue())]
    assert read == nodes
    with pytest.raises(TruncatedError, match="ends inside a message"):
        list(message_bytes(handle.getvalue()[:-3]))


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**21, 2**35 + 5, 2**63])
def test_varints_round_trip(value) -> None:
    encoded = varint(value)
    assert read_varint(encoded, 0) == (value, len(encoded))
    assert len(encoded) == max(1, (value.bit_length() + 6) // 7)


def test_comm_size_follows_chakras_convention() -> None:
    assert chakra_comm_size("all_gather", 8 << 20, 8) == 1 << 20  # each rank's contribution
    assert ddlsim_size_bytes("all_gather", 1 << 20, 8) == 8 << 20  # nccl-tests: the whole output
    assert chakra_comm_size("all_reduce", 8 << 20, 8) == ddlsim_size_bytes("all_reduce", 8 << 20, 8) == 8 << 20
    assert chakra_comm_size("reduce_scatter", 8 << 20, 8) == 8 << 20


def test_compute_nodes_always_carry_work() -> None:
    assert compute_ops(2.6e9, 10, "bfloat16") == 2_600_000_000
    assert compute_ops(0.0, 4096, "bfloat16") == 2048  # a copy: one operation per element moved
    assert compute_ops(0.0, 4096, "float32") == 1024
    assert compute_ops(0.0, 0, "float32") == 1
