"""The max-min fluid engine (`ddlsim.network.contention.fluid`): fair shares, re-solving at every
start and finish, exact isolated times, and the physics of concurrent sets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.network.contention.fluid import FluidNetwork, max_min_fill

INF = np.inf


def run(network: FluidNetwork) -> dict:
    ends = {}
    while network.busy():
        for key, time_s in network.advance():
            ends[key] = time_s
    return ends


def test_equal_flows_split_a_link_and_a_lone_flow_takes_the_rest():
    # Two flows share link 0 (8 bits/s); flow 1 also crosses link 1 (16 bits/s), flow 2 only link 1.
    activity = np.array([0, 1, 1, 2])
    resource = np.array([0, 0, 1, 1])
    fill = max_min_fill(activity, resource, np.full(4, 1.0), np.array([8.0, 16.0]), np.full(3, INF))
    assert fill.tolist() == pytest.approx([4.0, 4.0, 12.0])


def test_a_capped_activity_leaves_its_share_to_the_others():
    fill = max_min_fill(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 1.0]), np.array([10.0]),
                        np.array([2.0, INF]))
    assert fill.tolist() == pytest.approx([2.0, 8.0])


def test_shares_are_re_solved_when_a_flow_starts_and_when_one_ends():
    network = FluidNetwork(np.array([80.0]))  # 10 bytes/s
    network.submit("a", 10, [0], [8.0])
    network.submit("b", 20, [0], [8.0], start_s=0.5)
    ends = run(network)
    # a alone for 0.5 s (5 bytes), then 5 bytes/s each: a ends at 1.5 s; b has 15 bytes left at 10/s.
    assert ends["a"] == pytest.approx(1.5)
    assert ends["b"] == pytest.approx(3.0)
    assert network.solves >= 3


def test_an_activity_alone_ends_exactly_at_its_own_time():
    for duration_s in (1e-9, 0.1, 3.7, 1234.5):
        network = FluidNetwork(np.array([1e12, 5e11]))
        network.submit("x", duration_s, [0, 1], [2e11, 1e11], start_s=0.25, max_fill=1.0)
        assert run(network)["x"] == 0.25 + duration_s  # bit for bit


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 5.0), st.floats(0.0, 2.0), st.lists(st.integers(0, 3), min_size=1,
                                                                              max_size=3, unique=True)),
                min_size=1, max_size=6),
       st.lists(st.floats(1.0, 100.0), min_size=4, max_size=4))
def test_no_concurrent_set_beats_its_busiest_resource_and_none_beats_its_alone_time(jobs, capacities):
    capacity = np.array(capacities)
    network = FluidNetwork(capacity)
    loads = np.zeros(4)
    alone = {}
    for key, (work, start, resources) in enumerate(jobs):
        amounts = np.full(len(resources), 8.0)  # bits per byte: `work` bytes on each resource
        network.submit(key, work, resources, amounts, start_s=start)
        loads[resources] += 8.0 * work
        alone[key] = start + work * 8.0 / capacity[resources].min()
    ends = run(network)
    assert set(ends) == set(alone)
    first_start = min(start for _, start, _ in jobs)
    busiest_s = float((loads / capacity).max())
    assert max(ends.values()) >= first_start + busiest_s * (1 - 1e-9)
    for key, end_s in ends.items():
        assert end_s >= alone[key] * (1 - 1e-9)
