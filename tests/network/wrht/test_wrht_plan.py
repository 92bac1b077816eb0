"""WRHT's paper logic as pure functions: Table 1, Fig. 2, Lemma 1, grouping and wavelength needs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.core.errors import ConfigError
from ddlsim.network.collectives import wrht
from ddlsim.network.collectives.wrht import StageKind


def test_table1_step_counts():
    # WRHT Table 1: N = 1024, w = 64.
    assert wrht.ring_steps(1024) == 2046
    assert wrht.hring_steps(1024, 5, 64) == 417
    assert wrht.binary_tree_steps(1024) == 20
    assert wrht.num_steps(1024, 129, 64) == 3


def test_table1_wrht_uses_the_all_to_all_last_stage():
    assert wrht.last_stage_size(1024, 129) == 8
    assert wrht.all_to_all_wavelengths(8) == 8
    assert wrht.uses_all_to_all(1024, 129, 64)
    kinds = [stage.kind for stage in wrht.wrht_plan(1024, 129, 64)]
    assert kinds == [StageKind.GATHER, StageKind.ALL_TO_ALL, StageKind.BROADCAST]


def test_hring_second_formula_when_wavelengths_are_short():
    # ceil(m / w) > 1: 2(2m^2 + N)/m - 6 = 4*5 + 2048/5 - 6 = 423.6 -> 424.
    assert wrht.hring_steps(1024, 5, 4) == 424
    assert wrht.hring_steps(1024, 5, 5) == 417


def test_motivating_example_of_fig2():
    # 15 nodes, 2 wavelengths: binary tree 8 steps, WRHT 3 steps with groups of 5.
    assert wrht.binary_tree_steps(15) == 8
    assert wrht.lemma1_group_size(2) == 5
    plan = wrht.wrht_plan(15, 5, 2)
    assert len(plan) == wrht.num_steps(15, 5, 2) == 3
    first = plan[0]
    assert first.kind is StageKind.GATHER
    assert first.reps.tolist() == [2, 7, 12]  # the intermediate node of each group
    assert plan[1].kind is StageKind.ALL_TO_ALL and plan[1].members.tolist() == [2, 7, 12]
    src, dst = plan[1].transfers()
    assert sorted(zip(src.tolist(), dst.tolist())) == [(2, 7), (2, 12), (7, 2), (7, 12), (12, 2), (12, 7)]
    src, dst = plan[2].transfers()
    assert sorted(set(src.tolist())) == [2, 7, 12] and len(dst) == 12


@pytest.mark.parametrize(("wavelengths", "expected"), [(4, 7), (16, 4), (64, 3), (256, 3)])
def test_steps_at_1024_nodes_with_lemma1_group_size(wavelengths, expected):
    # Fig. 5's setting: m = 2w + 1 (no optical constraint), N = 1024.
    group_size = min(wrht.lemma1_group_size(wavelengths), 1024)
    assert wrht.num_steps(1024, group_size, wavelengths) == expected
    assert wrht.lemma1_min_steps(1024, wavelengths) >= expected - 1


def test_wavelength_needs():
    assert wrht.group_wavelengths(129) == 65  # Section 4.1.2's ceil(m/2)
    assert wrht.routed_group_wavelengths(129) == 64  # what the two-sided gather really needs
    assert wrht.group_wavelengths(128) == wrht.routed_group_wavelengths(128) == 64
    assert [wrht.all_to_all_wavelengths(n) for n in (1, 2, 3, 8, 22, 23)] == [0, 1, 2, 8, 61, 67]


def test_eq6_communication_time():
    # 3 steps of 100 MB at 40 Gbps plus 25 us each.
    assert wrht.communication_time_s(10**8, 40e9, 25e-6, 3) == pytest.approx(3 * (0.02 + 25e-6))


def test_group_size_must_be_at_least_two():
    with pytest.raises(ConfigError, match="m = 1"):
        wrht.num_steps(16, 1, 4)
    with pytest.raises(ConfigError):
        wrht.check_group_size(1)
    wrht.check_group_size(0)


def test_best_group_size_respects_admissible():
    assert wrht.best_group_size(1024, 64) == 129
    assert wrht.best_group_size(100, 64) == 100
    assert wrht.best_group_size(1024, 64, admissible=lambda m: m <= 40) == 40


def _execute(plan, num_ranks, seed=0):
    """Run the plan on random integer buffers: all sends of a step read the pre-step state."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-1000, 1000, size=(num_ranks, 3))
    expected = data.sum(axis=0)
    for stage in plan:
        src, dst = stage.transfers()
        before = data.copy()
        if stage.kind is StageKind.BROADCAST:
            data[dst] = before[src]
        else:
            np.add.at(data, dst, before[src])
    return data, expected


@settings(max_examples=150, deadline=None)
@given(num_ranks=st.integers(1, 300), group_size=st.integers(2, 40), wavelengths=st.integers(1, 64))
def test_plan_is_an_all_reduce_with_the_paper_step_count(num_ranks, group_size, wavelengths):
    plan = wrht.wrht_plan(num_ranks, group_size, wavelengths)
    assert len(plan) == wrht.num_steps(num_ranks, group_size, wavelengths)
    data, expected = _execute(plan, num_ranks)
    assert (data == expected).all()
    for stage in plan:
        if stage.kind is not StageKind.ALL_TO_ALL:
            sizes = np.bincount(stage.group_of)
            assert sizes.max() <= group_size
            assert np.isin(stage.reps, stage.members).all()
    if num_ranks > 1:
        last_reduce = [s for s in plan if s.kind is not StageKind.BROADCAST][-1]
        assert last_reduce.members.size == wrht.last_stage_size(num_ranks, group_size)


@settings(max_examples=100, deadline=None)
@given(num_ranks=st.integers(2, 5000), wavelengths=st.integers(1, 300), group_size=st.integers(2, 200))
def test_steps_never_grow_with_group_size(num_ranks, wavelengths, group_size):
    steps = wrht.num_steps(num_ranks, group_size, wavelengths)
    assert wrht.num_steps(num_ranks, group_size + 1, wavelengths) <= steps
    levels = wrht.num_levels(num_ranks, group_size)
    assert steps in (2 * levels, 2 * levels - 1)
    assert group_size ** levels >= num_ranks > group_size ** (levels - 1)
