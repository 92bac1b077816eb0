"""What makes a set of Chakra ETs a graph that can run, each failure one line naming the file and node.

- per file: node ids are unique, no node depends on itself or on a node the file does not hold,
  and the dependencies have no cycle;
- per node: a collective says how many bytes it moves (``comm_size``; a barrier needs none), a
  send says where it goes (``comm_dst``) and a receive where it comes from (``comm_src``), both
  ranks of the trace;
- across files: every send from rank a to rank b has a receive on b from a, and the other way round.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx

from ddlsim.chakra.files import attributes, node_label
from ddlsim.chakra.schema import ET
from ddlsim.core.errors import ConfigError


def _refuse(file: Path, node: Any, rule: str) -> ConfigError:
    return ConfigError("trace", str(file), f"{node_label(node)} {rule}")


def check_graph(file: Path, nodes: list[Any]) -> None:
    """Unique ids, no dependency on itself or on a missing node, no cycle."""
    seen: dict[int, Any] = {}
    forward = False  # a dependency on a node later in the file: only then can there be a cycle
    for node in nodes:
        if node.id in seen:
            raise _refuse(file, node, f"has the id of an earlier node ({node_label(seen[node.id])}); ids must be "
                                      "unique in a file")
        for parent in (*node.data_deps, *node.ctrl_deps):
            if parent == node.id:
                raise _refuse(file, node, "depends on itself")
            forward = forward or parent not in seen
        seen[node.id] = node
    for node in nodes:
        missing = next((parent for parent in (*node.data_deps, *node.ctrl_deps) if parent not in seen), None)
        if missing is not None:
            raise _refuse(file, node, f"depends on node {missing}, which the file does not hold")
    if forward:
        graph = nx.DiGraph((parent, node.id) for node in nodes for parent in (*node.data_deps, *node.ctrl_deps))
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return
        path = " -> ".join(str(edge[0]) for edge in cycle) + f" -> {cycle[0][0]}"
        raise _refuse(file, seen[cycle[0][1]], f"is on a dependency cycle ({path}); a trace's dependencies must "
                                               "form a DAG")


def check_node(file: Path, node: Any, world: int) -> None:
    """A collective's size, a send's or receive's peer."""
    attrs = attributes(node)
    if node.type == ET.COMM_COLL_NODE:
        if "comm_size" not in attrs and attrs.get("comm_type") != ET.BARRIER:
            raise _refuse(file, node, "is a collective without comm_size; say how many bytes it moves")
    elif node.type in (ET.COMM_SEND_NODE, ET.COMM_RECV_NODE):
        key = "comm_src" if node.type == ET.COMM_RECV_NODE else "comm_dst"
        peer = attrs.get(key)
        if peer is None or not 0 <= int(peer) < world:
            what = "a receive" if node.type == ET.COMM_RECV_NODE else "a send"
            found = "none" if peer is None else str(peer)
            raise _refuse(file, node, f"is {what} with {key} {found}; it must be a rank of the trace (0..{world - 1})")


def check_pairs(files: list[Path], nodes_of: list[list[Any]]) -> None:
    """Every send has its receive on the peer, and every receive its send."""
    sends, receives, first = Counter(), Counter(), {}
    for rank, (file, nodes) in enumerate(zip(files, nodes_of, strict=True)):
        for node in nodes:
            if node.type == ET.COMM_SEND_NODE:
                pair = (rank, int(attributes(node)["comm_dst"]))
                sends[pair] += 1
            elif node.type == ET.COMM_RECV_NODE:
                pair = (int(attributes(node)["comm_src"]), rank)
                receives[pair] += 1
            else:
                continue
            first.setdefault((pair, node.type), (file, node))
    for pair in sorted(set(sends) | set(receives)):
        if sends[pair] == receives[pair]:
            continue
        source, target = pair
        more = ET.COMM_SEND_NODE if sends[pair] > receives[pair] else ET.COMM_RECV_NODE
        file, node = first[(pair, more)]
        raise _refuse(file, node, f"is where rank {source} sends {sends[pair]} times to rank {target} but rank "
                                  f"{target} receives {receives[pair]} times from rank {source}; every send needs "
                                  "its receive")
