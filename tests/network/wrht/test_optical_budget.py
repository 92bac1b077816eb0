"""Insertion loss and crosstalk limits (WRHT Eqs. 7 to 13) and the maximum group size m'."""

from __future__ import annotations

import math

import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.network.fabrics.optical_ring.budget import (
    OpticalBudget,
    bit_error_rate,
    max_communication_length,
    required_snr,
)


def _budget(**changes) -> OpticalBudget:
    values = dict(laser_power_dbm=10.0, receiver_sensitivity_dbm=-20.0, modulator_loss_db=3.0, pass_loss_db=0.3,
                  extinction_penalty_db=1.5, crosstalk_rx_db=-40.0, crosstalk_tx_db=-30.0, other_noise_dbm=-40.0)
    values.update(changes)
    return OpticalBudget(**values)


def test_eq7_longest_communication_length():
    assert max_communication_length(1024, 1024) == 512  # one level: floor(m/2)
    assert max_communication_length(1024, 2048) == 1024
    assert max_communication_length(1024, 129) == 129  # two levels: m
    assert max_communication_length(1024, 32) == 32
    assert max_communication_length(1024, 31) == 31**2  # three levels: m^2
    assert max_communication_length(1024, 10) == 1000


def test_eq13_ber_at_the_required_snr():
    snr = required_snr(1e-9)
    assert bit_error_rate(snr) == pytest.approx(1e-9)
    assert snr == pytest.approx(4 * math.log(5e8))
    assert bit_error_rate(snr * 1.01) < 1e-9


def test_eq8_eq9_power_margin():
    budget = _budget(other_noise_dbm=-200.0, crosstalk_rx_db=-200.0, crosstalk_tx_db=-200.0)
    # budget 30 dB - P_m 3 - P_p 1.5 = 25.5 dB: 85 interfaces at 0.3 dB.
    assert budget.insertion_loss_db(85) == pytest.approx(28.5)
    assert budget.power_margin_db(85) == pytest.approx(0.0, abs=1e-9)
    assert budget.max_length(10_000) == 85
    assert budget.max_group_size(1024) == 85


def test_crosstalk_can_bind_before_power():
    budget = _budget()
    assert budget.power_margin_db(85) >= -1e-9
    assert budget.snr(85) < required_snr(1e-9)
    assert budget.max_length(10_000) < 85


@pytest.mark.parametrize("num_nodes", [2, 7, 64, 100, 1024, 1500])
@pytest.mark.parametrize("pass_loss_db", [0.05, 0.3, 1.0, 3.0])
def test_max_group_size_matches_brute_force(num_nodes, pass_loss_db):
    budget = _budget(pass_loss_db=pass_loss_db)
    feasible = [m for m in range(2, num_nodes + 1) if budget.group_size_ok(num_nodes, m)]
    if feasible:
        assert budget.max_group_size(num_nodes) == feasible[-1]
    else:
        with pytest.raises(InfeasibleError, match="optical budget"):
            budget.max_group_size(num_nodes)


def test_invalid_parameters_are_config_errors():
    with pytest.raises(ConfigError, match="pass_loss_db"):
        _budget(pass_loss_db=-0.1)
    with pytest.raises(ConfigError, match="target_ber"):
        _budget(target_ber=0.0)
