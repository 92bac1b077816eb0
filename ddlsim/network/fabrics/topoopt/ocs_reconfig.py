"""The OCS-reconfig circuit heuristic (TopoOpt appendix E.4, Algorithm 5).

Given the unsatisfied demand T (bytes, source x destination), each server's d transmitters and d
receivers are given, one at a time, to the pair with the highest remaining demand; after each
allocation that pair's demand is halved (the Discount of Eq. 2: each further parallel link is
worth half the previous one). SiP-ML's variant (appendix F) keeps the demand unchanged
(`discount=False`). Pairs whose transmitter or receiver runs out of interfaces leave the demand
list.

With host-based forwarding the circuits must connect every server to every other. The paper uses
OWAN's two-edge replacement for this; we do the same in two stages, documented because the paper
gives no details: first idle interfaces are used to lay a ring 0 -> 1 -> ... -> n-1 -> 0 wherever
both ends have a free interface; then, while the circuits form more than one strongly connected
component, two components are merged by replacing one link inside each (a->b in X, c->d in Y, the
links with the least remaining demand) by a->d and c->b, which keeps every server's degree.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from ddlsim.core.errors import ConfigError

if TYPE_CHECKING:
    import networkx as nx


def allocate_circuits(demand: np.ndarray, degree: int, *, discount: bool = True) -> np.ndarray:
    """Algorithm 5 lines 1-20: links[i, j] = number of circuits from server i to server j."""
    remaining = np.array(demand, dtype=float)
    if remaining.ndim != 2 or remaining.shape[0] != remaining.shape[1]:
        raise ConfigError("demand", remaining.shape, "must be a square matrix")
    if degree < 1:
        raise ConfigError("degree", degree, "must be >= 1")
    n = remaining.shape[0]
    np.fill_diagonal(remaining, 0.0)
    links = np.zeros((n, n), dtype=np.int64)
    free_tx = np.full(n, degree)
    free_rx = np.full(n, degree)
    # The order is that of one heap of every pair keyed (-demand, src, dst): the highest demand
    # first, ties to the lowest pair. Only each row's best remaining pair sits in the heap (the
    # next one of a row cannot come earlier), plus the discounted pairs put back after use.
    order = np.argsort(-remaining, axis=1, kind="stable")
    count = (remaining > 0).sum(axis=1)
    pointer = np.zeros(n, dtype=np.int64)
    heap: list[tuple[float, int, int]] = []

    def push_next(src: int) -> None:
        start, end = int(pointer[src]), int(count[src])
        row = order[src]
        for position in range(start, min(start + 8, end)):     # usually found at once
            dst = int(row[position])
            if free_rx[dst] > 0:
                pointer[src] = position + 1
                heapq.heappush(heap, (-float(remaining[src, dst]), src, dst))
                return
        start = min(start + 8, end)
        usable = np.flatnonzero(free_rx[row[start:end]] > 0)
        if usable.size:
            dst = int(row[start + usable[0]])
            pointer[src] = start + usable[0] + 1
            heapq.heappush(heap, (-float(remaining[src, dst]), src, dst))
        else:
            pointer[src] = end

    # Every interface is free at the start: each row's head is its first pair.
    rows = np.flatnonzero(count > 0)
    heads = order[rows, 0]
    pointer[rows] = 1
    heap.extend(zip((-remaining[rows, heads]).tolist(), rows.tolist(), heads.tolist()))
    heapq.heapify(heap)
    while heap:
        negative, src, dst = heapq.heappop(heap)
        head = negative == -float(remaining[src, dst])   # a row's own pair, not a discounted one
        if free_tx[src] == 0:
            continue
        if free_rx[dst] == 0:
            if head:
                push_next(src)
            continue
        # Without the discount the pair stays on top: give it every interface it can take.
        take = 1 if discount else int(min(free_tx[src], free_rx[dst]))
        links[src, dst] += take
        free_tx[src] -= take
        free_rx[dst] -= take
        if free_tx[src] == 0:
            continue
        if discount and free_rx[dst]:
            heapq.heappush(heap, (negative * 0.5, src, dst))
        if head:
            push_next(src)
    return links


def _graph(links: np.ndarray) -> nx.DiGraph:
    import networkx as nx  # networkx loads only where a graph is built (issue 15: light imports)

    graph = nx.DiGraph()
    graph.add_nodes_from(range(links.shape[0]))
    graph.add_edges_from(zip(*np.nonzero(links)))
    return graph


def connect_circuits(links: np.ndarray, degree: int, demand: np.ndarray | None = None) -> np.ndarray:
    """Line 21: make the circuits strongly connected without exceeding any server's degree.

    Returns a new matrix. If neither free interfaces nor link swaps can merge two components (for
    example a component made of one server with every interface busy and no internal link), the
    circuits are returned as far as they could be connected; routing then reports the gap.
    """
    import networkx as nx  # networkx loads only where a graph is built (issue 15: light imports)

    links = np.array(links, dtype=np.int64)
    n = links.shape[0]
    value = np.zeros((n, n)) if demand is None else np.asarray(demand, dtype=float)
    free_tx = degree - links.sum(axis=1)
    free_rx = degree - links.sum(axis=0)
    if (free_tx < 0).any() or (free_rx < 0).any():
        raise ConfigError("links", "degree", f"some server already uses more than {degree} interfaces")
    for i in range(n):
        j = (i + 1) % n
        if n > 1 and links[i, j] == 0 and free_tx[i] > 0 and free_rx[j] > 0:
            links[i, j] += 1
            free_tx[i] -= 1
            free_rx[j] -= 1
    while True:
        components = sorted((sorted(c) for c in nx.strongly_connected_components(_graph(links))), key=lambda c: c[0])
        if len(components) <= 1 or not _merge(links, components[0], components[1], value, free_tx, free_rx):
            return links


def _internal_link(links: np.ndarray, members: list[int], value: np.ndarray) -> tuple[int, int] | None:
    sub = links[np.ix_(members, members)]
    rows, cols = np.nonzero(sub)
    if not rows.size:
        return None
    best = min(zip(rows.tolist(), cols.tolist()), key=lambda rc: (value[members[rc[0]], members[rc[1]]], rc))
    return members[best[0]], members[best[1]]


def _merge(links: np.ndarray, first: list[int], second: list[int], value: np.ndarray,
           free_tx: np.ndarray, free_rx: np.ndarray) -> bool:
    edge_x = _internal_link(links, first, value)
    edge_y = _internal_link(links, second, value)
    if edge_x and edge_y:
        (a, b), (c, d) = edge_x, edge_y
        links[a, b] -= 1
        links[c, d] -= 1
        links[a, d] += 1
        links[c, b] += 1
        return True
    for members, edge in ((first, edge_y), (second, edge_x)):
        lone = next((v for v in members if free_tx[v] > 0 and free_rx[v] > 0), None)
        if lone is not None and edge is not None:
            c, d = edge
            links[c, d] -= 1
            links[c, lone] += 1
            links[lone, d] += 1
            free_tx[lone] -= 1
            free_rx[lone] -= 1
            return True
    u = next((v for v in first if free_tx[v] > 0 and free_rx[v] > 0), None)
    v = next((w for w in second if free_tx[w] > 0 and free_rx[w] > 0), None)
    if u is not None and v is not None:
        links[u, v] += 1
        links[v, u] += 1
        free_tx[[u, v]] -= 1
        free_rx[[u, v]] -= 1
        return True
    return False


def ocs_reconfig(demand: np.ndarray, degree: int, *, discount: bool = True, forwarding: bool = True) -> np.ndarray:
    """Algorithm 5: circuits for the measured demand, made connected when hosts forward."""
    links = allocate_circuits(demand, degree, discount=discount)
    return connect_circuits(links, degree, demand) if forwarding else links
