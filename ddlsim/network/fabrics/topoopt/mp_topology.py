"""The model-parallel sub-topology of TopologyFinder (Algorithm 1, lines 12 to 17).

Each remaining degree becomes one round of Blossom maximum-weight matching over the MP demand
(networkx's implementation of Edmonds' algorithm). A matched pair {u, v} gets one duplex link:
one interface of u and one of v. After each round the demand of every matched pair is halved,
so that later rounds prefer pairs not yet connected: the paper's diminishing-return discount.
"""

from __future__ import annotations

import numpy as np

from ddlsim.core.errors import ConfigError


def symmetric_demand(demand: np.ndarray) -> np.ndarray:
    """Undirected demand of each pair: bytes u -> v plus bytes v -> u, with a zero diagonal."""
    matrix = np.asarray(demand, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ConfigError("mp_demand", matrix.shape, "must be a square n x n matrix of bytes")
    if not np.all(np.isfinite(matrix)) or (matrix < 0).any():
        raise ConfigError("mp_demand", "matrix", "must hold finite, non-negative byte counts")
    total = matrix + matrix.T
    np.fill_diagonal(total, 0.0)
    return total


def mp_matchings(demand: np.ndarray, rounds: int) -> list[list[tuple[int, int]]]:
    """`rounds` maximum-weight matchings over `demand`, halving matched pairs after each round.

    Returns one sorted list of pairs (u < v) per round; a round with no demand left is empty.
    """
    if rounds < 0:
        raise ConfigError("rounds", rounds, "must be >= 0")
    import networkx as nx  # networkx loads only where a graph is built (issue 15: light imports)

    weights = symmetric_demand(demand)
    result: list[list[tuple[int, int]]] = []
    for _ in range(rounds):
        rows, cols = np.nonzero(np.triu(weights, k=1))
        graph = nx.Graph()
        graph.add_weighted_edges_from(zip(rows.tolist(), cols.tolist(), weights[rows, cols].tolist()))
        matching = sorted(tuple(sorted((int(u), int(v)))) for u, v in nx.max_weight_matching(graph))
        for u, v in matching:
            weights[u, v] /= 2.0
            weights[v, u] /= 2.0
        result.append(matching)
    return result
