"""Job placement policies: one `Placement` per job on disjoint nodes (`job_placement.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.network.contention.job_placement import POLICIES, place_jobs_on_nodes, top_domain_nodes


def _nodes(placements) -> list[list[int]]:
    return [placement.nodes.tolist() for placement in placements]


def test_packed_fills_the_lowest_slots_in_job_order():
    placements = place_jobs_on_nodes(32, [8, 6, 4], "packed", slot_nodes=4)
    assert _nodes(placements) == [list(range(8)), list(range(8, 14)), list(range(16, 20))]  # 6 ranks: 2 slots


def test_spread_deals_slots_across_top_level_domains():
    # 64 nodes, slots of 4, pods of 16: each job of 16 ranks gets one slot in each of the 4 pods.
    placements = place_jobs_on_nodes(64, [16, 16], "spread", slot_nodes=4, domain_nodes=16)
    for nodes in _nodes(placements):
        assert sorted({node // 16 for node in nodes}) == [0, 1, 2, 3]
    assert _nodes(placements)[0][:8] == [0, 1, 2, 3, 16, 17, 18, 19]


def test_every_policy_gives_disjoint_nodes_and_random_follows_its_seed():
    sizes = [12, 20, 8, 24]
    for policy in POLICIES:
        nodes = [node for job in _nodes(place_jobs_on_nodes(128, sizes, policy, slot_nodes=4, domain_nodes=32))
                 for node in job]
        assert len(nodes) == len(set(nodes)) == sum(sizes)
    first = _nodes(place_jobs_on_nodes(128, sizes, "random", slot_nodes=4, seed=3))
    assert first == _nodes(place_jobs_on_nodes(128, sizes, "random", slot_nodes=4, seed=3))
    assert first != _nodes(place_jobs_on_nodes(128, sizes, "random", slot_nodes=4, seed=4))


def test_explicit_nodes_are_claimed_first():
    placements = place_jobs_on_nodes(16, [4, 4], "packed", explicit=[None, [0, 1, 2, 3]])
    assert _nodes(placements) == [[4, 5, 6, 7], [0, 1, 2, 3]]


def test_bad_placements_are_one_line_errors_naming_the_job():
    with pytest.raises(InfeasibleError, match=r"job 1 \(12 ranks, 3 slots of 4 nodes\) does not fit") as too_big:
        place_jobs_on_nodes(16, [8, 12], "packed", slot_nodes=4)
    assert "\n" not in str(too_big.value)
    with pytest.raises(ConfigError, match=r"job 1\.nodes = 3: overlaps an earlier job's placement"):
        place_jobs_on_nodes(16, [4, 4], "packed", explicit=[[0, 1, 2, 3], [3, 4, 5, 6]])
    with pytest.raises(ConfigError, match=r"task\.placement = 'round_robin': unknown placement policy"):
        place_jobs_on_nodes(16, [4], "round_robin")


def test_top_domain_is_the_largest_below_the_fabric():
    assert top_domain_nodes((4, 16, 64, 512), 512) == 64
    assert top_domain_nodes((512,), 512) == 512
    assert np.array_equal(place_jobs_on_nodes(8, [8], "spread")[0].nodes, np.arange(8))
