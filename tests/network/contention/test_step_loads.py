"""Per-step link loads of a collective's compact view (`ddlsim.network.contention.step_loads`)."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.registry import build
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.contention import step_loads
from ddlsim.network.contention.phase_run import PhasedCall, run_phased
from ddlsim.network.contention.step_loads import call_phases, pattern_loads
from ddlsim.network.estimate import StepPricer, price_schedule
from ddlsim.network.patterns import Mesh
from ddlsim.validation.contention_suite import FABRIC_BUILDERS

MB = 1 << 20


def _phases(fabric_name: str, algorithm: str, op: str, layout: GroupLayout, size_bytes: int):
    fabric = FABRIC_BUILDERS[fabric_name]()
    placement = fabric.place(layout.job_ranks)
    request = ScheduleRequest(CollectiveOp(op), layout.size, 0, size_bytes, fabric, layout, placement)
    schedule = fabric.prepare(build("collective", algorithm).compact(request), layout, placement)
    priced = price_schedule(StepPricer(fabric), schedule, layout, placement, size_bytes, None)
    return fabric, call_phases(fabric, schedule, layout, placement, size_bytes), priced


@pytest.mark.parametrize("fabric_name, algorithm, op, layout", [
    ("fat_tree_4to1", "ring", "all_reduce", GroupLayout(8, 8, 64)),
    ("fat_tree", "direct", "all_to_all", GroupLayout(16, 4, 64)),
    ("ideal", "binary_tree", "broadcast", GroupLayout(16, 1, 16)),
    ("torus2d", "torus2d", "all_reduce", GroupLayout(16, 1, 16)),
    ("topoopt", "topoopt_ring", "all_reduce", GroupLayout(16, 1, 16)),
])
def test_phases_add_up_to_the_priced_latency_and_transfer(fabric_name, algorithm, op, layout):
    fabric, phases, priced = _phases(fabric_name, algorithm, op, layout, 16 * MB)
    assert phases.time_s == pytest.approx(priced.latency_s + priced.transfer_s, rel=1e-12)
    assert any(phase.loads_links for phase in phases.phases)
    for phase in phases.phases:
        if phase.loads_links:  # alone, the busiest link of a phase is full
            capacity = fabric.capacity_bps()[phase.resources]
            assert float(np.max(phase.bits_per_second / capacity)) == pytest.approx(1.0, rel=1e-12)


def test_a_phase_alone_runs_at_its_priced_time():
    fabric, phases, priced = _phases("fat_tree_4to1", "ring", "all_reduce", GroupLayout(8, 8, 64), 16 * MB)
    [end] = run_phased(fabric.capacity_bps(), [PhasedCall(phases, start_s=1e-3)])
    assert end == pytest.approx(1e-3 + priced.latency_s + priced.transfer_s, rel=1e-12)


def test_loads_count_flows_a_direct_all_to_all_puts_n_minus_1_on_a_nic_where_a_ring_puts_one():
    _, ring, _ = _phases("ideal", "ring", "all_gather", GroupLayout(8, 1, 8), 8 * MB)
    _, mesh, _ = _phases("ideal", "direct", "all_to_all", GroupLayout(8, 1, 8), 8 * MB)
    assert float(ring.phases[0].bits_per_byte.max()) == 8.0
    assert float(mesh.phases[0].bits_per_byte.max()) == 7 * 8.0


def test_two_rings_crossing_one_4to1_leaf_each_take_twice_as_long():
    fabric = FABRIC_BUILDERS["fat_tree_4to1"]()
    calls = []
    for nodes in ([0, 16, 4, 20, 8, 24, 12, 28], [1, 17, 5, 21, 9, 25, 13, 29]):
        from ddlsim.network.placement import Placement

        layout, placement = GroupLayout(8), Placement(8, np.array(nodes))
        request = ScheduleRequest(CollectiveOp.ALL_REDUCE, 8, 0, 16 * MB, fabric, layout, placement)
        schedule = build("collective", "ring").compact(request)
        calls.append(PhasedCall(call_phases(fabric, schedule, layout, placement, 16 * MB)))
    alone = run_phased(fabric.capacity_bps(), calls[:1])[0]
    together = run_phased(fabric.capacity_bps(), calls)
    assert together == pytest.approx([together[0], together[0]])
    assert together[0] / alone == pytest.approx(2.0, rel=0.05)


def test_a_huge_mesh_is_loaded_by_sampled_shifts_with_exact_node_links(monkeypatch):
    fabric = FABRIC_BUILDERS["fat_tree"]()
    layout = GroupLayout(64)
    placement = fabric.place(64)
    mesh = Mesh(64, np.zeros(64, dtype=np.int64))
    full_links, full_bits = pattern_loads(fabric, mesh, layout, placement)
    monkeypatch.setattr(step_loads, "MAX_LISTED_FLOWS", 64 * 16)  # 16 of the 63 shifts: 4 near ones each way
    links, bits = pattern_loads(fabric, mesh, layout, placement)
    full = dict(zip(full_links.tolist(), full_bits.tolist()))
    sampled = dict(zip(links.tolist(), bits.tolist()))
    # each GPU's own links: NVLink to its 3 server mates and its NIC to the other 60 (8 bits per byte)
    node_links = {link: value for link, value in full.items() if value in (3 * 8.0, 60 * 8.0)}
    assert len(node_links) == 4 * 64
    for link, value in node_links.items():
        assert sampled[link] == pytest.approx(value)
    assert set(sampled) == set(full)
    assert sum(sampled.values()) == pytest.approx(sum(full.values()), rel=0.1)
