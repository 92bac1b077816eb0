"""CoinChangeMod (Algorithm 4) against a literal transcription and against networkx."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.topoopt.coin_change import coin_change_mod


def _algorithm4_literal(n: int, coins: list[int]) -> tuple[list[float], list[float]]:
    """Algorithm 4 line by line: coins start at distance 0, back-trace holds the last coin."""
    inf = math.inf
    dist = [inf] * n
    bt = [inf] * n
    for c in coins:
        dist[c] = 0
        bt[c] = c
    while any(dist[i] == inf for i in range(1, n)):
        new_dist, new_bt = dist[:], bt[:]
        for i in range(1, n):
            new_dist[i] = dist[i]
            new_bt[i] = bt[i]
            for c in coins:
                if dist[(i - c) % n] < new_dist[i]:
                    new_dist[i] = dist[(i - c) % n] + 1
                    new_bt[i] = c
        dist, bt = new_dist, new_bt
    return dist, bt


@pytest.mark.parametrize(("n", "coins"), [(12, [1, 5]), (12, [1, 5, 7]), (16, [1, 3, 11]),
                                          (128, [1, 3, 11, 37]), (30, [7, 11]), (97, [1, 10, 50])])
def test_matches_literal_pseudocode(n, coins):
    dist, bt = _algorithm4_literal(n, coins)
    routes = coin_change_mod(n, coins)
    # The pseudocode counts coins beyond the first, so its distance is hops - 1.
    assert [int(d) + 1 for d in dist[1:]] == routes.hops[1:].tolist()
    # Its back-trace entry is the last coin on our route.
    for offset in range(1, n):
        assert routes.coins_for(offset)[-1] == bt[offset]


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 300), data=st.data())
def test_hops_are_shortest_paths_on_the_circulant_graph(n, data):
    rules = [p for p in range(1, n) if math.gcd(p, n) == 1]
    coins = data.draw(st.lists(st.sampled_from(rules), min_size=1, max_size=min(5, len(rules)), unique=True))
    routes = coin_change_mod(n, coins)
    graph = nx.DiGraph()
    graph.add_edges_from((i, (i + c) % n) for i in range(n) for c in coins)
    lengths = nx.single_source_shortest_path_length(graph, 0)
    assert routes.hops.tolist() == [lengths[o] for o in range(n)]
    for offset in range(n):
        used = routes.coins_for(offset)
        assert len(used) == routes.hops[offset]
        assert sum(used) % n == offset
        assert set(used) <= set(coins)


def test_single_ring_route_is_the_ring():
    routes = coin_change_mod(10, [1])
    assert routes.hops.tolist() == list(range(10))
    assert routes.diameter == 9
    assert routes.coins_for(4) == [1, 1, 1, 1]
    counts = routes.coin_counts()
    assert counts[:, 0].tolist() == list(range(10))


def test_disconnected_coins_are_rejected():
    with pytest.raises(ConfigError, match="cannot reach offset"):
        coin_change_mod(12, [2, 4])
    with pytest.raises(ConfigError, match="multiples"):
        coin_change_mod(12, [12])


def test_large_ring_union_is_fast_enough_to_build():
    routes = coin_change_mod(65536, [1, 3, 11, 43, 173, 691, 2767, 11069])
    assert routes.hops.shape == (65536,)
    assert np.all(routes.hops[1:] >= 1)
    assert routes.diameter <= 8 * math.ceil(65536 ** (1 / 8))
