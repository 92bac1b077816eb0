"""OPSquare's constants, in one place for the analytical fabric and the packet model.

Values from Rombouts and Calabretta (2022), Section 2, unless marked as our choice:
- 3.6 Tb/s per optical channel (Section 3: "the 3.6 Tb/s links to other pods and nodes"; 18 WDM
  channels at 100 GBaud PAM-4 on one fibre); every transceiver, intra- and inter-pod, has one.
- transceiver forwarding 80 ns, switch label processing 10 ns, optical preamble 30 ns;
- 1 MB input buffer per transmitter;
- scales: M = N = 16 (256 nodes) and M = N = 32 with P = 8 (1,024 nodes, the default here).
Our choices (the paper states none): fibre propagation per hop 0 ns by default, and P = 4 at the
256-node scale (`SCALES`), so that both scales split each intra-pod switch input F = 4 ways.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.opsquare.topology import OpsquareTopology

SCALES: dict[int, tuple[int, int, int]] = {256: (16, 16, 4), 1024: (32, 32, 8)}
"""num_nodes -> (num_pods N, pod_size M, num_groups P) of the paper's two scales."""


@dataclass
class OpsquareConfig:
    """The `fabric=opsquare` schema: user-facing values with units."""

    name: str = "opsquare"
    num_pods: int = 32
    pod_size: int = 32
    num_groups: int = 8
    channel_bandwidth: str = "3.6Tbps"
    transceiver_forwarding: str = "80ns"
    label_processing: str = "10ns"
    optical_preamble: str = "30ns"
    transmit_buffer: str = "1MB"
    propagation: str = "0ns"


@dataclass(frozen=True)
class OpsquareParams:
    """Parsed OPSquare constants in internal units (seconds, bits per second, bytes)."""

    topology: OpsquareTopology
    channel_bps: float = 3.6e12
    forward_latency_s: float = 80e-9
    label_processing_s: float = 10e-9
    preamble_s: float = 30e-9
    buffer_bytes: int = 10**6
    propagation_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.channel_bps > 0:
            raise ConfigError("channel_bandwidth", self.channel_bps, "must be positive")
        for key in ("forward_latency_s", "label_processing_s", "preamble_s", "propagation_s"):
            if not getattr(self, key) >= 0:
                raise ConfigError(key, getattr(self, key), "must be zero or positive")
        if self.buffer_bytes < 0:
            raise ConfigError("transmit_buffer", self.buffer_bytes, "must be zero or positive")

    @classmethod
    def from_config(cls, config: OpsquareConfig) -> OpsquareParams:
        return cls(
            topology=OpsquareTopology(config.num_pods, config.pod_size, config.num_groups),
            channel_bps=units.parse_bandwidth_bps(config.channel_bandwidth, "channel_bandwidth"),
            forward_latency_s=units.parse_time_s(config.transceiver_forwarding, "transceiver_forwarding"),
            label_processing_s=units.parse_time_s(config.label_processing, "label_processing"),
            preamble_s=units.parse_time_s(config.optical_preamble, "optical_preamble"),
            buffer_bytes=units.parse_size_bytes(config.transmit_buffer, "transmit_buffer"),
            propagation_s=units.parse_time_s(config.propagation, "propagation"),
        )

    @classmethod
    def at_scale(cls, num_nodes: int, **overrides: object) -> OpsquareParams:
        """The paper's 256- or 1,024-node network with the default constants."""
        if num_nodes not in SCALES:
            raise ConfigError("num_nodes", num_nodes, f"the paper's scales are {sorted(SCALES)}")
        pods, size, groups = SCALES[num_nodes]
        config = OpsquareConfig(num_pods=pods, pod_size=size, num_groups=groups, **overrides)
        return cls.from_config(config)

    @property
    def hop_latency_s(self) -> float:
        """Head latency of one optical hop beyond serialisation: preamble, label, fibre."""
        return self.preamble_s + self.label_processing_s + self.propagation_s
