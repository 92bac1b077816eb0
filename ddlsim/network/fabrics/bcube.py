"""The electronic BCube baseline of SiPAC (Section VI-A): SiPAC's topology with packet switches.

Same r^L CUs and digit-correcting routes as `sipac`, but every level-l switch is an r-port
electronic packet switch: a CU's port (B = cu_bandwidth / L) is shared by all its flows on that
level, and so is the switch's output port towards a CU. A hop costs two links (`link_latency`
each), the switch's forwarding latency and the store-and-forward of one packet; flows that
meet at a port queue behind each other, which the flow model expresses as sharing the port
(SiPAC's Netbench runs see the same queues packet by packet).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.network.fabrics.base import DomainCut, Fabric
from ddlsim.network.fabrics.sipac import (
    BcubeCapabilities,
    bcube_bisection_bps,
    bcube_domain_cuts,
    bcube_hops,
    check_bcube,
)
from ddlsim.network.int_arrays import floor_mod
from ddlsim.network.pricing import Routes


@dataclass
class BcubeConfig:
    """Electronic BCube(r, L): SiPAC's topology with r-port packet switches (SiPAC VI-A)."""

    name: str = "bcube"
    r: int = 8
    levels: int = 3
    cu_bandwidth: str = "2048Gbps"
    link_latency: str = "1us"
    switch_latency: str = "120ns"
    packet: str = "4096B"
    io_latency: str = "0ns"


@FABRICS.register("bcube", BcubeConfig, summary="electronic BCube of r-port packet switches (SiPAC's baseline)")
@dataclass(frozen=True)
class Bcube(BcubeCapabilities, Fabric):
    """BCube with packet switches: ports shared by flows, switch latency and queueing per hop."""

    radix: int
    levels: int
    port_bandwidth_bps: float
    link_latency_s: float
    switch_latency_s: float
    packet_bytes: int
    io_latency_s: float = 0.0
    name: str = "bcube"

    @classmethod
    def from_config(cls, config: BcubeConfig) -> Bcube:
        check_bcube(config.r, config.levels)
        packet = units.parse_size_bytes(config.packet, "packet", allow_zero=False)
        if packet < 1:
            raise ConfigError("packet", config.packet, "must be at least one byte")
        total = units.parse_bandwidth_bps(config.cu_bandwidth, "cu_bandwidth")
        return cls(config.r, config.levels, total / config.levels,
                   units.parse_time_s(config.link_latency, "link_latency"),
                   units.parse_time_s(config.switch_latency, "switch_latency"), packet,
                   units.parse_time_s(config.io_latency, "io_latency"), config.name)

    @property
    def num_nodes(self) -> int:  # type: ignore[override]
        return self.radix ** self.levels

    @property
    def hop_latency_s(self) -> float:
        """Two links, the switch, and one packet stored and forwarded."""
        return 2 * self.link_latency_s + self.switch_latency_s + units.transfer_time_s(self.packet_bytes,
                                                                                       self.port_bandwidth_bps)

    def domain_sizes(self) -> tuple[int, ...]:
        return tuple(self.radix ** (level + 1) for level in range(self.levels))

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.hop_latency_s + self.io_latency_s, 8.0 / self.port_bandwidth_bps

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """One port of B / L per level: the CU's whole `cu_bandwidth`."""
        return self.levels * self.port_bandwidth_bps

    def bisection_bps(self) -> float | None:
        return bcube_bisection_bps(self.radix, self.levels, self.port_bandwidth_bps)

    def min_latency_s(self) -> float:
        return self.io_latency_s + self.hop_latency_s

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        return bcube_domain_cuts(self.radix, self.levels, self.port_bandwidth_bps)

    def describe(self) -> dict[str, object]:
        return {"fabric": self.name, "fabric_nodes": self.num_nodes, "bcube_r": self.radix,
                "bcube_levels": self.levels, "port_bandwidth_bps": self.port_bandwidth_bps}

    def capacity_bps(self) -> np.ndarray:
        # [uplinks (cu, level)] + [switch output ports towards (cu, level)]
        return np.full(2 * self.num_nodes * self.levels, self.port_bandwidth_bps)

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        leaving, hops = bcube_hops(src_nodes, dst_nodes, self.radix, self.levels)
        dst = np.asarray(dst_nodes, dtype=np.int64)
        offset = self.num_nodes * self.levels
        slots = []
        for level, cu in enumerate(leaving):
            weight = self.radix ** level
            arriving = cu + (floor_mod(dst // weight, self.radix) - floor_mod(cu // weight, self.radix)) * weight
            slots.append(np.where(cu >= 0, cu * self.levels + level, -1))
            slots.append(np.where(cu >= 0, offset + arriving * self.levels + level, -1))
        return Routes(self.io_latency_s + hops * self.hop_latency_s, tuple(slots), egress=())
