"""Configuration of the TeraRack-style WDM optical ring and its parsed, checked form.

Defaults and their sources (docs/wrht.md has the full table):
- WRHT Table 2 (citing SiP-ML/TeraRack [10] and [5]): 64 wavelengths at 40 Gbps each,
  25 us MRR reconfiguration, O/E/O conversion 497 fs per 72-byte packet, double ring.
- WRHT Section 3.2: four single-mode fibre rings, two clockwise and two counter-clockwise.
- Optical budget (Eqs. 7 to 13): the paper names the parameters but gives no values. Ours are
  assumptions of the order of published silicon-photonic link figures, chosen before looking at
  the resulting m'; change them for a given technology.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.optical_ring.budget import OpticalBudget


@dataclass
class OpticalRingConfig:
    name: str = "optical_ring"
    num_nodes: int = 1024
    wavelengths: int = 64                  # per fibre (WRHT Table 2)
    fibres_per_direction: int = 2          # four fibre rings, two per direction (Section 3.2)
    wavelength_bandwidth: str = "40Gbps"   # per wavelength (Table 2)
    reconfiguration: str = "25us"          # MRR reconfiguration before a step (Table 2)
    reconfigure: str = "every_step"        # every_step (the paper's Eq. 6) or on_change
    oeo_per_packet: str = "0.497ps"      # O/E/O conversion per packet: 497 fs (Table 2)
    packet_size: str = "72B"               # Table 2
    hop_propagation: str = "0ns"           # fibre delay per ring hop; Eq. 6 has none
    optical_constraints: bool = True       # limit WRHT's group size to m' (Eqs. 7 to 13)
    laser_power_dbm: float = 10.0          # per wavelength, at the transmitter
    receiver_sensitivity_dbm: float = -20.0
    modulator_loss_db: float = 3.0         # P_m
    pass_loss_db: float = 0.3              # P_pass, per optical interface a signal passes
    extinction_penalty_db: float = 1.5     # P_p
    crosstalk_rx_db: float = -40.0         # P_Rx per passed interface, relative to the signal
    crosstalk_tx_db: float = -30.0         # P_Tx, relative to the signal
    other_noise_dbm: float = -40.0         # P_O (receiver noise floor)
    target_ber: float = 1e-9


RECONFIGURE_MODES = ("every_step", "on_change")


@dataclass(frozen=True)
class OpticalRingSpec:
    """The ring's figures in internal units (seconds, bits per second, bytes)."""

    num_nodes: int
    wavelengths: int
    fibres_per_direction: int
    wavelength_bandwidth_bps: float
    reconfiguration_s: float
    reconfigure_every_step: bool
    oeo_per_packet_s: float
    packet_bytes: int
    hop_propagation_s: float
    optical_constraints: bool
    budget: OpticalBudget

    @property
    def channels_per_direction(self) -> int:
        """(fibre, wavelength) pairs one direction offers on every segment."""
        return self.wavelengths * self.fibres_per_direction

    @classmethod
    def from_config(cls, config: OpticalRingConfig) -> OpticalRingSpec:
        for key in ("num_nodes", "wavelengths", "fibres_per_direction"):
            value = getattr(config, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(key, value, "must be an integer >= 1")
        if config.reconfigure not in RECONFIGURE_MODES:
            raise ConfigError("reconfigure", config.reconfigure, f"must be one of {', '.join(RECONFIGURE_MODES)}")
        packet_bytes = units.parse_size_bytes(config.packet_size, "packet_size", allow_zero=False)
        budget = OpticalBudget(
            laser_power_dbm=config.laser_power_dbm, receiver_sensitivity_dbm=config.receiver_sensitivity_dbm,
            modulator_loss_db=config.modulator_loss_db, pass_loss_db=config.pass_loss_db,
            extinction_penalty_db=config.extinction_penalty_db, crosstalk_rx_db=config.crosstalk_rx_db,
            crosstalk_tx_db=config.crosstalk_tx_db, other_noise_dbm=config.other_noise_dbm,
            target_ber=config.target_ber)
        return cls(
            num_nodes=config.num_nodes, wavelengths=config.wavelengths,
            fibres_per_direction=config.fibres_per_direction,
            wavelength_bandwidth_bps=units.parse_bandwidth_bps(config.wavelength_bandwidth, "wavelength_bandwidth"),
            reconfiguration_s=units.parse_time_s(config.reconfiguration, "reconfiguration"),
            reconfigure_every_step=config.reconfigure == "every_step",
            oeo_per_packet_s=units.parse_time_s(config.oeo_per_packet, "oeo_per_packet"),
            packet_bytes=packet_bytes,
            hop_propagation_s=units.parse_time_s(config.hop_propagation, "hop_propagation"),
            optical_constraints=config.optical_constraints, budget=budget)
