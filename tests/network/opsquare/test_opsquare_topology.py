"""OPSquare topology and two-hop routing, from the paper's Section 2 (golden examples)."""

import itertools

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.opsquare import INTER_POD, Hop, OpsquareTopology
from ddlsim.network.fabrics.opsquare.params import SCALES, OpsquareParams


def test_paper_scales():
    small, large = OpsquareParams.at_scale(256).topology, OpsquareParams.at_scale(1024).topology
    assert (small.num_pods, small.pod_size, small.num_nodes) == (16, 16, 256)
    assert (large.num_pods, large.pod_size, large.num_groups, large.split, large.num_nodes) == (32, 32, 8, 4, 1024)
    assert set(SCALES) == {256, 1024}


def test_switch_and_transceiver_counts_at_1024():
    topo = OpsquareTopology(32, 32, 8)
    assert topo.channels_per_node == 9  # P intra-pod transceivers + 1 inter-pod
    assert (topo.num_inter_switches, topo.inter_switch_ports) == (32, 32)  # one N x N switch per node index
    assert (topo.num_intra_switches, topo.intra_switch_ports) == (32 * 8, 32)  # P M x M switches per pod


def test_golden_routes_at_1024():
    topo = OpsquareTopology(32, 32, 8)  # node = pod * 32 + index, group = index // 4
    assert topo.route(1, 1) == ()
    assert topo.route(1, 2) == (Hop(1, 2, 0),)  # same group of the same pod
    assert topo.route(1, 5) == (Hop(1, 5, 1),)  # group 0 -> group 1
    assert topo.route(29, 1) == (Hop(29, 1, 1),)  # group 7 -> group 0 wraps around: (0 - 7) mod 8
    assert topo.route(1, 33) == (Hop(1, 33, INTER_POD),)  # pod 0 -> pod 1, same index: one inter-pod hop
    # pod 0 index 1 -> pod 3 index 17: inter-pod switch 1 to pod 3 index 1, then its intra-pod channel 4
    assert topo.route(1, 113) == (Hop(1, 97, INTER_POD), Hop(97, 113, 4))


def test_at_most_two_hops_everywhere():
    topo = OpsquareTopology(16, 16, 4)
    src, dst = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    hops = topo.hop_count(src, dst)
    assert hops.max() == 2
    assert (hops == 0).sum() == 256
    # one hop: the 15 other pod members and the 15 same-index nodes of other pods
    assert np.all((hops == 1).sum(axis=1) == 30)


@pytest.mark.parametrize(("pods", "size", "groups"), [(3, 6, 3), (4, 4, 1), (2, 8, 8), (5, 1, 1)])
def test_routes_use_only_existing_links(pods, size, groups):
    topo = OpsquareTopology(pods, size, groups)
    for src, dst in itertools.product(range(topo.num_nodes), repeat=2):
        hops = topo.route(src, dst)
        assert len(hops) == int(topo.hop_count(src, dst))
        node = src
        for hop in hops:
            assert hop.src == node
            reach = topo.inter_reach(node) if hop.is_inter_pod else topo.intra_reach(node, hop.channel)
            assert hop.dst in reach
            node = hop.dst
        assert node == dst
        assert sum(hop.is_inter_pod for hop in hops) <= 1


def test_each_receiver_hears_exactly_split_transmitters():
    topo = OpsquareTopology(2, 12, 3)
    heard = {}
    for node in range(topo.num_nodes):
        for channel in range(topo.num_groups):
            reach = topo.intra_reach(node, channel)
            assert len(reach) == topo.split
            for target in reach:
                heard.setdefault((target, channel), set()).add(node)
    assert len(heard) == topo.num_nodes * topo.num_groups
    assert all(len(sources) == topo.split for sources in heard.values())
    # the P channels of a node together reach its whole pod (itself included)
    assert set().union(*(topo.intra_reach(0, c) for c in range(3))) == set(range(12))


def test_invalid_topologies_are_config_errors():
    with pytest.raises(ConfigError, match="num_groups = 5: must divide pod_size = 32"):
        OpsquareTopology(32, 32, 5)
    with pytest.raises(ConfigError, match="num_pods"):
        OpsquareTopology(0, 32, 8)
    with pytest.raises(ConfigError, match="node = 1024"):
        OpsquareTopology(32, 32, 8).route(0, 1024)
    with pytest.raises(ConfigError, match="num_nodes = 512"):
        OpsquareParams.at_scale(512)


def test_params_parse_units_from_config():
    params = OpsquareParams.at_scale(1024)
    assert params.channel_bps == 3.6e12
    assert params.forward_latency_s == pytest.approx(80e-9)
    assert params.hop_latency_s == pytest.approx(40e-9)
    assert params.buffer_bytes == 10**6
