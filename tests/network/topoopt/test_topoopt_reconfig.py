"""OCS-reconfig (Algorithm 5) circuits and the reconfigurable-fabric iteration engine."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.topoopt.circuits import ReconfigPolicy
from ddlsim.network.fabrics.topoopt.ocs_reconfig import allocate_circuits, connect_circuits, ocs_reconfig
from ddlsim.training.reconfiguration import ReconfigPhase as Phase
from ddlsim.training.reconfiguration import simulate_reconfiguring as simulate_reconfigurable

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
    first = _ring_demand(n, 1e8)
    second = np.zeros((n, n))
    second[np.arange(n), (np.arange(n) + 3) % n] = 4e9
    phases = [Phase(demand=first), Phase(compute_s=0.02), Phase(demand=second)]
    policy = ReconfigPolicy(2, 100 * GBPS, reconfiguration_s=0.01, period_s=0.05)
    result = simulate_reconfigurable(phases, n, policy, iterations=1)
    # The +3 transfers start on the +1 circuits (forwarded, 3 hops each) until the 50 ms epoch
    # measures them; Algorithm 5 then gives them direct circuits after a 10 ms pause.
    assert result.reconfigurations == 1 and result.paused_s == pytest.approx(0.01)
    start = 1e8 * 8 / (2 * 100 * GBPS) + 0.02
    moved = (0.05 - start) * 2 * 100 * GBPS / 8 / 3        # bytes per pair before the epoch
    expected = 0.05 + 0.01 + (4e9 - moved) * 8 / (2 * 100 * GBPS)
    assert result.iteration_times_s[0] == pytest.approx(expected)
    faster = ReconfigPolicy(2, 100 * GBPS, reconfiguration_s=1e-6, period_s=0.05)
    quick = simulate_reconfigurable(phases, n, faster, iterations=1)
    assert quick.iteration_times_s[0] == pytest.approx(expected - 0.01 + 1e-6)
    # Measuring no demand (during compute) keeps the circuits.
    idle = simulate_reconfigurable([Phase(demand=first), Phase(compute_s=0.2), Phase(demand=first)], n, policy)
    assert idle.reconfigurations == 0


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


def _algorithm5_literal(demand: np.ndarray, degree: int, discount: bool) -> np.ndarray:
    """Algorithm 5 as written: pick the highest-demand listed pair, one interface at a time."""
    remaining = np.array(demand, dtype=float)
    n = remaining.shape[0]
    np.fill_diagonal(remaining, 0.0)
    listed = remaining > 0
    links = np.zeros((n, n), dtype=int)
    free_tx, free_rx = np.full(n, degree), np.full(n, degree)
    while True:
        masked = np.where(listed, remaining, -np.inf)
        flat = int(np.argmax(masked))
        if masked.flat[flat] == -np.inf:
            return links
        src, dst = divmod(flat, n)
        links[src, dst] += 1
        remaining[src, dst] *= 0.5 if discount else 1.0
        free_tx[src] -= 1
        free_rx[dst] -= 1
        if free_tx[src] == 0:
            listed[src, :] = False
        if free_rx[dst] == 0:
            listed[:, dst] = False


@pytest.mark.parametrize("discount", [True, False])
def test_fast_algorithm5_equals_the_literal_one(discount):
    rng = np.random.default_rng(3)
    for trial in range(60):
        n, degree = int(rng.integers(2, 14)), int(rng.integers(1, 5))
        demand = rng.random((n, n)) * (rng.random((n, n)) < 0.6)
        if trial % 3 == 0:
            demand = np.round(demand * 3)                        # many ties
        assert np.array_equal(allocate_circuits(demand, degree, discount=discount),
                              _algorithm5_literal(demand, degree, discount))


def test_on_demand_rounds_scale_with_bandwidth_and_size():
    n = 9
    demand = np.full((n, n), 1e6)
    np.fill_diagonal(demand, 0.0)
    slow = ReconfigPolicy(2, 10 * GBPS, 25e-6, period_s=None, forwarding=False, discount=False)
    fast = ReconfigPolicy(2, 40 * GBPS, 25e-6, period_s=None, forwarding=False, discount=False)
    a = simulate_reconfigurable([Phase(demand=demand)], n, slow, iterations=1)
    b = simulate_reconfigurable([Phase(demand=demand)], n, fast, iterations=1)
    c = simulate_reconfigurable([Phase(demand=2 * demand)], n, slow, iterations=1)
    assert a.reconfigurations == b.reconfigurations == c.reconfigurations
    data = a.iteration_times_s[0] - a.paused_s
    assert b.iteration_times_s[0] - b.paused_s == pytest.approx(data / 4)
    assert c.iteration_times_s[0] - c.paused_s == pytest.approx(2 * data)
    # Greedy Algorithm 5 needs more rounds than the n - 1 permutations of an ideal schedule.
    assert a.reconfigurations + 1 >= n - 1
