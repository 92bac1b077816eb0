"""TopologyFinder (Algorithm 1): degree split, rings, Blossom MP matchings, routing."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.topoopt.mp_topology import mp_matchings
from ddlsim.network.fabrics.topoopt.topology_finder import (
    AllReduceDemand,
    split_degree,
    topology_finder,
)


def test_split_degree_by_traffic_share():
    assert split_degree(4, 1.0, 0.0) == (4, 0)
    assert split_degree(4, 1.0, 0.8) == (3, 1)     # ceil(4 x 1/1.8) = 3
    assert split_degree(8, 1.0, 0.8) == (5, 3)     # ceil(8 x 0.556) = 5
    assert split_degree(4, 0.0, 1.0) == (1, 3)     # AllReduce keeps one degree for connectivity
    assert split_degree(4, 0.0, 0.0) == (4, 0)
    with pytest.raises(ConfigError):
        split_degree(0, 1.0, 1.0)


def test_blossom_rounds_halve_used_pairs():
    demand = np.zeros((4, 4))
    demand[0, 1] = demand[2, 3] = 10.0
    demand[0, 2] = demand[1, 3] = 6.0
    rounds = mp_matchings(demand, 2)
    assert rounds[0] == [(0, 1), (2, 3)]           # weight 20 beats 12
    assert rounds[1] == [(0, 2), (1, 3)]           # halved: 5 + 5 = 10 < 12
    # Without any demand left a round matches nothing.
    assert mp_matchings(np.zeros((4, 4)), 1) == [[]]


def test_blossom_reuses_a_dominant_pair():
    demand = np.zeros((3, 3))
    demand[0, 1] = 100.0
    demand[1, 2] = 1.0
    assert mp_matchings(demand, 3) == [[(0, 1)], [(0, 1)], [(0, 1)]]   # 100 -> 50 -> 25 > 1


def _dlrm_example_demand() -> np.ndarray:
    # Section 2.1: four embedding tables on S0, S3, S8 and S13 of 16 servers send their
    # activations to (and receive gradients from) every other server.
    demand = np.zeros((16, 16))
    for owner in (0, 3, 8, 13):
        demand[owner, :] = 32e6
        demand[:, owner] = 32e6
    np.fill_diagonal(demand, 0.0)
    return demand


def test_dlrm_example_topology():
    layout = GroupLayout(size=16, num_ranks=16)
    plan = topology_finder(16, 3, [AllReduceDemand(layout, 4e9 * 16)], _dlrm_example_demand())
    assert plan.allreduce_degree == 3 and plan.mp_degree == 0          # AllReduce dominates
    assert plan.rings[0].rules == (1, 3, 7)             # ratio 16^(1/3) = 2.52: 2.5 -> 3, 7.6 -> 7
    topology = plan.topology
    assert topology.circulant_rules == (1, 3, 7)
    assert topology.out_degree().tolist() == [3] * 16
    assert topology.in_degree().tolist() == [3] * 16

    # With a larger MP share one degree goes to Blossom matchings around the table owners.
    # MP: 108 pairs x 320 MB = 3.5e10 B; AllReduce 6e10 B: d_A = ceil(4 x 0.63) = 3.
    plan = topology_finder(16, 4, [AllReduceDemand(layout, 6e10)], _dlrm_example_demand() * 10)
    assert (plan.allreduce_degree, plan.mp_degree) == (3, 1)
    pairs = plan.matchings[0]
    owners = {0, 3, 8, 13}
    # Only pairs touching a table owner have demand: one owner per matched pair, all owners used.
    assert len(pairs) == 4 and all(len(owners & {u, v}) == 1 for u, v in pairs)
    assert plan.topology.circulant_rules is None
    assert plan.topology.out_degree().max() <= 4
    assert plan.topology.in_degree().max() <= 4


def test_several_allreduce_kinds_share_the_degree():
    n = 16
    tp = GroupLayout(size=4, stride=1, num_ranks=n)      # groups of 4 consecutive servers
    dp = GroupLayout(size=4, stride=4, num_ranks=n)      # the matching strided groups
    plan = topology_finder(n, 4, [AllReduceDemand(dp, 3.0), AllReduceDemand(tp, 1.0)])
    # d_dp = ceil(4 x 0.75) = 3 but a group of 4 has only 2 rings (p = 1, 3); d_tp = 1 by share,
    # and the degree left over goes to the kind that still has a ring candidate.
    assert [(r.layout.stride, r.rules) for r in plan.rings] == [(4, (1, 3)), (1, (1, 3))]
    assert plan.topology.out_degree().tolist() == [4] * n
    assert plan.unused_degree == 0
    src, dst = np.array([0, 5]), np.array([12, 7])
    assert plan.topology.hops(src, dst).tolist() == [1, 2]


def test_mp_demand_shape_is_checked():
    with pytest.raises(ConfigError, match="must be 8 x 8"):
        topology_finder(8, 2, [], np.zeros((4, 4)))
    with pytest.raises(ConfigError, match="must equal the 8 servers"):
        topology_finder(8, 2, [AllReduceDemand(GroupLayout(size=4), 1.0)])
