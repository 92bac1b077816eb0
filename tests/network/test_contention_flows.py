"""Concurrent collectives at flow level (`ddlsim.network.contention.flows`): closed forms where
sharing is simple, the physical bounds (one collective never beats `lower_bound_s`; a concurrent
set never beats the bytes on its busiest resource), per-flow routes that add up to the fabric's
own loads, lockstep step times, and one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsim.app.catalog import load_all
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS, FABRICS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network import make_fabric
from ddlsim.network.bounds import lower_bound_s
from ddlsim.network.contention.flow_routes import route_pairs
from ddlsim.network.contention.flows import FlowJob, compile_jobs, run_flows
from ddlsim.network.placement import Placement
from ddlsim.network.schedule import ExplicitSchedule, ExplicitStep
from ddlsim.validation.contention_suite import CASES, FABRIC_BUILDERS, MB, collective

load_all()
BANDWIDTH_BPS, LATENCY_S = 100e9, 1e-6
RELATIVE = 1e-9


def _ideal(num_nodes: int = 16):
    return FABRICS.make("ideal", num_nodes=num_nodes, bandwidth="100Gbps", latency="1us")


def _bound_placement(job: FlowJob, fabric) -> tuple[GroupLayout, Placement]:
    if isinstance(job.nodes, GroupLayout):
        return job.nodes, job.placement or fabric.place(job.nodes.job_ranks)
    nodes = np.asarray(job.nodes).reshape(-1)
    return GroupLayout(nodes.size), Placement(nodes.size, nodes)


def _busiest_resource_s(problem) -> float:
    """Seconds the busiest resource needs for every byte every job puts on it."""
    routes = problem.routes
    loads = np.zeros(routes.capacity_bps.size)
    for job in problem.jobs:
        for step in job.steps:
            for pair, size in zip(step.pair, step.size_bytes):
                resources, bits = routes.of(pair)
                np.add.at(loads, resources, bits * size)
    return float((loads / routes.capacity_bps).max(initial=0.0))


# -- closed forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [4, 8, 16])
def test_two_identical_ring_allreduces_on_the_same_ports_halve_each_flow(n):
    fabric = _ideal(n)
    size = n * MB
    jobs = [collective(fabric, "ring", "all_reduce", GroupLayout(n), size) for _ in range(2)]
    run = run_flows(fabric, jobs)
    step_alone_s = LATENCY_S + size / n * BITS_PER_BYTE / BANDWIDTH_BPS
    step_shared_s = LATENCY_S + 2 * size / n * BITS_PER_BYTE / BANDWIDTH_BPS
    for job in run.jobs:
        assert job.isolated_s == pytest.approx(2 * (n - 1) * step_alone_s, rel=RELATIVE)
        assert job.duration_s == pytest.approx(2 * (n - 1) * step_shared_s, rel=RELATIVE)
        assert job.slowdown > 1


def test_multicast_copies_are_separate_flows():
    """A multicast step is one flow per copy: the source's port carries every copy."""
    fabric = _ideal(4)
    step = ExplicitStep(np.array([0, 0, 0]), np.array([1, 2, 3]), np.zeros(3), np.zeros(3), False, multicast=True)
    schedule = ExplicitSchedule(CollectiveOp.BROADCAST, 4, "one_step", (step,), 1, 1.0)
    run = run_flows(fabric, [FlowJob(schedule, 4 * MB, GroupLayout(4))])
    assert run.num_flows == 3
    assert run.jobs[0].duration_s == pytest.approx(LATENCY_S + 3 * 4 * MB * BITS_PER_BYTE / BANDWIDTH_BPS,
                                                   rel=RELATIVE)


def test_rows_of_one_pair_in_a_step_merge_into_one_flow():
    fabric = _ideal(8)
    step = ExplicitStep(np.array([0, 0, 1]), np.array([1, 1, 2]), np.array([0, 1, 0]), np.array([0, 1, 0]), False)
    schedule = ExplicitSchedule(CollectiveOp.ALL_GATHER, 4, "hand", (step,), 4, 0.25)
    problem = compile_jobs(fabric, [FlowJob(schedule, 8 * MB, GroupLayout(4, 1, 8))])
    (flows,) = problem.jobs[0].steps
    assert flows.pair.size == 4  # (0,1) and (1,2) in each of the two groups
    assert flows.size_bytes.sum() == pytest.approx(3 * 2 * 0.25 * 8 * MB)
    assert sorted(flows.size_bytes) == pytest.approx([2 * MB, 2 * MB, 4 * MB, 4 * MB])


def test_groups_on_disjoint_ports_do_not_slow_each_other():
    fabric = _ideal(16)
    jobs = [collective(fabric, "ring", "all_reduce", list(range(0, 8)), 8 * MB),
            collective(fabric, "rhd", "all_reduce", list(range(8, 16)), 8 * MB)]
    for job in run_flows(fabric, jobs).jobs:
        assert job.end_s == pytest.approx(job.isolated_end_s, rel=1e-12)


def test_a_job_that_starts_after_the_other_ends_runs_as_alone():
    fabric = _ideal(8)
    first = collective(fabric, "ring", "all_reduce", GroupLayout(8), 8 * MB)
    alone = run_flows(fabric, [first]).jobs[0].end_s
    second = collective(fabric, "ring", "all_reduce", GroupLayout(8), 8 * MB, start_s=alone * 1.5)
    for job in run_flows(fabric, [first, second]).jobs:
        assert job.slowdown == pytest.approx(1.0, rel=1e-12)


def test_steps_run_in_lockstep():
    fabric = FABRIC_BUILDERS["fat_tree_4to1"]()
    jobs = [collective(fabric, "ring", "all_reduce", GroupLayout(8, 1, 64), 4 * MB),
            collective(fabric, "rhd", "all_reduce", GroupLayout(8, 8, 64), 4 * MB, start_s=1e-4)]
    for spec, job in zip(jobs, run_flows(fabric, jobs).jobs):
        assert job.step_start_s[0] == spec.start_s
        assert np.array_equal(job.step_start_s[1:], job.step_end_s[:-1])
        assert np.all(job.step_end_s - job.step_start_s >= fabric.min_latency_s())
        assert job.end_s == job.step_end_s[-1]
        assert len(job.step_end_s) == spec.schedule.num_steps


# -- physics -------------------------------------------------------------------------------------
SINGLE_FABRICS = ["ideal", "fat_tree", "fat_tree_4to1", "torus2d_8x8", "topoopt", "topoopt_2gpu", "opsquare"]
SINGLE_ALGORITHMS = ["ring", "rhd", "recursive_doubling", "hierarchical", "binary_tree", "double_binary_tree",
                     "binomial_tree", "bruck", "direct", "pipelined_tree", "torus2d", "topoopt_ring"]
LAYOUTS = [(8, 1), (16, 1), (4, 4), (8, 2)]


@pytest.mark.parametrize("fabric_name", SINGLE_FABRICS)
def test_one_collective_never_beats_the_lower_bound(fabric_name):
    fabric = FABRIC_BUILDERS[fabric_name]()
    checked = 0
    for name in SINGLE_ALGORITHMS:
        algorithm = ALGORITHMS.make(name)
        for op in sorted(algorithm.ops):
            for size, stride in LAYOUTS:
                ranks = size * stride
                if ranks > fabric.num_nodes or algorithm.supports(fabric, op, size) is not None:
                    continue
                layout = GroupLayout(size, stride, ranks)
                size_bytes = 0 if op is CollectiveOp.BARRIER else 3 * MB + 7
                job = collective(fabric, name, op.value, layout, size_bytes)
                (timing,) = run_flows(fabric, [job], isolated=False).jobs
                bound = lower_bound_s(fabric, op, size_bytes, layout)
                assert timing.duration_s >= bound * (1 - RELATIVE), (name, op.value, size, stride)
                checked += 1
    assert checked >= 20


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_concurrent_sets_never_beat_their_busiest_resource(case):
    fabric, jobs = case.build()
    problem = compile_jobs(fabric, jobs)
    run = run_flows(fabric, jobs)
    first = min(job.start_s for job in jobs)
    assert run.end_s.max() - first >= _busiest_resource_s(problem) * (1 - RELATIVE)
    for spec, timing in zip(jobs, run.jobs):
        layout, placement = _bound_placement(spec, fabric)
        bound = lower_bound_s(fabric, spec.schedule.op, spec.size_bytes, layout, placement=placement)
        assert timing.duration_s >= bound * (1 - RELATIVE)
        assert timing.isolated_s >= bound * (1 - RELATIVE)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric_name=st.sampled_from(["ideal", "fat_tree_4to1", "torus2d", "opsquare", "topoopt"]),
       picks=st.lists(st.tuples(st.sampled_from([("ring", "all_reduce"), ("rhd", "all_reduce"),
                                                 ("direct", "all_to_all"), ("ring", "all_gather"),
                                                 ("bruck", "all_gather")]),
                                st.integers(2, 8), st.integers(0, 2**16), st.integers(1, 64),
                                st.floats(0.0, 5e-4)), min_size=1, max_size=4))
def test_random_concurrent_sets_respect_the_busiest_resource(fabric_name, picks):
    fabric = FABRIC_BUILDERS[fabric_name]()
    rng_jobs = []
    for (algorithm, op), size, seed, megabytes, start_s in picks:
        nodes = np.random.default_rng(seed).choice(fabric.num_nodes, size=size, replace=False)
        if ALGORITHMS.make(algorithm).supports(fabric, CollectiveOp(op), size) is not None:
            continue
        rng_jobs.append(collective(fabric, algorithm, op, nodes.tolist(), megabytes * MB // 4, start_s))
    if not rng_jobs:
        return
    problem = compile_jobs(fabric, rng_jobs)
    run = run_flows(fabric, rng_jobs, isolated=False)
    assert run.end_s.max() - min(job.start_s for job in rng_jobs) >= _busiest_resource_s(problem) * (1 - RELATIVE)
    for spec, timing in zip(rng_jobs, run.jobs):
        layout, placement = _bound_placement(spec, fabric)
        bound = lower_bound_s(fabric, spec.schedule.op, spec.size_bytes, layout, placement=placement)
        assert timing.duration_s >= bound * (1 - RELATIVE)


# -- routes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fabric_name", sorted(FABRIC_BUILDERS))
def test_per_pair_routes_add_up_to_the_fabrics_loads(fabric_name):
    """The resources each pair crosses, weighted and summed, are the loads the fabric's own
    `route` gives for the same flows (hop slots, or aggregate loads on TopoOpt)."""
    fabric = FABRIC_BUILDERS[fabric_name]()
    rng = np.random.default_rng(7)
    src = rng.integers(0, fabric.num_nodes, 60)
    dst = rng.integers(0, fabric.num_nodes, 60)
    keys = np.unique(src * fabric.num_nodes + dst)
    src, dst = keys // fabric.num_nodes, keys % fabric.num_nodes
    weights = rng.uniform(1.0, 5.0, src.size)
    routes = route_pairs(fabric, src, dst)
    ours = np.zeros(fabric.capacity_bps().size)
    for pair in range(routes.num_pairs):
        resources, bits = routes.of(pair)
        np.add.at(ours, routes.fabric_resource[resources], bits / BITS_PER_BYTE * weights[pair])
    theirs = fabric.route(src, dst, weights)
    expected = np.zeros_like(ours)
    for hop in theirs.hops:
        used = hop >= 0
        np.add.at(expected, hop[used], weights[used])
    if theirs.fixed_loads is not None:
        expected += theirs.fixed_loads
    assert np.allclose(ours, expected, rtol=1e-12, atol=1e-9)
    assert np.array_equal(routes.latency_s, np.broadcast_to(theirs.latency_s, src.shape))
    assert np.array_equal(routes.capacity_bps, fabric.capacity_bps()[routes.fabric_resource])


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ramp", "optical_ring", "ocs_reconfig", "sipml"])
def test_a_fabric_without_fixed_flow_routes_is_refused_in_one_line(name):
    fabric = make_fabric(name)
    job = collective(_ideal(8), "ring", "all_reduce", GroupLayout(8), MB)
    with pytest.raises(ConfigError, match=f"fabric = '{name}'.*per-flow routes") as error:
        run_flows(fabric, [job])
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("change", "key"), [
    (dict(size_bytes=-1), "size_bytes"),
    (dict(start_s=float("nan")), "start_s"),
    (dict(nodes=GroupLayout(4, 1, 8)), "nodes.size"),
    (dict(nodes=np.arange(7)), "nodes"),
    (dict(nodes=np.arange(8) + 10), "nodes"),
])
def test_bad_jobs_name_the_key(change, key):
    fabric = _ideal(16)
    job = collective(fabric, "ring", "all_reduce", GroupLayout(8), MB)
    fields = dict(schedule=job.schedule, size_bytes=job.size_bytes, nodes=job.nodes, start_s=0.0) | change
    with pytest.raises(ConfigError) as error:
        run_flows(fabric, [FlowJob(**fields)])
    assert error.value.key == key and "\n" not in str(error.value)


def test_no_jobs_is_an_error():
    with pytest.raises(ConfigError, match="jobs"):
        run_flows(_ideal(4), [])
