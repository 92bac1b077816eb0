"""Insertion loss and crosstalk limits of the WDM ring: WRHT Section 4.4, Eqs. 7 to 13.

A lightpath loses the modulator loss P_m once and P_pass at every optical interface it passes;
the laser must cover that loss plus the extinction-ratio penalty P_p (Eqs. 8 and 9). Crosstalk
adds P_Rx at every passed interface and P_Tx once (Eq. 12); with other noise P_O it sets the
worst-case signal-to-noise ratio (Eq. 11) and so the bit-error rate BER = exp(-SNR/4) / 2
(Eq. 13), which must stay below 1e-9. WRHT's longest lightpath L_max grows with the group size
m (Eq. 7), so these limits give the largest admissible group size m'.

Conventions where the paper leaves them open (documented in docs/wrht.md):
- Eq. 9 compares powers in dBm with losses in dB; we measure the laser power against the
  receiver sensitivity, P_laser - P_sensitivity >= L_l + P_p (the paper's form for a 0 dBm
  sensitivity).
- P_Rx and P_Tx are crosstalk ratios relative to the received signal power (a leak of an
  equally strong neighbouring channel), P_O an absolute noise floor in dBm, and Eq. 13 uses the
  linear SNR (a dB value would need an SNR above 80 dB).
- Eq. 7's exponent log_m' N is rounded up to the number of tree levels, ceil(log_m' N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError, InfeasibleError


def num_levels(num_nodes: int, group_size: int) -> int:
    """ceil(log_m N) in integers: the smallest L with m**L >= N (0 for a single node)."""
    if group_size < 2:
        raise ConfigError("m", group_size, "WRHT's group size must be >= 2")
    if num_nodes < 1:
        raise ConfigError("num_ranks", num_nodes, "must be >= 1")
    levels, span = 0, 1
    while span < num_nodes:
        span *= group_size
        levels += 1
    return levels


def max_communication_length(num_nodes: int, group_size: int) -> int:
    """Eq. 7: interfaces passed by WRHT's longest lightpath, floor(m/2) or m * m**(L-2)."""
    levels = num_levels(num_nodes, group_size)
    if levels <= 1:
        return group_size // 2
    return group_size ** (levels - 1)


def db_to_linear(db: float) -> float:
    return 10.0 ** (db / 10.0)


def bit_error_rate(snr_linear: float) -> float:
    """Eq. 13: BER = exp(-SNR/4) / 2."""
    return 0.5 * math.exp(-snr_linear / 4.0)


def required_snr(target_ber: float) -> float:
    """The linear SNR at which Eq. 13 gives exactly `target_ber`."""
    return 4.0 * math.log(0.5 / target_ber)


@dataclass(frozen=True)
class OpticalBudget:
    """Device parameters of Eqs. 8 to 13 (powers in dBm, losses and ratios in dB)."""

    laser_power_dbm: float
    receiver_sensitivity_dbm: float
    modulator_loss_db: float
    pass_loss_db: float
    extinction_penalty_db: float
    crosstalk_rx_db: float
    crosstalk_tx_db: float
    other_noise_dbm: float
    target_ber: float = 1e-9

    def __post_init__(self) -> None:
        for name in ("modulator_loss_db", "pass_loss_db", "extinction_penalty_db"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(name, value, "must be a finite loss >= 0 dB")
        for name in ("laser_power_dbm", "receiver_sensitivity_dbm", "crosstalk_rx_db", "crosstalk_tx_db",
                     "other_noise_dbm"):
            if not math.isfinite(getattr(self, name)):
                raise ConfigError(name, getattr(self, name), "must be finite")
        if not 0 < self.target_ber < 0.5:
            raise ConfigError("target_ber", self.target_ber, "must be in (0, 0.5)")

    def insertion_loss_db(self, length: int) -> float:
        """Eq. 8: L_l = P_m + L_max * P_pass."""
        return self.modulator_loss_db + length * self.pass_loss_db

    def power_margin_db(self, length: int) -> float:
        """Eq. 9 as a margin: laser power over sensitivity, minus loss and penalty (>= 0 passes)."""
        budget = self.laser_power_dbm - self.receiver_sensitivity_dbm
        return budget - self.insertion_loss_db(length) - self.extinction_penalty_db

    def received_power_dbm(self, length: int) -> float:
        return self.laser_power_dbm - self.insertion_loss_db(length)

    def snr(self, length: int) -> float:
        """Eqs. 11 and 12: linear worst-case SNR after `length` passed interfaces."""
        signal_mw = db_to_linear(self.received_power_dbm(length))
        crosstalk_mw = signal_mw * (length * db_to_linear(self.crosstalk_rx_db) + db_to_linear(self.crosstalk_tx_db))
        return signal_mw / (crosstalk_mw + db_to_linear(self.other_noise_dbm))

    def ber(self, length: int) -> float:
        return bit_error_rate(self.snr(length))

    def length_ok(self, length: int) -> bool:
        """True when a lightpath passing `length` interfaces meets Eq. 9 and the BER target."""
        return self.power_margin_db(length) >= 0 and self.snr(length) >= required_snr(self.target_ber)

    def group_size_ok(self, num_nodes: int, group_size: int) -> bool:
        """Eqs. 7 to 13 for WRHT with group size m on N nodes."""
        return self.length_ok(max_communication_length(num_nodes, group_size))

    def max_length(self, limit: int) -> int:
        """The most interfaces a lightpath may pass (capped at `limit`); -1 if even 0 fails.

        Both checks only worsen with length, so a bisection finds the edge.
        """
        if not self.length_ok(0):
            return -1
        low, high = 0, limit
        while low < high:
            middle = (low + high + 1) // 2
            if self.length_ok(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def max_group_size(self, num_nodes: int) -> int:
        """m': the largest group size in [2, N] that Eqs. 7 to 13 admit.

        Eq. 7 is not monotone in m (one more tree level multiplies L_max by m), so a smaller m
        than m' may still fail; `group_size_ok` answers for a given m.
        """
        if num_nodes < 2:
            return num_nodes
        allowed = self.max_length(num_nodes)
        for levels in range(1, num_levels(num_nodes, 2) + 1):
            smallest = _smallest_base(num_nodes, levels)
            largest = num_nodes if levels == 1 else _smallest_base(num_nodes, levels - 1) - 1
            if levels == 1:
                best = num_nodes if num_nodes // 2 <= allowed else 0
            else:
                best = min(largest, _integer_root(allowed, levels - 1)) if allowed >= 1 else 0
            if best >= max(smallest, 2):
                return best
        shortest = min(max_communication_length(num_nodes, _smallest_base(num_nodes, levels))
                       for levels in range(1, num_levels(num_nodes, 2) + 1))
        raise InfeasibleError(
            f"no WRHT group size in [2, {num_nodes}] meets the optical budget on {num_nodes} nodes: "
            f"lightpaths may pass at most {allowed} interfaces (power margin and BER {self.target_ber:g}), "
            f"but Eq. 7 gives at least {shortest} for every group size")


def _integer_root(value: int, degree: int) -> int:
    """The largest r with r**degree <= value (value >= 0)."""
    root = int(round(value ** (1.0 / degree)))
    while root ** degree > value:
        root -= 1
    while (root + 1) ** degree <= value:
        root += 1
    return root


def _smallest_base(num_nodes: int, levels: int) -> int:
    """The smallest m >= 2 with m**levels >= num_nodes."""
    base = max(2, _integer_root(num_nodes, levels))
    while base ** levels < num_nodes:
        base += 1
    return base
