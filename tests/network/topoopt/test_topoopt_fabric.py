"""The topoopt and expander fabrics and the topoopt_ring algorithm on the normal pricing path."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import estimate_collective, make_fabric
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.collectives.topoopt_ring import TopoOptRing, ring_orders
from ddlsim.network.contention.flows import FlowJob, run_flows
from ddlsim.network.estimate import StepPricer, price_explicit, price_schedule
from ddlsim.network.fabrics.topoopt.fabric import TopoOptFabric
from ddlsim.network.fabrics.topoopt.topology_finder import AllReduceDemand, topology_finder
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.network.placement import Placement
from ddlsim.network.verify import verify_explicit

GBPS = 1e9


def _fabric(n: int = 128, degree: int = 4, bandwidth: float = 100 * GBPS, **extra) -> TopoOptFabric:
    """n servers of one GPU each."""
    return TopoOptFabric(num_servers=n, degree=degree, link_bandwidth_bps=bandwidth, link_latency_s=1e-6, **extra)


def test_default_config_is_the_section_5_3_cluster():
    fabric = make_fabric("topoopt")
    assert (fabric.num_servers, fabric.gpus_per_server, fabric.degree) == (128, 4, 4)
    assert (fabric.num_nodes, fabric.link_bandwidth_bps, fabric.link_latency_s) == (512, 1e11, 1e-6)
    assert fabric.shard(512).circulant_rules == (1, 3, 11, 37)
    assert fabric.shard(512) is fabric.shard(509)          # a partly used last server
    with pytest.raises(ConfigError, match="1008 ports"):
        make_fabric("topoopt", num_servers=2000)
    assert make_fabric("topoopt", num_servers=2000, check_port_count=False).num_servers == 2000
    with pytest.raises(ConfigError, match="384 ports"):
        make_fabric("topoopt", num_servers=400, switch="ocs_3d_mems")
    with pytest.raises(ConfigError, match="distinct rules"):
        make_fabric("topoopt", rules=[1, 1])


@pytest.mark.parametrize("n", [2, 7, 16, 128])
def test_topoopt_ring_all_reduce_matches_alpha_beta_over_d_rings(n):
    fabric = _fabric(n=n)
    size = 10**9
    rings = len(fabric.ring_plan(GroupLayout(n))[1])
    estimate = estimate_collective("all_reduce", size, n, fabric=fabric, algorithm="topoopt_ring", device=None)
    steps = 2 * (n - 1)
    assert estimate.num_steps == steps
    assert estimate.latency_s == pytest.approx(steps * 1e-6)
    assert estimate.transfer_s == pytest.approx(steps * size / (n * rings) * 8 / (100 * GBPS))
    # The generic ring uses one interface only: d times slower transfers on a d-ring shard.
    single = estimate_collective("all_reduce", size, n, fabric=fabric, algorithm="ring", device=None)
    assert single.transfer_s == pytest.approx(estimate.transfer_s * rings)


def test_topoopt_ring_is_best_for_large_all_reduce():
    estimate = estimate_collective("all_reduce", 10**9, 128, fabric=_fabric(), algorithm="best")
    assert estimate.algorithm == "topoopt_ring"
    estimate = estimate_collective("all_reduce", 10**9, 512, fabric=make_fabric("topoopt"), algorithm="best")
    assert estimate.algorithm == "topoopt_ring"


@pytest.mark.parametrize("op", ["all_reduce", "reduce_scatter", "all_gather"])
@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_topoopt_ring_explicit_schedules_verify_and_price_like_compact(op, gpus):
    algorithm = TopoOptRing()
    for servers in (*range(1, 25), 32, 97):
        n = servers * gpus
        if n < 2:
            continue
        fabric = _fabric(n=servers, degree=3, gpus_per_server=gpus)
        request = ScheduleRequest.single_group(op, n, fabric, size_bytes=10**6)
        explicit = algorithm.explicit(request)
        verify_explicit(explicit)
        by_step = price_explicit(fabric, explicit, request.layout, request.placement, 10**6, None)
        compact = price_schedule(StepPricer(fabric), algorithm.compact(request), request.layout,
                                 request.placement, 10**6, None)
        assert by_step.time_s == pytest.approx(compact.time_s, rel=1e-12)
        assert by_step.num_steps == compact.num_steps


def test_two_level_all_reduce_on_servers_of_four_gpus():
    fabric = make_fabric("topoopt")                 # 128 servers x 4 GPUs, 4 rings of 100 Gbps
    size = 10**9
    estimate = estimate_collective("all_reduce", size, 512, fabric=fabric, algorithm="topoopt_ring", device=None)
    # Inside servers: 2 x 3 steps of size / 4 over 2.4 Tbps; between servers: 2 x 127 steps of
    # size / (512 x 4) per ring, 4 GPUs sharing each server's link: size / (128 x 4) per link.
    inside = 2 * 3 * size / 4 * 8 / 2.4e12
    between = 2 * 127 * size / (128 * 4) * 8 / (100 * GBPS)
    assert estimate.transfer_s == pytest.approx(inside + between)
    assert estimate.num_steps == 2 * 3 + 2 * 127
    assert estimate.latency_s == pytest.approx(2 * 3 * 120e-9 + 2 * 127 * 1e-6)


def test_ring_orders_visit_every_member():
    orders = ring_orders(12, (1, 5, 7, 11))
    assert orders[1].tolist() == [0, 5, 10, 3, 8, 1, 6, 11, 4, 9, 2, 7]
    assert all(sorted(row) == list(range(12)) for row in orders.tolist())


def test_topoopt_ring_needs_a_topoopt_fabric():
    ideal = make_fabric("ideal", num_nodes=16)
    assert "co-designed" in TopoOptRing().supports(ideal, "all_reduce", 16)
    with pytest.raises(InfeasibleError, match="co-designed"):
        estimate_collective("all_reduce", 10**6, 16, fabric=ideal, algorithm="topoopt_ring")


def test_forwarded_traffic_loads_every_link_it_crosses():
    fabric = _fabric(n=12, degree=2)                 # rings +1 and +5 (ratio sqrt(12))
    layout, placement = GroupLayout(12), Placement(12)
    direct = fabric.price(Pairs(12, np.arange(12), (np.arange(12) + 5) % 12), layout, placement)
    relayed = fabric.price(Pairs(12, np.arange(12), (np.arange(12) + 3) % 12), layout, placement)
    assert direct.s_per_unit == pytest.approx(8 / (100 * GBPS))
    # offset 3 = 5 + 5 + 5 (mod 12): three hops, every ring +5 link carries three transfers.
    assert relayed.latency_s == pytest.approx(3e-6)
    assert relayed.s_per_unit == pytest.approx(3 * 8 / (100 * GBPS))


@pytest.mark.parametrize("gpus", [1, 3])
def test_full_mesh_closed_form_equals_listing(gpus):
    fabric = _fabric(n=10, degree=3, gpus_per_server=gpus, intra_server_bandwidth_bps=50 * GBPS)
    n = 10 * gpus
    layout, placement = GroupLayout(n), Placement(n)
    mesh = Mesh(n, np.zeros(n, dtype=np.int64), weight=2.0)
    closed = fabric.price(mesh, layout, placement)
    listed = TopoOptFabric.price_listed(fabric, mesh, layout, placement)
    pairs = mesh.pairs()
    by_pairs = fabric.price(Pairs(n, pairs.src, pairs.dst, pairs.weight), layout, placement)
    assert closed.s_per_unit == pytest.approx(by_pairs.s_per_unit)
    assert closed.latency_s == pytest.approx(by_pairs.latency_s)
    assert listed.s_per_unit == pytest.approx(by_pairs.s_per_unit)


def test_bandwidth_tax_report():
    fabric = _fabric(n=128, degree=4)
    src, dst = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
    report = fabric.traffic_report(src.ravel(), dst.ravel(), 1e6, num_servers=128)
    assert report.bandwidth_tax == pytest.approx(fabric.shard(128).mean_path_length())
    assert report.bandwidth_tax > 4
    neighbours = fabric.traffic_report(np.arange(128), (np.arange(128) + 37) % 128, 1e6)
    assert neighbours.bandwidth_tax == 1.0 and neighbours.max_hops == 1


def test_fabric_from_topology_finder_plan():
    n = 16
    layout = GroupLayout(n)
    demand = np.zeros((n, n))
    demand[0, :] = demand[:, 0] = 1e9
    np.fill_diagonal(demand, 0)
    plan = topology_finder(n, 4, [AllReduceDemand(layout, 4e10)], demand)
    fabric = TopoOptFabric.for_plan(plan, 100 * GBPS)
    assert fabric.ring_plan(layout) == (1, plan.rings[0].rules)
    assert fabric.shard(n) is plan.topology
    estimate = estimate_collective("all_reduce", 10**9, n, fabric=fabric, algorithm="topoopt_ring", device=None)
    rings = len(plan.rings[0].rules)
    assert estimate.transfer_s == pytest.approx(2 * (n - 1) * 10**9 / (n * rings) * 8 / (100 * GBPS))
    # A job of another size gets the default ring shard.
    assert fabric.shard(8).circulant_rules is not None


def test_strided_groups_use_their_own_rings():
    fabric = _fabric(n=32, degree=4)
    dp = GroupLayout(size=8, stride=4, num_ranks=32)
    assert fabric.ring_plan(dp) == (1, fabric.default_rules(8))
    estimate = estimate_collective("all_reduce", 10**8, fabric=fabric, algorithm="topoopt_ring", layout=dp)
    assert estimate.time_s > 0 and estimate.num_steps == 14


def test_job_larger_than_cluster_and_bad_rules():
    with pytest.raises(InfeasibleError, match="do not fit"):
        estimate_collective("all_reduce", 10**6, 256, fabric=_fabric(n=128))
    fabric = make_fabric("topoopt", rules=[1, 3])
    with pytest.raises(InfeasibleError, match="coprime"):
        estimate_collective("all_reduce", 10**6, 6, fabric=fabric, algorithm="ring")


def test_network_cost_of_the_job_shard():
    cost = make_fabric("topoopt").network_cost(512)
    assert cost.scope == "job" and cost.components["patch_panel_ports"] == 2 * 128 * 4
    with pytest.raises(InfeasibleError, match="no price"):
        make_fabric("topoopt", switch="rotornet", num_servers=64).network_cost(64)


def test_expander_fabric():
    fabric = make_fabric("expander", gpus_per_server=1)
    shard = fabric.shard(128)
    assert shard.out_degree().tolist() == [4] * 128
    ring = estimate_collective("all_reduce", 10**9, 128, fabric=fabric, algorithm="ring", device=None)
    topo = estimate_collective("all_reduce", 10**9, 128, fabric=_fabric(), algorithm="ring", device=None)
    assert ring.time_s > topo.time_s          # ring neighbours are rarely adjacent in a random graph
    assert fabric.shard(3).num_links == 6     # a small job: a triangle
    assert make_fabric("expander", seed=1).shard(512).num_links == 512
    with pytest.raises(ConfigError):
        make_fabric("expander", num_servers=10, degree=10)
    assert make_fabric("expander").network_cost(512).components["nics"] == 512


def test_per_step_circuits_as_ramp_assumes():
    fabric = make_fabric("topoopt", num_servers=12, gpus_per_server=1, degree=2, circuits="per_step",
                         reconfiguration="5us")
    layout, placement = GroupLayout(12), Placement(12)
    # A permutation (offset 3, not a ring rule of the shard) still gets direct circuits.
    shift = fabric.price(Pairs(12, np.arange(12), (np.arange(12) + 3) % 12), layout, placement)
    assert shift.s_per_unit == pytest.approx(8 / (2 * 100 * GBPS)) and shift.latency_s == pytest.approx(1e-6)
    # A full mesh: 11 peers over 2 interfaces = 6 rounds; 11 units per server at 2 x 100 Gbps.
    mesh = Mesh(12, np.zeros(12, dtype=np.int64))
    closed = fabric.price(mesh, layout, placement)
    pairs = mesh.pairs()
    listed = fabric.price(Pairs(12, pairs.src, pairs.dst, pairs.weight), layout, placement)
    assert closed.s_per_unit == pytest.approx(listed.s_per_unit) == pytest.approx(11 * 8 / (2 * 100 * GBPS))
    assert closed.latency_s == pytest.approx(listed.latency_s) == pytest.approx(6 * 1e-6 + 5 * 5e-6)
    assert fabric.setup_time_s("a", "b") == 5e-6 and fabric.setup_time_s("a", "a") == 0.0
    assert make_fabric("topoopt").setup_time_s("a", "b") == 0.0
    with pytest.raises(ConfigError, match="per_step"):
        make_fabric("topoopt", circuits="sometimes")


@pytest.mark.parametrize("nodes", [np.arange(1, 32, 2), np.arange(16, 32)], ids=["odd_gpus", "second_half"])
def test_a_job_placed_beyond_its_own_shard_is_priced_on_the_routes_flows_take(nodes):
    """A 16-rank job whose ranks sit on servers past its own 8-server shard (another job's place,
    a spread placement) is priced on the cluster's topology, the one `route` and flow level use:
    before, the shard's ring offsets wrapped around, and the rhd step between servers i and i + 8
    cost nothing (its all-reduce 4.71 ms against 3.54 ms at flow level, on odd GPUs)."""
    fabric = make_fabric("topoopt", num_servers=16, gpus_per_server=2, degree=4)
    layout, placement = GroupLayout(16), Placement(16, nodes)
    request = ScheduleRequest(CollectiveOp.ALL_REDUCE, 16, 0, 16 * 2**20, fabric, layout, placement)
    rhd = ALGORITHMS.make("rhd")
    pricer = StepPricer(fabric)
    compact = fabric.prepare(rhd.compact(request), layout, placement)
    step_s = [pricer.cost(step.pattern, layout, placement).s_per_unit for step in compact.steps
              if step.is_communication]
    assert min(step_s) > 0
    priced = price_schedule(pricer, compact, layout, placement, 16 * 2**20, None).time_s
    alone = run_flows(fabric, [FlowJob(rhd.explicit(request), 16 * 2**20, nodes[None, :])]).jobs[0].isolated_s
    assert priced == pytest.approx(alone, rel=0.01)
