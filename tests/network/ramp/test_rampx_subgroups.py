"""RAMP-x subgroups (Tables 5, 6) and information map (Table 7) on the 54-node example and beyond."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.network.collectives.rampx.infomap import info_portion, table7_printed
from ddlsim.network.collectives.rampx.plan import RampXPlan
from ddlsim.network.collectives.rampx.subgroups import (
    members,
    num_subgroups,
    subgroup_id,
    subgroup_size,
    table6_member_printed,
)

X, J, LAM = 3, 3, 6  # RAMP Fig. 8
DIMS = [(3, 3, 6), (3, 2, 6), (2, 2, 4), (4, 3, 8), (2, 5, 4), (1, 7, 1), (1, 1, 7), (4, 4, 16), (8, 8, 16)]


def coords(x: int, racks: int, lam: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nodes = np.arange(x * racks * lam)
    return nodes // (racks * lam), (nodes // lam) % racks, nodes % lam


def test_table5_counts_for_the_54_node_example() -> None:
    assert [subgroup_size(s, X, J, LAM) for s in (1, 2, 3, 4)] == [3, 3, 3, 2]
    assert [num_subgroups(s, X, J, LAM) for s in (1, 2, 3, 4)] == [18, 18, 18, 27]


@pytest.mark.parametrize("formulation", [1, 2])
@pytest.mark.parametrize("step", [1, 2, 3, 4])
@pytest.mark.parametrize("dims", DIMS)
def test_members_are_exactly_the_nodes_sharing_the_table5_id(dims, step, formulation) -> None:
    x, racks, wavelengths = dims
    g, j, lam = coords(*dims)
    ids = subgroup_id(step, formulation, g, j, lam, *dims)
    assert np.bincount(ids).max() == np.bincount(ids)[np.bincount(ids) > 0].min() == subgroup_size(step, *dims)
    assert np.unique(ids).size == num_subgroups(step, *dims)
    mg, mj, ml = members(step, formulation, g, j, lam, *dims)
    member_nodes = (mg * racks + mj) * wavelengths + ml
    assert np.all(ids[member_nodes] == ids[:, None])
    assert all(np.unique(row).size == row.size for row in member_nodes)


@pytest.mark.parametrize("gamma", [0, 1, 2])
def test_printed_table6_rows_match_formulation_2_and_the_ring_successor(gamma: int) -> None:
    g, j, lam = coords(X, J, LAM)
    for step, row in ((1, "1"), (2, "2"), (3, "3"), (4, "4.2")):
        if step == 4 and gamma >= LAM // X:
            continue
        mg, mj, ml = members(step, 2, g, j, lam, X, J, LAM)
        printed = np.array([table6_member_printed(row, *node, gamma, X, J, LAM) for node in zip(g, j, lam)])
        assert np.array_equal(printed, np.stack([mg[:, gamma], mj[:, gamma], ml[:, gamma]], axis=1)), row
    mg, mj, ml = members(4, 1, g, j, lam, X, J, LAM)
    successor = np.array([table6_member_printed("4.1", *node, 0, X, J, LAM) for node in zip(g, j, lam)])
    assert np.array_equal(successor, np.stack([mg[:, 1], mj[:, 1], ml[:, 1]], axis=1))


def test_formulation_1_step_3_equals_print_in_the_first_device_group() -> None:
    g, j, lam = coords(X, J, LAM)
    first = lam < X
    printed = subgroup_id(3, 2, g, j, lam, X, J, LAM)
    ring = subgroup_id(3, 1, g, j, lam, X, J, LAM)
    assert np.array_equal(printed[first], ring[first])
    assert not np.array_equal(printed[~first], ring[~first])


def _prefix_consistent(portion, ids, step) -> bool:
    """Members of a step's subgroups share earlier portions and hold distinct current ones."""
    for group in np.unique(ids[step]):
        rows = ids[step] == group
        if any(np.unique(portion[s][rows]).size != 1 for s in range(1, step)):
            return False
        if np.unique(portion[step][rows]).size != rows.sum():
            return False
    return True


def test_printed_table7_is_inconsistent_with_printed_step3_but_consistent_with_formulation_1() -> None:
    g, j, lam = coords(X, J, LAM)
    printed = {s: table7_printed(s, g, j, lam, X) for s in (1, 2, 3, 4)}
    as_printed = {s: subgroup_id(s, 2, g, j, lam, X, J, LAM) for s in (1, 2, 3, 4)}
    formulation1 = {s: subgroup_id(s, 1, g, j, lam, X, J, LAM) for s in (1, 2, 3, 4)}
    assert not _prefix_consistent(printed, as_printed, 3)
    assert all(_prefix_consistent(printed, formulation1, s) for s in (1, 2, 3, 4))


@pytest.mark.parametrize("formulation", [1, 2])
@pytest.mark.parametrize("dims", DIMS)
def test_information_map_gives_every_node_a_unique_rank(dims, formulation) -> None:
    g, j, lam = coords(*dims)
    portion = {s: info_portion(s, formulation, g, j, lam, *dims) for s in (1, 2, 3, 4)}
    ids = {s: subgroup_id(s, formulation, g, j, lam, *dims) for s in (1, 2, 3, 4)}
    assert all(_prefix_consistent(portion, ids, s) for s in (1, 2, 3, 4))
    plan = RampXPlan(*dims, formulation=formulation)
    assert np.array_equal(np.sort(plan.rank_of_node), np.arange(plan.num_ranks))


@pytest.mark.parametrize("formulation", [1, 2])
@pytest.mark.parametrize("dims", DIMS)
def test_reduce_scatter_through_the_subgroups_sums_every_rank(dims, formulation) -> None:
    """Alg. 1 with Reshape/Reduce (Table 8) over the active steps leaves rank r the sum of block r."""
    plan = RampXPlan(*dims, formulation=formulation)
    n = plan.num_ranks
    data = np.random.default_rng(1).integers(0, 1 << 20, size=(n, n))
    held = np.ones((n, n), dtype=bool)
    values = data.copy()
    blocks = np.arange(n)
    for step in plan.active_steps:
        peers = plan.peers(step)
        new_values, new_held = np.zeros_like(values), np.zeros_like(held)
        for portion in range(peers.shape[1]):
            moving = held & (plan.digit(step, blocks) == portion)[None, :]
            np.add.at(new_values, peers[:, portion], np.where(moving, values, 0))
            np.logical_or.at(new_held, peers[:, portion], moving)
        values, held = new_values, new_held
    assert np.array_equal(held, np.eye(n, dtype=bool))
    assert np.array_equal(np.diag(values), data.sum(axis=0))


def test_maximum_scale_plan_has_four_steps_and_unique_ranks() -> None:
    plan = RampXPlan(32, 32, 64, formulation=2)
    assert plan.active_steps == (1, 2, 3, 4)
    assert plan.radices == (32, 32, 32, 2)
    assert np.unique(plan.rank_of_node).size == 65536
