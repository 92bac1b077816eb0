"""Reading Chakra ET files: which files make a trace, and the messages of one file."""

from __future__ import annotations

import glob
import hashlib
import re
from pathlib import Path
from typing import Any

from ddlsim.chakra.protoio import TruncatedError, first_message_bytes, message_bytes, read_varint
from ddlsim.chakra.schema import ET, attribute_value
from ddlsim.core.errors import ConfigError

RANK_OF_FILE = re.compile(r"\.(\d+)\.et$")


def trace_files(trace: str, key: str = "trace") -> list[Path]:
    """The ET files of `trace` (a directory or a glob), ordered by rank."""
    path = Path(trace).expanduser()
    files = sorted(path.glob("*.et")) if path.is_dir() else [Path(name) for name in glob.glob(str(path))]
    if not files:
        raise ConfigError(key, trace, "no Chakra ET files (*.et) there; give a directory or a glob")
    ranked = {}
    for file in files:
        match = RANK_OF_FILE.search(file.name)
        if match is None:
            raise ConfigError(key, str(file), "must be named <name>.<rank>.et, as Chakra names its traces")
        ranked[int(match.group(1))] = file
    if sorted(ranked) != list(range(len(ranked))):
        raise ConfigError(key, trace, f"ranks must be 0..{len(ranked) - 1}; found {sorted(ranked)[:8]}...")
    return [ranked[rank] for rank in range(len(ranked))]


def read_et(file: Path, *, header_only: bool = False) -> tuple[Any, list[Any]]:
    """The GlobalMetadata and the nodes of one ET file (no nodes with `header_only`)."""
    nodes = []
    try:
        if header_only:
            header = ET.GlobalMetadata.FromString(first_message_bytes(file))
        else:
            messages = message_bytes(file.read_bytes())
            first = next(messages, None)
            if first is None:
                raise ValueError("the file is empty")
            header = ET.GlobalMetadata.FromString(first)
            nodes = [ET.Node.FromString(message) for message in messages]
    except Exception as error:  # protobuf's DecodeError, a truncated prefix or message, an empty file
        raise _not_an_et(file, error) from None
    return header, nodes


def read_et_digest(file: Path, *, with_nodes: bool) -> tuple[Any, list[Any], str]:
    """The GlobalMetadata of one ET file, its nodes (none unless `with_nodes`) and the SHA-256 of
    the bytes after the GlobalMetadata (what an analytic export records, `analytic_export`)."""
    try:
        data = memoryview(file.read_bytes())
        if not len(data):
            raise ValueError("the file is empty")
        size, start = read_varint(data, 0)
        if start + size > len(data):
            raise TruncatedError(f"the file ends inside its first message of {size} bytes")
        header = ET.GlobalMetadata.FromString(data[start:start + size])
        body = data[start + size:]
        nodes = [ET.Node.FromString(message) for message in message_bytes(body)] if with_nodes else []
    except Exception as error:  # protobuf's DecodeError, a truncated prefix or message, an empty file
        raise _not_an_et(file, error) from None
    return header, nodes, hashlib.sha256(body).hexdigest()


def _not_an_et(file: Path, error: BaseException) -> ConfigError:
    reason = str(error).splitlines()[0] if str(error) else "unreadable"
    return ConfigError("trace", str(file), f"is not a Chakra ET ({type(error).__name__}: {reason})")


def attributes(message: Any) -> dict[str, Any]:
    """A node's or header's attributes by name."""
    return {attribute.name: attribute_value(attribute) for attribute in message.attr}


def attribute(message: Any, name: str) -> Any:
    """The value of `message`'s attribute `name` (None without one)."""
    return next((attribute_value(item) for item in message.attr if item.name == name), None)


def node_label(node: Any) -> str:
    """How an error names a node: ``node 8 ('all_reduce')``."""
    return f"node {node.id} ({node.name!r})"
