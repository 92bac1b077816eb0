"""The WDM optical ring as a fabric: Table 2 defaults, Eq. 6 pricing, RWA infeasibility, budget."""

from __future__ import annotations

import numpy as np
import pytest

import ddlsim.network.collectives.wrht  # noqa: F401  (registers wrht)
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout
from ddlsim.network import CollectiveEstimator
from ddlsim.network.fabrics.optical_ring import OpticalRing
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.network.placement import Placement

MB100 = 100_000_000


def ring(**changes) -> OpticalRing:
    return FABRICS.make("optical_ring", **changes)


def estimate(fabric, algorithm, group_size, size_bytes=MB100, **layout):
    estimator = CollectiveEstimator(fabric, algorithm, device=None)
    if layout:
        return estimator.estimate("all_reduce", size_bytes, layout=GroupLayout(group_size, **layout))
    return estimator.estimate("all_reduce", size_bytes, num_ranks=group_size)


def test_table2_defaults():
    spec = ring().spec
    assert spec.wavelengths == 64 and spec.fibres_per_direction == 2  # four fibre rings
    assert spec.wavelength_bandwidth_bps == 40e9
    assert spec.reconfiguration_s == pytest.approx(25e-6)
    assert spec.oeo_per_packet_s == pytest.approx(497e-15)
    assert spec.packet_bytes == 72
    assert spec.channels_per_direction == 128


@pytest.mark.parametrize(("key", "value"), [("wavelengths", 0), ("fibres_per_direction", -1),
                                            ("reconfigure", "sometimes"), ("wavelength_bandwidth", "fast")])
def test_invalid_config(key, value):
    with pytest.raises(ConfigError, match=key):
        ring(**{key: value})


def test_wrht_time_is_eq6():
    fabric = ring(optical_constraints=False)
    result = estimate(fabric, {"name": "wrht", "m": 129}, 1024)
    s_per_byte = 8 / 40e9 + 497e-15 / 72
    assert result.num_steps == 3
    assert result.latency_s == pytest.approx(3 * 25e-6)
    assert result.transfer_s == pytest.approx(3 * MB100 * s_per_byte)


def test_ring_pays_reconfiguration_every_step_or_once():
    every = estimate(ring(), "ring", 1024)
    assert every.num_steps == 2046
    assert every.latency_s == pytest.approx(2046 * 25e-6)
    assert every.transfer_s == pytest.approx(2046 * MB100 / 1024 * (8 / 40e9 + 497e-15 / 72))
    once = estimate(ring(reconfigure="on_change"), "ring", 1024)
    assert once.transfer_s == pytest.approx(every.transfer_s)
    assert once.latency_s == pytest.approx(25e-6)  # one circuit serves both ring phases


def test_step_needing_more_channels_than_the_fibres_carry_is_infeasible():
    with pytest.raises(InfeasibleError, match="needs at least 65 channels per direction"):
        estimate(ring(fibres_per_direction=1, optical_constraints=False), {"name": "wrht", "m": 131}, 1024)
    # two fibres per direction double the channels: the same step fits
    assert estimate(ring(optical_constraints=False), {"name": "wrht", "m": 131}, 1024).num_steps == 3


def test_concurrent_groups_share_the_ring():
    # 8 data-parallel groups of 128 ranks, interleaved: each group's gathers cross the others'.
    fabric = ring(optical_constraints=False, wavelengths=16)
    alone = estimate(fabric, {"name": "wrht", "m": 33}, 128)
    assert alone.num_steps == 3
    with pytest.raises(InfeasibleError, match="channels per direction"):
        estimate(fabric, {"name": "wrht", "m": 33}, 128, stride=8, num_ranks=1024)
    # left to choose, WRHT takes the largest group size whose steps fit among the other groups
    shared = estimate(fabric, "wrht", 128, stride=8, num_ranks=1024)
    assert shared.num_steps > alone.num_steps


def test_direct_exchange_among_many_ranks_is_rejected_without_listing():
    fabric = ring()
    mesh = Mesh(1024, np.zeros(1024, dtype=np.int64))
    with pytest.raises(InfeasibleError, match="direct exchange among 1024 ranks"):
        fabric.price(mesh, GroupLayout(1024), Placement(1024))
    small = Mesh(1024, np.arange(1024) // 8)
    assert fabric.price(small, GroupLayout(1024), Placement(1024)).s_per_unit > 0


def test_optical_budget_limits_wrht_group_size():
    fabric = ring()
    assert fabric.max_group_size(1024) == 76  # the documented default device parameters
    auto = estimate(fabric, "wrht", 1024)
    assert auto.num_steps == 3
    with pytest.raises(InfeasibleError, match="optical budget"):
        estimate(fabric, {"name": "wrht", "m": 129}, 1024)


def test_wrht_runs_only_on_the_optical_ring():
    with pytest.raises(InfeasibleError, match="co-designed"):
        estimate(FABRICS.make("ideal"), "wrht", 64)


def test_propagation_uses_the_longest_lightpath():
    fabric = ring(hop_propagation="5ns", optical_constraints=False)
    pattern = Pairs(16, [0, 3], [2, 10], key=("test", "prop"))
    cost = fabric.price(pattern, GroupLayout(16), Placement(16))
    assert cost.latency_s == pytest.approx(7 * 5e-9)  # 3 -> 10 is 7 hops either way round
    assert cost.s_per_unit == pytest.approx(8 / 40e9 + 497e-15 / 72)


def test_all_to_all_last_stage_falls_back_when_the_fabric_cannot_carry_it():
    # 16 representatives need 32 wavelengths by the paper's count; with 32 per direction the
    # shortest-path all-to-all does not fit by first fit, so WRHT gathers instead (one more step).
    fabric = ring(wavelengths=32, fibres_per_direction=1, optical_constraints=False)
    assert estimate(fabric, {"name": "wrht", "m": 65}, 1024).num_steps == 4
    assert estimate(ring(optical_constraints=False), {"name": "wrht", "m": 65}, 1024).num_steps == 3
