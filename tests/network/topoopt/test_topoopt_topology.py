"""Host-based forwarding on direct-connect topologies: distances, link loads, bandwidth tax."""

from __future__ import annotations

from collections import defaultdict

import networkx as nx
import numpy as np
import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.network.fabrics.topoopt.topology import DirectTopology


def _all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    keep = src != dst
    return src[keep], dst[keep]


def _ecmp_oracle(topology: DirectTopology, flows) -> np.ndarray:
    """Recursive per-hop even split over shortest-path next links, with networkx distances."""
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(range(topology.num_nodes))
    for index, (u, v) in enumerate(zip(topology.link_src.tolist(), topology.link_dst.tolist())):
        graph.add_edge(u, v, key=index)
    loads = defaultdict(float)

    def push(node, target, amount, dist):
        if node == target:
            return
        links = [(key, v) for _, v, key in graph.out_edges(node, keys=True) if dist[v] == dist[node] - 1]
        for key, v in links:
            loads[key] += amount / len(links)
            push(v, target, amount / len(links), dist)

    for s, t, size in flows:
        dist = nx.single_target_shortest_path_length(graph, t)
        push(s, t, size, dict(dist))
    return np.array([loads[i] for i in range(topology.num_links)])


def test_circulant_distances_match_networkx():
    topology = DirectTopology.circulant(20, [1, 3, 7])
    graph = nx.DiGraph(list(zip(topology.link_src.tolist(), topology.link_dst.tolist())))
    lengths = dict(nx.all_pairs_shortest_path_length(graph))
    expected = np.array([[lengths[s][t] for t in range(20)] for s in range(20)])
    assert (topology.distance == expected).all()
    generic = DirectTopology(20, topology.link_src, topology.link_dst, topology.link_kind)
    assert (generic.distance == expected).all()


def test_coin_routed_flow_loads_every_link_it_crosses():
    topology = DirectTopology.circulant(12, [1, 5])
    loads = topology.link_loads(np.array([2]), np.array([5]), np.array([100.0]))
    # offset 3 = 5 + 5 + 5 (mod 12): links 2->7, 7->0, 0->5 of ring +5 (link index 12 + source).
    assert loads.sum() == 300.0
    assert loads[[12 + 2, 12 + 7, 12 + 0]].tolist() == [100.0, 100.0, 100.0]


def test_ring_neighbour_traffic_pays_no_tax():
    topology = DirectTopology.circulant(16, [1, 3, 7])
    src = np.arange(16)
    for rule in (1, 3, 7):
        assert topology.bandwidth_tax(src, (src + rule) % 16, 1e6) == 1.0
        loads = topology.link_loads(src, (src + rule) % 16, 1e6)
        assert np.count_nonzero(loads) == 16 and loads.max() == 1e6


def test_all_to_all_tax_is_mean_path_length():
    for topology in (DirectTopology.circulant(24, [1, 5, 7]),
                     DirectTopology.from_parts(10, [(np.arange(10), (np.arange(10) + 1) % 10, "allreduce"),
                                                    (np.array([0, 5]), np.array([5, 0]), "mp")])):
        src, dst = _all_pairs(topology.num_nodes)
        assert topology.bandwidth_tax(src, dst, 1.0) == pytest.approx(topology.mean_path_length())


def test_ecmp_matches_recursive_oracle():
    rng = np.random.default_rng(7)
    graph = nx.random_regular_graph(3, 14, seed=3)
    edges = np.array(list(graph.edges()))
    topology = DirectTopology.from_parts(14, [(edges[:, 0], edges[:, 1], "expander"),
                                              (edges[:, 1], edges[:, 0], "expander"),
                                              (np.array([0, 1]), np.array([1, 0]), "mp")])
    src = rng.integers(0, 14, 40)
    dst = rng.integers(0, 14, 40)
    size = rng.random(40) * 1e6
    expected = _ecmp_oracle(topology, zip(src.tolist(), dst.tolist(), size.tolist()))
    assert np.allclose(topology.link_loads(src, dst, size), expected)


def test_parallel_links_share_load():
    topology = DirectTopology.from_parts(3, [(np.array([0, 0, 1, 2]), np.array([1, 1, 2, 0]), "mp")])
    loads = topology.link_loads(np.array([0]), np.array([2]), np.array([10.0]))
    assert loads.tolist() == [5.0, 5.0, 10.0, 0.0]


def test_disconnected_and_invalid_topologies():
    topology = DirectTopology.from_parts(4, [(np.array([0, 1]), np.array([1, 0]), "mp")])
    with pytest.raises(InfeasibleError, match="not connected"):
        _ = topology.distance
    with pytest.raises(ConfigError):
        DirectTopology.from_parts(3, [(np.array([0]), np.array([0]), "mp")])
    with pytest.raises(ConfigError, match="coprime"):
        DirectTopology.circulant(12, [1, 4])


@pytest.mark.parametrize(("n", "rule"), [(10, 1), (10, 3), (17, 5)])
def test_single_ring_arcs_match_shortest_paths(n, rule):
    ring = DirectTopology.circulant(n, [rule])
    generic = DirectTopology(n, ring.link_src, ring.link_dst, ring.link_kind)
    rng = np.random.default_rng(n)
    src, dst = rng.integers(0, n, 60), rng.integers(0, n, 60)
    size = rng.random(60)
    assert np.allclose(ring.link_loads(src, dst, size), generic.link_loads(src, dst, size))


def test_huge_single_ring_routes_without_tables():
    ring = DirectTopology.circulant(65536, [1])
    assert ring.hops(np.array([0, 5]), np.array([65535, 4])).tolist() == [65535, 65535]
    loads = ring.link_loads(np.arange(65536), (np.arange(65536) + 2) % 65536, 1.0)
    assert loads.min() == loads.max() == 2.0


def test_shift_closed_form_matches_routed_loads():
    rng = np.random.default_rng(5)
    for n, rules in ((12, [1, 5]), (30, [1, 7, 11]), (64, [1, 3, 11, 37]), (17, [3])):
        topology = DirectTopology.circulant(n, rules)
        nodes = np.arange(n)
        offsets = rng.choice(np.arange(1, n), size=3, replace=False)
        src = np.concatenate([nodes] * 3)
        dst = np.concatenate([(nodes + o) % n for o in offsets])
        size = np.repeat(rng.random(3) * 10, n)
        per_ring, longest = topology.shift_loads(src, dst, size)
        loads = topology.link_loads(src, dst, size).reshape(len(rules), n)
        assert np.allclose(loads, per_ring[:, None])            # every link of a ring alike
        assert longest == topology.hops(src, dst).max()
        # Not whole shifts: one server missing, or unequal bytes within an offset.
        assert topology.shift_loads(src[1:], dst[1:], size[1:]) is None
        uneven = size.copy()
        uneven[0] += 1
        assert topology.shift_loads(src, dst, uneven) is None
