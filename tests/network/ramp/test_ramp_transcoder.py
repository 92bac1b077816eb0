"""The RAMP network transcoder: Eqs. 2-5, wavelengths, subnets, timeslots, contention."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.network.collectives.rampx.plan import RampXPlan
from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.fabrics.ramp.transcoder import (
    STEP_RULES,
    SUBNET_KINDS,
    additional_transceivers,
    assign_step,
    contention_violations,
    effective_io_bandwidth_bps,
    payload_bytes_per_slot,
    plan_step,
)


def step_transfers(plan: RampXPlan, fabric: RampDims, step: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Fabric (src, dst) nodes of one RAMP-x step of a job placed at the fabric's origin."""
    g, j, lam = plan.rank_coords()
    nodes = fabric.node_id(g, j, lam)
    if plan.formulation == 1 and step == 4:
        ranks = np.arange(plan.num_ranks)
        return nodes[ranks], nodes[plan.ring_successor(ranks)], plan.radix(4)
    peers = plan.peers(step)
    src = np.repeat(np.arange(plan.num_ranks), peers.shape[1])
    dst = peers.ravel()
    keep = src != dst
    return nodes[src[keep]], nodes[dst[keep]], peers.shape[1]


def test_eq3_and_eq5() -> None:
    assert additional_transceivers(32, 32) == 0
    assert additional_transceivers(32, 2) == 16
    assert additional_transceivers(32, 4) == 2
    assert additional_transceivers(3, 2) == 2
    # x - 1 transceivers of 400 Gbps in the first steps at maximum scale (RAMP 5).
    assert effective_io_bandwidth_bps(400e9, 1, 32, 32) == pytest.approx(31 * 400e9)


def test_minimum_message_per_slot_is_950_bytes() -> None:
    assert payload_bytes_per_slot(400e9, 20e-9, 0.05) == pytest.approx(950.0)


@pytest.mark.parametrize("kind", SUBNET_KINDS)
@pytest.mark.parametrize("formulation", [1, 2])
def test_fig8_example_is_contention_free_in_one_round(kind: str, formulation: int) -> None:
    fabric = RampDims(3, 3, 6)
    plan = RampXPlan(3, 3, 6, formulation)
    for step in plan.active_steps:
        src, dst, members = step_transfers(plan, fabric, step)
        use_all = formulation == 1 and step == 4
        decided = plan_step(fabric, src, dst, members=members, rule=STEP_RULES[step], use_all=use_all, kind=kind)
        assert decided.rounds == 1, (step, decided)
        assignment = assign_step(fabric, src, dst, 10_000, rule=STEP_RULES[step], per_pair=decided.per_pair, kind=kind)
        assert assignment.num_rounds == 1
        assert not any(contention_violations(fabric, assignment, kind).values())
    assert decided.per_pair == (3 if formulation == 1 or kind == "route_switch" else 1)


def test_transcoder_output_for_step_1_of_the_example() -> None:
    fabric = RampDims(3, 3, 6)
    plan = RampXPlan(3, 3, 6, 2)
    src, dst, _ = step_transfers(plan, fabric, 1)
    assignment = assign_step(fabric, src, dst, 1900, per_pair=1)
    rows = assignment.rows(fabric)
    assert len(rows) == 54 * 2
    g_src, j_src, _ = fabric.coords(src)
    g_dst, _, lam_dst = fabric.coords(dst)
    assert np.array_equal(assignment.wavelength, lam_dst)  # B&S: the receiver's wavelength
    assert np.array_equal(assignment.transceiver, (g_src + g_dst + j_src) % 3)  # Eq. 2
    assert assignment.slots_per_round == 2  # 1,900 B over one 950 B slot payload
    assert {row["first_slot"] for row in rows} == {0}


def test_eq2_collides_at_receivers_in_step_3_when_x_is_even() -> None:
    fabric = RampDims(4, 4, 8)
    plan = RampXPlan(4, 4, 8, 2)
    src, dst, members = step_transfers(plan, fabric, 3)
    assert plan_step(fabric, src, dst, members=members, rule="eq2").rounds == 2
    assert plan_step(fabric, src, dst, members=members, rule="dst_group_src_rack").rounds == 1


def test_a_small_job_on_a_large_ramp_gets_eq3_additional_transceivers() -> None:
    fabric = RampDims(32, 32, 64)
    plan = RampXPlan(3, 3, 6, 2)
    src, dst, members = step_transfers(plan, fabric, 1)
    decided = plan_step(fabric, src, dst, members=members)
    assert decided.per_pair == 1 + additional_transceivers(32, 3) == 7
    assignment = assign_step(fabric, src, dst, 1e6, per_pair=decided.per_pair)
    assert assignment.num_rounds == 1
    assert not any(contention_violations(fabric, assignment, "broadcast_select").values())


@pytest.mark.slow
def test_maximum_scale_steps() -> None:
    fabric = RampDims(32, 32, 64)
    mesh, ring = RampXPlan(32, 32, 64, 2), RampXPlan(32, 32, 64, 1)
    for step in (1, 2, 3):
        src, dst, members = step_transfers(mesh, fabric, step)
        decided = plan_step(fabric, src, dst, members=members, rule=STEP_RULES[step])
        assert (decided.per_pair, decided.rounds) == (1, 1)  # x - 1 = 31 transceivers busy
    src, dst, members = step_transfers(mesh, fabric, 4)
    assert plan_step(fabric, src, dst, members=members).per_pair == 1  # all racks share each subnet
    src, dst, members = step_transfers(ring, fabric, 4)
    assert plan_step(fabric, src, dst, members=members, use_all=True).per_pair == 32  # "x for the last"
    src, dst, members = step_transfers(ring, fabric, 3)
    assert plan_step(fabric, src, dst, members=members, rule=STEP_RULES[3]).rounds == 2
