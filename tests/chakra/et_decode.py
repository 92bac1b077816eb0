"""Read and rewrite Chakra ET files in tests, through ddlsim's own reader and writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ddlsim.chakra.files import attributes, read_et
from ddlsim.chakra.protoio import write_message


def decode_et(path: Path) -> tuple[Any, list]:
    """(the global metadata header, every node) of one ET file."""
    return read_et(path)


def attrs(node: Any) -> dict[str, Any]:
    return attributes(node)


def write_et(path: Path, header: Any, nodes: list) -> Path:
    """One ET file: `header`, then `nodes`, each length-prefixed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        write_message(handle, header)
        for node in nodes:
            write_message(handle, node)
    return path
