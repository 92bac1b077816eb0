"""WRHT Table 1 through the estimator, and the baselines' behaviour on the ring and the fat-tree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ddlsim.network.collectives.binomial_tree  # noqa: F401  (registers the baselines)
import ddlsim.network.collectives.recursive_doubling  # noqa: F401
import ddlsim.network.collectives.wrht  # noqa: F401
import ddlsim.network.collectives.wrht_hring  # noqa: F401
from ddlsim.core.errors import InfeasibleError
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives.recursive_doubling import fold_sizes

MB100 = 100_000_000


def run(fabric, algorithm, num_ranks, size_bytes=MB100):
    return CollectiveEstimator(fabric, algorithm, device=None).estimate("all_reduce", size_bytes, num_ranks=num_ranks)


@pytest.fixture(scope="module")
def ring1024():
    return make_fabric("optical_ring", num_nodes=1024, wavelengths=64, optical_constraints=False)


@pytest.mark.parametrize(("algorithm", "steps"), [
    ({"name": "ring"}, 2046),
    ({"name": "binomial_tree"}, 20),
    ({"name": "wrht", "m": 129}, 3),
    # The paper's formula gives 417 (2(m^2 + N)/m - 3, rounded up); the schedule has one step
    # fewer: 2(m - 1) + 2(ceil(N/m) - 1). See docs/wrht.md.
    ({"name": "hring", "m": 5}, 416),
])
def test_table1_steps_through_the_estimator(ring1024, algorithm, steps):
    assert run(ring1024, algorithm, 1024).num_steps == steps


def test_fig2_example_through_the_estimator():
    fabric = make_fabric("optical_ring", num_nodes=15, wavelengths=2, optical_constraints=False)
    assert run(fabric, "binomial_tree", 15).num_steps == 8
    assert run(fabric, {"name": "wrht", "m": 5}, 15).num_steps == 3


def test_binomial_tree_steps_are_single_wavelength_and_whole_buffer(ring1024):
    result = run(ring1024, "binomial_tree", 1024)
    assert result.transfer_s == pytest.approx(20 * MB100 * (8 / 40e9 + 497e-15 / 72))


def test_heap_binary_tree_does_not_fit_the_ring(ring1024):
    # Why WRHT's BT is the binomial tree here: heap edges p -> 2p+1, 2p+2 overlap on a ring.
    with pytest.raises(InfeasibleError, match="channels per direction"):
        run(ring1024, "binary_tree", 1024)


def test_hring_rounds_when_shard_rings_exceed_the_channels():
    one_fibre = make_fabric("optical_ring", num_nodes=1024, wavelengths=4, fibres_per_direction=1,
                            optical_constraints=False)
    # five shard rings need five channels; with four they run in two rounds: 8 + 2 x 408 steps
    assert run(one_fibre, {"name": "hring", "m": 5}, 1024).num_steps == 8 + 2 * 408
    two_fibres = make_fabric("optical_ring", num_nodes=1024, wavelengths=4, optical_constraints=False)
    assert run(two_fibres, {"name": "hring", "m": 5}, 1024).num_steps == 416


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 300), m=st.integers(2, 12))
def test_hring_step_count(n, m):
    fabric = make_fabric("optical_ring", num_nodes=300, optical_constraints=False)
    runs_count = -(-n // min(m, n))
    assert run(fabric, {"name": "hring", "m": m}, n).num_steps == 2 * (min(m, n) - 1) + 2 * (runs_count - 1)


def test_hring_and_wrht_are_for_the_optical_ring():
    for algorithm in ("hring", "wrht"):
        with pytest.raises(InfeasibleError):
            run(make_fabric("ideal"), algorithm, 64)


@pytest.mark.parametrize(("n", "steps"), [(2, 1), (8, 3), (1024, 10), (3, 3), (12, 5), (1000, 11)])
def test_recursive_doubling_steps(n, steps):
    p, r = fold_sizes(n)
    assert p + r == n and p & (p - 1) == 0
    assert run(make_fabric("wrht_fattree"), "recursive_doubling", n).num_steps == steps


def test_electrical_fat_tree_of_table2():
    fabric = make_fabric("wrht_fattree")
    assert fabric.nic_bandwidth_bps == 40e9 and fabric.switch_latency_s == pytest.approx(25e-6)
    # one leaf of 32 hosts: one router per transfer; beyond it three routers
    assert run(fabric, "ring", 32, 0).latency_s == pytest.approx(62 * 25e-6)
    assert run(fabric, "ring", 1024, 0).latency_s == pytest.approx(2046 * 75e-6)
    rd = run(fabric, "recursive_doubling", 1024)
    assert rd.transfer_s == pytest.approx(10 * MB100 * 8 / 40e9)
    assert rd.latency_s == pytest.approx(5 * 25e-6 + 5 * 75e-6)


def test_recursive_doubling_long_exchanges_do_not_fit_the_ring(ring1024):
    with pytest.raises(InfeasibleError, match="channels per direction"):
        run(ring1024, "recursive_doubling", 1024)
