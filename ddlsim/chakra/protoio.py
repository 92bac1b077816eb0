"""Chakra's file layout: protobuf messages one after another, each preceded by its length.

An ET file is a `GlobalMetadata` message and then one `Node` message per operation, each written
as its serialized size (a base-128 varint, as protobuf encodes lengths) followed by its bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

MAX_VARINT_BYTES = 10  # a 64-bit value in 7-bit groups


class TruncatedError(ValueError):
    """The file ends inside a length prefix or inside a message."""


def varint(value: int) -> bytes:
    """`value` (>= 0) as a protobuf base-128 varint: 7 bits per byte, low bits first."""
    if value < 0:
        raise ValueError(f"a length is never negative: {value}")
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_varint(data: bytes | memoryview, offset: int) -> tuple[int, int]:
    """(the varint at `offset`, the offset after it)."""
    value, shift = 0, 0
    for position in range(offset, min(offset + MAX_VARINT_BYTES, len(data))):
        byte = data[position]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position + 1
        shift += 7
    if len(data) - offset >= MAX_VARINT_BYTES:
        raise ValueError(f"a length prefix at byte {offset} is longer than {MAX_VARINT_BYTES} bytes")
    raise TruncatedError(f"the file ends inside a length prefix at byte {offset}")


def write_message(handle: BinaryIO, message: Any) -> None:
    """Append `message` to `handle`, length first."""
    write_serialized(handle, message.SerializeToString())


def write_serialized(handle: BinaryIO, data: bytes) -> None:
    """Append a message already serialized to `data`, length first."""
    handle.write(varint(len(data)))
    handle.write(data)


def message_bytes(data: bytes | memoryview) -> Iterator[memoryview]:
    """The serialized messages of a whole file's bytes, in order."""
    view, offset = memoryview(data), 0
    while offset < len(view):
        size, start = read_varint(view, offset)
        end = start + size
        if end > len(view):
            raise TruncatedError(f"the file ends inside a message of {size} bytes that starts at byte {start}")
        yield view[start:end]
        offset = end


def first_message_bytes(path: Path) -> memoryview:
    """The serialized first message of the file at `path`, reading no more of it than needed."""
    with path.open("rb") as handle:
        prefix = handle.read(MAX_VARINT_BYTES)
        if not prefix:
            raise TruncatedError("the file is empty")
        size, start = read_varint(prefix, 0)
        body = prefix[start:] + handle.read(max(0, size - (len(prefix) - start)))
    if len(body) < size:
        raise TruncatedError(f"the file ends inside its first message of {size} bytes")
    return memoryview(body)[:size]
