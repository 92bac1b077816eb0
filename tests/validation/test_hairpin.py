"""The suite's router on a stick (`ddlsim.validation.hairpin`): a routed flow crosses its switch's
trunk twice, so in the fluid engine it loads the trunk with 16 bits per byte (closed form below);
`test_simgrid_reference.py` checks the same cases against SimGrid, which lists the trunk twice."""

from __future__ import annotations

import pytest

from ddlsim.app.catalog import load_all
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.contention.flows import compile_jobs, run_flows
from ddlsim.validation.contention_suite import CASES, FABRIC_BUILDERS, MB, collective

load_all()


def test_the_suite_has_paths_that_cross_a_link_twice():
    hairpins = [case for case in CASES if case.fabric == "one_armed_router"]
    assert len(hairpins) >= 2
    for case in hairpins:
        problem = compile_jobs(*case.build())
        assert problem.routes.bits_per_byte.max() == 2 * BITS_PER_BYTE


def test_a_ring_of_routed_flows_shares_its_trunk_twice_per_flow():
    """Ring 0 -> 1 -> 2 -> 3 -> 0 behind one switch: every neighbour has the other parity, so every
    flow is routed, in and back out of the 200 Gbps trunk: 4 flows x 2 crossings share it, 25 Gbps each."""
    fabric = FABRIC_BUILDERS["one_armed_router"]()
    size = 16 * MB
    run = run_flows(fabric, [collective(fabric, "ring", "all_reduce", [0, 1, 2, 3], size)])
    step_s = 2 * fabric.latency_s + (size / 4) * BITS_PER_BYTE / (fabric.trunk_bps / 8)
    assert run.jobs[0].duration_s == pytest.approx(2 * 3 * step_s, rel=1e-9)


def test_flows_inside_one_vlan_never_touch_the_trunk():
    fabric = FABRIC_BUILDERS["one_armed_router"]()
    problem = compile_jobs(fabric, [collective(fabric, "ring", "all_reduce", [0, 2, 4, 6], 16 * MB)])
    trunks = {2 * fabric.num_nodes, 2 * fabric.num_nodes + 1}
    assert not trunks & {int(r) for r in problem.routes.fabric_resource}
