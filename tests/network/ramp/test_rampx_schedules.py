"""RAMP-x schedules on RAMP: functional checks, Table 8 sizes, placement, Eq. 1, pricing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.collectives.rampx import broadcast as bcast
from ddlsim.network.collectives.rampx.algorithm import RampX, RampXRing
from ddlsim.network.collectives.rampx.layout import RampXLayout
from ddlsim.network.estimate import StepPricer, price_explicit, price_schedule
from ddlsim.network.fabrics.ramp.fabric import RampConfig, RampFabric
from ddlsim.network.fabrics.ramp.placement import active_steps, job_dims, rampx_unsupported_reason
from ddlsim.network.placing import place_ranks
from ddlsim.network.reduction import ReductionModel
from ddlsim.network.verify import compare_views, verify_explicit

OPS = [op for op in CollectiveOp if op is not CollectiveOp.SEND_RECV]
FIG8 = RampFabric.from_config(RampConfig(x=3, racks=3, wavelengths=6))
LARGE = RampFabric.from_config(RampConfig())
MID = RampFabric.from_config(RampConfig(x=8, racks=8, wavelengths=16))


def request(op, n, fabric, root=0, size=1 << 20) -> ScheduleRequest:
    return ScheduleRequest.single_group(op, n, fabric, root=root, size_bytes=size, placement=place_ranks(fabric, n))


@pytest.mark.parametrize("algorithm", [RampX(), RampXRing()], ids=["rampx", "rampx_ring"])
@pytest.mark.parametrize("op", OPS, ids=[op.value for op in OPS])
def test_fig8_example_every_op_is_correct_and_both_views_agree(algorithm, op) -> None:
    for root in ([0, 31, 53] if op.is_rooted else [0]):
        req = request(op, 54, FIG8, root, size=10**9)
        explicit = algorithm.explicit(req)
        verify_explicit(explicit, seed=root)
        compare_views(algorithm.compact(req), explicit)


@pytest.mark.parametrize("algorithm", [RampX(), RampXRing()], ids=["rampx", "rampx_ring"])
@pytest.mark.parametrize("n", [5, 12, 27, 96])
def test_smaller_and_irregular_jobs_on_the_maximum_ramp(algorithm, n) -> None:
    assert algorithm.supports(LARGE, "all_reduce", n) is None
    for op in OPS:
        req = request(op, n, LARGE, root=n - 1)
        explicit = algorithm.explicit(req)
        verify_explicit(explicit)
        compare_views(algorithm.compact(req), explicit)


def test_step_counts_follow_the_paper() -> None:
    counts = {op: RampX().compact(request(op, 54, FIG8)).num_steps for op in OPS}
    assert counts[CollectiveOp.REDUCE_SCATTER] == counts[CollectiveOp.ALL_GATHER] == 4  # log_x N
    assert counts[CollectiveOp.ALL_REDUCE] == counts[CollectiveOp.REDUCE] == 8  # "8 for reduce and all-reduce"
    assert counts[CollectiveOp.ALL_TO_ALL] == counts[CollectiveOp.BARRIER] == 4


def _fractions(op, n, fabric, algorithm=None) -> list[float]:
    schedule = (algorithm or RampX()).compact(request(op, n, fabric))
    return [float(step.fraction) for step in schedule.steps if step.is_communication]


def test_table8_message_sizes_per_step() -> None:
    x, racks, lam = 3, 3, 6
    rs = [1 / x, 1 / x**2, 1 / (racks * x**2), 1 / (racks * lam * x)]
    assert _fractions("reduce_scatter", 54, FIG8) == pytest.approx(rs)
    assert _fractions("scatter", 54, FIG8) == pytest.approx(rs)
    assert _fractions("all_to_all", 54, FIG8) == pytest.approx([1 / x, 1 / x, 1 / racks, x / lam])
    # All-gather / gather: Table 8 lists the buffer after Copy (m = one rank's piece, 1/54 of the
    # whole); each peer receives the buffer held before the step, so the Copy sizes are k times these.
    piece = 1 / 54
    sent = _fractions("all_gather", 54, FIG8)
    copies = [lam / x, racks * lam / x, racks * lam, racks * lam * x]
    radices = [2, 3, 3, 3]  # steps 4, 3, 2, 1 in execution order
    assert [s * k for s, k in zip(sent, radices)] == pytest.approx([piece * c for c in copies])
    assert _fractions("gather", 54, FIG8) == pytest.approx(sent)
    assert _fractions("barrier", 54, FIG8) == [0.0] * 4


def test_placement_minimises_algorithmic_steps() -> None:
    assert job_dims(65536, 32, 32, 64) == (32, 32, 64)
    assert job_dims(54, 3, 3, 6) == (3, 3, 6)
    assert job_dims(30, 32, 32, 64) == (1, 1, 30)  # one step: 30 nodes of one rack exchange directly
    assert active_steps(*job_dims(64, 32, 32, 64)) == 2
    assert rampx_unsupported_reason(67, LARGE.dims) is not None  # a prime above 33: no equivalent RAMP
    assert "exceed" in rampx_unsupported_reason(70000, LARGE.dims)
    assert RampX().supports(MID, "all_reduce", 67) is not None
    nodes = place_ranks(LARGE, 54).nodes
    g, j, lam = LARGE.dims.coords(nodes)
    assert (g.max(), j.max(), lam.max()) == (0, 1, 26)  # the box (1, 2, 27) at the origin: 2 steps


def test_layout_recovers_the_box_from_the_placement() -> None:
    lay = RampXLayout.for_request(request("all_reduce", 54, FIG8), 2)
    assert (lay.plan.x, lay.plan.racks, lay.plan.wavelengths) == (3, 3, 6)
    assert np.array_equal(np.sort(lay.inforank), np.arange(54))


def test_eq1_stage_count() -> None:
    alpha, beta, m = 1.4e-6, 8 / 12.8e12, 1e9
    k = bcast.pipeline_stages(m, 3, alpha, beta)
    best = min(range(1, 500), key=lambda s: bcast.pipeline_time_s(s, m, 3, alpha, beta))
    assert k == best == round(math.sqrt(m * beta / alpha))
    # The printed form sqrt(m (s-2) / alpha) * beta changes with the time unit; the optimum does not.
    assert bcast.eq1_as_printed(m, 3, alpha, beta) != pytest.approx(bcast.eq1_as_printed(m, 3, alpha * 1e9, beta * 1e9))
    assert bcast.pipeline_stages(m, 3, alpha * 1e9, beta * 1e9) == k
    assert bcast.pipeline_stages(m, 2, alpha, beta) == 1


def test_broadcast_tree_has_three_levels_and_k_plus_one_steps() -> None:
    lay = RampXLayout.for_request(request("broadcast", 54, FIG8), 2)
    first, forwarding = bcast.tree(lay, 0)
    assert first.size == 8  # the 9 nodes sharing the root's node number, minus the root
    assert len(forwarding) == 5 and all(r.size == 9 for r in forwarding.values())  # one per other number
    req = request("broadcast", 54, FIG8, size=10**9)
    k = RampX().stages(req, lay)
    assert RampX().compact(req).num_steps == k + 1 and k > 1


@pytest.mark.parametrize("op", ["all_reduce", "all_to_all", "broadcast", "gather", "barrier"])
@pytest.mark.parametrize("algorithm", [RampX(), RampXRing()], ids=["rampx", "rampx_ring"])
def test_compact_and_explicit_views_get_the_same_price(op, algorithm) -> None:
    model = ReductionModel.from_datasheet()
    for fabric, n in ((FIG8, 54), (MID, 96)):
        req = request(op, n, fabric, size=0 if op == "barrier" else 10**8)
        compact = price_schedule(StepPricer(fabric), algorithm.compact(req), req.layout, req.placement,
                                 req.size_bytes, model)
        explicit = price_explicit(fabric, algorithm.explicit(req), req.layout, req.placement, req.size_bytes, model)
        assert compact.time_s == pytest.approx(explicit.time_s, rel=1e-9)
        assert compact.num_steps == explicit.num_steps


def test_reduce_scatter_time_on_1024_nodes_by_hand() -> None:
    """x = J = 8, Lambda = 16: four steps of m/8, m/64, m/512, m/1024 per peer, one transceiver group each."""
    req = request("reduce_scatter", 1024, MID, size=10**9)
    cost = price_schedule(StepPricer(MID), RampX().compact(req), req.layout, req.placement, req.size_bytes, None)
    payload = 950.0
    slots = [math.ceil(10**9 / d / payload) for d in (8, 64, 512, 1024)]
    assert cost.transfer_s == pytest.approx(sum(slots) * 20e-9, rel=1e-9)
    assert cost.latency_s == pytest.approx(4 * 1.4e-6)


def test_network_cost_of_the_fabric() -> None:
    cost = LARGE.network_cost(65536)
    assert cost.capex_usd == pytest.approx(2097152 * 600 + 32768 * 3000)
    assert cost.power_w == pytest.approx(2097152 * 3.4)
    assert LARGE.table2()["total_capacity_bps"] == pytest.approx(0.8388608e18)


@pytest.mark.parametrize("name", ["rhd", "bruck", "direct", "binary_tree"])
def test_generic_algorithms_without_pipelines_price_the_same_in_both_views_on_ramp(name) -> None:
    """Ring and RHD on RAMP (6.3.1) go through the same transcoder; pipelined algorithms (class
    windows) are priced per class in the compact view, an approximation documented in docs/ramp.md."""
    from ddlsim.core.registry import ALGORITHMS

    algorithm = ALGORITHMS.make(name)
    model = ReductionModel.from_datasheet()
    for fabric, n in ((FIG8, 54), (LARGE, 64)):
        for op in sorted(algorithm.ops):
            if algorithm.supports(fabric, op, n) is not None:
                continue
            req = request(op, n, fabric, size=0 if op is CollectiveOp.BARRIER else 10**8)
            compact = price_schedule(StepPricer(fabric), algorithm.compact(req), req.layout, req.placement,
                                     req.size_bytes, model)
            explicit = price_explicit(fabric, algorithm.explicit(req), req.layout, req.placement, req.size_bytes,
                                      model)
            assert compact.time_s == pytest.approx(explicit.time_s, rel=1e-9), (name, op)
