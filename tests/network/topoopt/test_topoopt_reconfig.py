"""OCS-reconfig (Algorithm 5) circuits and the reconfigurable-fabric iteration engine."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from ddlsim.errors import ConfigError
from ddlsim.network.fabrics.topoopt.ocs_reconfig import allocate_circuits, connect_circuits, ocs_reconfig
from ddlsim.network.fabrics.topoopt.reconfig_sim import Phase, ReconfigPolicy, simulate_reconfigurable

GBPS = 1e9


def _ring_demand(n: int, size_bytes: float) -> np.ndarray:
    demand = np.zeros((n, n))
    demand[np.arange(n), (np.arange(n) + 1) % n] = size_bytes
    return demand


def test_algorithm5_gives_highest_demand_first_and_halves_it():
    demand = np.zeros((3, 3))
    demand[0, 1] = 8.0
    demand[0, 2] = 5.0
    demand[1, 2] = 1.0
    links = allocate_circuits(demand, 2)
    # 0->1 (8), then 0->2 (5 beats the halved 4): node 0's two transmitters are used; 1->2 last.
    assert links.tolist() == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    # Without the discount (SiP-ML), every pair keeps its demand and takes all the interfaces it can.
    assert allocate_circuits(demand, 2, discount=False).tolist() == [[0, 2, 0], [0, 0, 2], [0, 0, 0]]


def test_algorithm5_respects_degree():
    rng = np.random.default_rng(1)
    demand = rng.random((12, 12))
    links = allocate_circuits(demand, 3)
    assert links.sum(axis=1).max() <= 3 and links.sum(axis=0).max() <= 3
    assert np.trace(links) == 0
    with pytest.raises(ConfigError):
        allocate_circuits(demand, 0)


def test_zero_demand_gets_a_connecting_ring_with_forwarding():
    links = ocs_reconfig(np.zeros((6, 6)), 2)
    assert links.sum() == 6 and all(links[i, (i + 1) % 6] == 1 for i in range(6))
    assert ocs_reconfig(np.zeros((6, 6)), 2, forwarding=False).sum() == 0


def test_two_edge_replacement_joins_busy_components():
    # Two 2-server islands whose interfaces are all busy: only a swap can join them.
    links = np.zeros((4, 4), dtype=int)
    links[0, 1] = links[1, 0] = links[2, 3] = links[3, 2] = 1
    joined = connect_circuits(links, 1)
    assert joined.sum(axis=1).tolist() == [1, 1, 1, 1] and joined.sum(axis=0).tolist() == [1, 1, 1, 1]
    graph = nx.DiGraph(list(zip(*np.nonzero(joined))))
    assert nx.is_strongly_connected(graph)


def test_ring_allreduce_runs_at_full_degree_bandwidth():
    n, degree, size = 8, 4, 1e8
    phases = [Phase(compute_s=0.01), Phase(demand=_ring_demand(n, size))]
    policy = ReconfigPolicy(degree, 100 * GBPS, reconfiguration_s=0.01, period_s=0.05)
    result = simulate_reconfigurable(phases, n, policy, iterations=1)
    # Circuits start planned for this demand: all four interfaces of server i go to i + 1.
    assert result.iteration_times_s[0] == pytest.approx(0.01 + size * 8 / (degree * 100 * GBPS))
    assert result.reconfigurations == 0


def test_periodic_reconfiguration_pauses_flows():
    n = 8
    ring = _ring_demand(n, 2e9)
    policy = ReconfigPolicy(2, 100 * GBPS, reconfiguration_s=0.01, period_s=0.05)
    # The compute phase spans an epoch: circuits are re-planned for zero demand (a ring), so
    # the transfer pays a 10 ms pause at the next epoch when the demand is measured again.
    result = simulate_reconfigurable([Phase(compute_s=0.06), Phase(demand=ring)], n, policy, iterations=1)
    assert result.reconfigurations >= 1
    static = 0.06 + 2e9 * 8 / (2 * 100 * GBPS)
    assert result.iteration_times_s[0] > static
    faster = ReconfigPolicy(2, 100 * GBPS, reconfiguration_s=1e-6, period_s=0.05)
    quick = simulate_reconfigurable([Phase(compute_s=0.06), Phase(demand=ring)], n, faster, iterations=1)
    assert quick.iteration_times_s[0] < result.iteration_times_s[0]


def test_sipml_on_demand_rounds_serve_all_to_all_without_forwarding():
    n, size = 6, 1e6
    demand = np.full((n, n), size)
    np.fill_diagonal(demand, 0.0)
    policy = ReconfigPolicy(1, 10 * GBPS, reconfiguration_s=25e-6, period_s=None, forwarding=False, discount=False)
    result = simulate_reconfigurable([Phase(demand=demand)], n, policy, iterations=1)
    # Degree 1 without forwarding: at most one destination per server per round, n - 1 rounds of
    # size bytes each at 10 Gbps, plus a reconfiguration before every round but the first.
    rounds = result.reconfigurations + 1
    assert rounds >= n - 1
    assert result.iteration_times_s[0] == pytest.approx(rounds * size * 8 / (10 * GBPS) + result.paused_s)


def test_policy_and_phase_validation():
    with pytest.raises(ConfigError):
        ReconfigPolicy(0, 1e9, 0.01)
    with pytest.raises(ConfigError):
        ReconfigPolicy(1, 1e9, 0.01, period_s=0.0)
    with pytest.raises(ConfigError):
        Phase(compute_s=-1.0)
    with pytest.raises(ConfigError, match="must be 4 x 4"):
        simulate_reconfigurable([Phase(demand=np.zeros((3, 3)))], 4, ReconfigPolicy(1, 1e9, 0.01))
