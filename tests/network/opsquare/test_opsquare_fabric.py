"""The analytical OPSquare fabric: routes, relay loads, and collectives through the core's pricer."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import CollectiveEstimator
from ddlsim.network.api import estimate_collective, make_fabric
from ddlsim.network.fabrics.opsquare.fabric import OpsquareFabric
from ddlsim.network.patterns import Mesh, Pairs, shift_pairs
from ddlsim.network.placement import Placement

CHANNEL_S_PER_BYTE = 8 / 3.6e12
HOP_S = 30e-9 + 10e-9  # optical preamble + label processing (no fibre by default)


@pytest.fixture(scope="module")
def fabric() -> OpsquareFabric:
    return make_fabric("opsquare")  # 1,024 nodes: 32 pods of 32, 8 groups


def price(fabric, src, dst, weights=1.0):
    pattern = Pairs(fabric.num_nodes, np.atleast_1d(src), np.atleast_1d(dst), weights)
    return fabric.price(pattern, GroupLayout(fabric.num_nodes), Placement(fabric.num_nodes))


def test_one_flow_latency_by_hop_count(fabric):
    assert price(fabric, 1, 2).latency_s == pytest.approx(HOP_S)  # intra-pod
    assert price(fabric, 1, 33).latency_s == pytest.approx(HOP_S)  # same index, next pod
    assert price(fabric, 1, 113).latency_s == pytest.approx(2 * HOP_S + 80e-9)  # relayed by node 97
    assert price(fabric, 1, 113).s_per_unit == pytest.approx(CHANNEL_S_PER_BYTE)


def test_golden_route_resources(fabric):
    routes = fabric.route(np.array([1]), np.array([113]), np.ones(1))
    channels, receivers = 9, 1024 * 9
    assert [int(h[0]) for h in routes.hops] == [1 * channels + 8, receivers + 97 * channels + 8,
                                               97 * channels + 4, receivers + 113 * channels + 4]


def test_relay_shares_its_transmitter(fabric):
    # node 97 forwards 1 -> 113 on its channel 4 and sends its own flow 97 -> 114 on the same channel
    assert price(fabric, [1, 97], [113, 114]).s_per_unit == pytest.approx(2 * CHANNEL_S_PER_BYTE)
    # a flow to another group uses another channel: no sharing
    assert price(fabric, [1, 97], [113, 98]).s_per_unit == pytest.approx(CHANNEL_S_PER_BYTE)


def test_ring_over_all_nodes_has_no_contention(fabric):
    ring = shift_pairs(1024, 1, 1024, 1)
    cost = fabric.price(ring, GroupLayout(1024), Placement(1024))
    assert cost.s_per_unit == pytest.approx(CHANNEL_S_PER_BYTE)
    assert cost.latency_s == pytest.approx(2 * HOP_S + 80e-9)  # pod boundaries are relayed


def test_all_to_all_inside_a_pod_vs_across_pods(fabric):
    pod_group = fabric.price(Mesh(32, np.zeros(32, dtype=np.int64)), GroupLayout(32, 1, 1024), Placement(1024))
    index_group = fabric.price(Mesh(32, np.zeros(32, dtype=np.int64)), GroupLayout(32, 32, 1024), Placement(1024))
    # inside a pod each of the P = 8 channels reaches F = 4 nodes; across pods one channel carries 31
    assert pod_group.s_per_unit == pytest.approx(4 * CHANNEL_S_PER_BYTE)
    assert index_group.s_per_unit == pytest.approx(31 * CHANNEL_S_PER_BYTE)
    assert pod_group.latency_s == pytest.approx(HOP_S) and index_group.latency_s == pytest.approx(HOP_S)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"])
@pytest.mark.parametrize("num_ranks", [8, 96, 1024])
def test_collectives_price_through_the_core(fabric, op, num_ranks):
    estimate = estimate_collective(op, 64 * 2**20, num_ranks, fabric, "best")
    assert estimate.fabric == "opsquare" and np.isfinite(estimate.time_s) and estimate.time_s > 0
    # a rank must receive (n - 1) / n of the buffer over at most its P + 1 = 9 receivers
    bound = 64 * 2**20 * CHANNEL_S_PER_BYTE * (num_ranks - 1) / num_ranks / 9
    if op in ("all_gather", "reduce_scatter"):
        assert estimate.transfer_s >= bound * (1 - 1e-9)


def test_ring_all_reduce_is_bandwidth_optimal_on_opsquare(fabric):
    estimate = estimate_collective("all_reduce", 10**9, 1024, fabric, "ring", device=None)
    assert estimate.num_steps == 2046
    assert estimate.transfer_s == pytest.approx(2 * 1023 / 1024 * 10**9 * CHANNEL_S_PER_BYTE)
    assert estimate.latency_s == pytest.approx(2046 * (2 * HOP_S + 80e-9))


def test_scales_and_errors():
    small = make_fabric("opsquare", num_pods=16, pod_size=16, num_groups=4)
    assert small.num_nodes == 256 and small.domain_sizes() == (16, 256)
    with pytest.raises(InfeasibleError, match="2048 ranks"):
        estimate_collective("all_reduce", 10**6, 2048, make_fabric("opsquare"), "ring")
    with pytest.raises(ConfigError, match="fabric.num_groups = 3"):
        make_fabric("opsquare", num_groups=3)
    with pytest.raises(ConfigError, match="fabric.channel_bandwidth"):
        make_fabric("opsquare", channel_bandwidth="-1Tbps")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_closed_form_mesh_equals_listed_pairs(data):
    pods = data.draw(st.integers(1, 4))
    groups = data.draw(st.sampled_from([1, 2, 3]))
    size = groups * data.draw(st.integers(1, 3))
    fabric = make_fabric("opsquare", num_pods=pods, pod_size=size, num_groups=groups)
    n = fabric.num_nodes
    group_size = data.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    stride = data.draw(st.sampled_from([d for d in range(1, n // group_size + 1) if (n // group_size) % d == 0]))
    num_ranks = data.draw(st.sampled_from([m for m in range(group_size * stride, n + 1, group_size * stride)]))
    layout = GroupLayout(group_size, stride, num_ranks)
    blocks = np.array(data.draw(st.lists(st.integers(-1, 2), min_size=group_size, max_size=group_size)))
    nodes = np.array(data.draw(st.permutations(list(range(n)))))[:num_ranks]
    placement = Placement(num_ranks, nodes)
    mesh = Mesh(group_size, blocks, weight=data.draw(st.sampled_from([1.0, 2.5])))
    closed = fabric.price_mesh(mesh, layout, placement)
    listed = fabric.price_listed(mesh, layout, placement)
    assert closed.s_per_unit == pytest.approx(listed.s_per_unit, rel=1e-12, abs=0)
    assert closed.latency_s == pytest.approx(listed.latency_s, rel=1e-12, abs=0)


def test_closed_form_mesh_at_1024_nodes_matches_listing(fabric):
    for layout in (GroupLayout(1024), GroupLayout(32, 32, 1024), GroupLayout(64, 1, 1024), GroupLayout(16, 8, 1024)):
        mesh = Mesh(layout.size, np.zeros(layout.size, dtype=np.int64))
        closed = fabric.price_mesh(mesh, layout, Placement(1024))
        listed = fabric.price_listed(mesh, layout, Placement(1024))
        assert closed.s_per_unit == pytest.approx(listed.s_per_unit) and closed.latency_s == listed.latency_s


OPSQUARE_256 = make_fabric("opsquare", num_pods=16, pod_size=16, num_groups=4)
ESTIMATOR = CollectiveEstimator(OPSQUARE_256, "best")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(list(CollectiveOp)), size=st.integers(0, 10**10), ranks=st.integers(1, 300))
def test_any_call_prices_to_a_finite_time_and_more_bytes_never_help(op, size, ranks):
    if op is CollectiveOp.SEND_RECV:
        ranks = 2
    if op is CollectiveOp.BARRIER:
        size = 0
    if ranks > 256:
        with pytest.raises(InfeasibleError, match="do not fit"):
            ESTIMATOR.estimate(op, size, num_ranks=ranks)
        return
    result = ESTIMATOR.estimate(op, size, num_ranks=ranks)
    assert all(np.isfinite(part) and part >= 0 for part in (result.time_s, result.latency_s, result.transfer_s))
    assert (result.time_s > 0) == (ranks >= 2)
    if op is not CollectiveOp.BARRIER:
        assert ESTIMATOR.estimate(op, 2 * size + 1, num_ranks=ranks).time_s >= result.time_s * (1 - 1e-12)
