"""Declared shared resources (`ddlsim.network.contention.resources`): the bound's capacities, each
collective's demand on them, feasibility alone, and physics for concurrent sets of real collectives."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.app.catalog import load_all
from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.bounds import bound_terms
from ddlsim.network.contention.fluid import FluidNetwork
from ddlsim.network.contention.resources import SharedResources, position_bytes

load_all()
Op = CollectiveOp
FABRICS = ("ideal", "superpod", "torus2d", "topoopt_fat_tree_oversub", "ramp", "opsquare_65k")
OPS = (Op.ALL_REDUCE, Op.ALL_GATHER, Op.REDUCE_SCATTER, Op.ALL_TO_ALL, Op.BROADCAST, Op.SEND_RECV)


def layouts(num_ranks: int) -> list[GroupLayout]:
    """TP-like (inner), DP-like (strided) and whole-job groups."""
    return [GroupLayout(8, 1, num_ranks), GroupLayout(num_ranks // 8, 8, num_ranks),
            GroupLayout(num_ranks, 1, num_ranks)]


@pytest.mark.parametrize("name", FABRICS)
def test_resources_are_the_bounds_capacities(name):
    fabric = make_fabric(name)
    shared = SharedResources.of(fabric)
    described = shared.describe()
    assert described["node egress"] == fabric.node_egress_bps()
    assert described["node ingress"] == fabric.node_ingress_bps()
    for cut in fabric.domain_cuts():
        assert described[f"{cut.size_nodes}-node domain egress"] == cut.egress_bps
    assert (described.get("bisection") or None) == fabric.bisection_bps()
    assert shared.kind_capacity_bps()[shared.kinds].tolist() == shared.capacity_bps.tolist()


@pytest.mark.parametrize("name", FABRICS)
def test_every_collective_alone_fits_its_resources_over_its_own_price(name):
    """Spread over its isolated price, a collective never asks a resource for more than it has:
    so alone it runs at its own price under the contention engine."""
    fabric = make_fabric(name)
    shared = SharedResources.of(fabric)
    estimator = CollectiveEstimator(fabric, "best")
    ranks = min(fabric.num_nodes, 256)
    for op in OPS:
        for layout in layouts(ranks):
            if op is Op.SEND_RECV:
                layout = GroupLayout(2, layout.stride, layout.job_ranks)
            call = CollectiveCall(op, 64 * 2**20, layout)
            time_s = estimator.estimate_call(call).time_s
            demand = shared.demand(op, call.size_bytes, layout)
            rate_bps = demand.bits / time_s
            assert np.all(rate_bps <= shared.capacity_bps[demand.resources] * (1 + 1e-9)), (op, layout)
            collapsed = shared.collapse(demand)
            assert collapsed.bits.max() == pytest.approx(demand.bits.max())
            terms = bound_terms(fabric, op, call.size_bytes, layout)
            busiest_s = float((demand.bits / shared.capacity_bps[demand.resources]).max())
            assert busiest_s == pytest.approx(max(terms.egress_s, terms.ingress_s, terms.bisection_s,
                                                  terms.domain_s), rel=1e-9)


def test_rooted_ops_put_the_roots_bytes_on_the_root():
    out, into = position_bytes(Op.BROADCAST, 100, 4, 2)
    assert out.tolist() == [0, 0, 100, 0] and into.tolist() == [100, 100, 0, 100]
    out, into = position_bytes(Op.GATHER, 100, 4, 0)
    assert out.tolist() == [0, 25, 25, 25] and into.tolist() == [75, 0, 0, 0]


@pytest.mark.parametrize("name", ("superpod", "torus2d", "topoopt_fat_tree_oversub"))
def test_a_concurrent_set_of_collectives_never_beats_its_busiest_resource(name):
    """The bound extended to concurrent sets: started together, the set ends no sooner than its
    summed bits on its busiest declared resource allow, and no member ends before its own price."""
    fabric = make_fabric(name)
    shared = SharedResources.of(fabric)
    estimator = CollectiveEstimator(fabric, "best")
    ranks = min(fabric.num_nodes, 256)
    rng = np.random.default_rng(7)
    for _ in range(12):
        network = FluidNetwork(shared.capacity_bps)
        loads = np.zeros(shared.size)
        alone = {}
        for key in range(int(rng.integers(2, 5))):
            op = OPS[int(rng.integers(0, 4))]
            layout = layouts(ranks)[int(rng.integers(0, 3))]
            size = int(2 ** rng.integers(16, 30))
            time_s = estimator.estimate_call(CollectiveCall(op, size, layout)).time_s
            demand = shared.demand(op, size, layout)
            network.submit(key, time_s, demand.resources, demand.bits / time_s, max_fill=1.0)
            np.add.at(loads, demand.resources, demand.bits)
            alone[key] = time_s
        ends = {}
        while network.busy():
            ends.update(network.advance())
        busiest_s = float((loads / shared.capacity_bps).max())
        assert max(ends.values()) >= busiest_s * (1 - 1e-9)
        for key, end_s in ends.items():
            assert end_s >= alone[key] * (1 - 1e-9)


def test_two_collectives_on_the_same_nics_share_them():
    """Two equal DP all-reduces on the same DGX NICs at once: each takes twice its time alone
    when the NICs bind (they do: the DP traffic crosses each DGX's 8 NICs)."""
    fabric = make_fabric("superpod")
    shared = SharedResources.of(fabric)
    layout = GroupLayout(16, 8, 128)
    call = CollectiveCall(Op.ALL_REDUCE, 256 * 2**20, layout)
    time_s = CollectiveEstimator(fabric, "ring").estimate_call(call).time_s
    demand = shared.demand(call.op, call.size_bytes, layout)
    busiest_s = float((demand.bits / shared.capacity_bps[demand.resources]).max())
    network = FluidNetwork(shared.capacity_bps)
    for key in ("a", "b"):
        network.submit(key, time_s, demand.resources, demand.bits / time_s, max_fill=1.0)
    ends = dict(network.advance())
    # Each runs at the pace the shared busiest resource allows both: together 2 x bits / capacity.
    expected_s = max(time_s, 2 * busiest_s)
    assert ends["a"] == pytest.approx(expected_s) and ends["b"] == pytest.approx(expected_s)
    assert expected_s > time_s * 1.5
    assert BITS_PER_BYTE == 8
