"""An ideal single non-blocking switch: every node has one port of `bandwidth` each way.

A step costs `latency` (everything head to head: NIC, switch, propagation) plus the busiest
port's bytes over `bandwidth`. This is the alpha-beta model of the collective literature:
alpha = latency, beta = 1 / bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.base import Fabric, expand_listed, raise_to_port_loads
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement
from ddlsim.network.pricing import PatternCost, Routes


@dataclass
class IdealSwitchConfig:
    name: str = "ideal"
    bandwidth: str = "400Gbps"
    latency: str = "1us"
    num_nodes: int = 65536
    multicast: bool = False


@FABRICS.register("ideal", IdealSwitchConfig)
@dataclass(frozen=True)
class IdealSwitch(Fabric):
    """One non-blocking switch: a fixed latency per message and full bandwidth per port."""

    bandwidth_bps: float
    latency_s: float
    num_nodes: int
    multicast: bool = False
    name: str = "ideal"

    @classmethod
    def from_config(cls, config: IdealSwitchConfig) -> IdealSwitch:
        if config.num_nodes < 1:
            raise ConfigError("num_nodes", config.num_nodes, "must be >= 1")
        return cls(bandwidth_bps=units.parse_bandwidth_bps(config.bandwidth, "bandwidth"),
                   latency_s=units.parse_time_s(config.latency, "latency"),
                   num_nodes=config.num_nodes, multicast=config.multicast, name=config.name)

    @classmethod
    def node_bandwidth_key(cls) -> str | None:
        return "bandwidth"

    def supports_multicast(self) -> bool:
        return self.multicast

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.latency_s, units.BITS_PER_BYTE / self.bandwidth_bps

    def node_egress_bps(self) -> float:
        return self.bandwidth_bps

    def bisection_bps(self) -> float:
        """Non-blocking: the cut carries what the smaller half's ports can send."""
        return (self.num_nodes // 2) * self.bandwidth_bps

    def min_latency_s(self) -> float:
        return self.latency_s

    @cached_property
    def _capacity(self) -> np.ndarray:
        return np.full(2 * self.num_nodes, self.bandwidth_bps)

    def capacity_bps(self) -> np.ndarray:
        return self._capacity

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        latency = np.full(src_nodes.size, self.latency_s)
        return Routes(latency, (src_nodes, self.num_nodes + dst_nodes), egress=(0,))

    def price_listed(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        if pattern.multicast and self.multicast:
            return super().price_listed(pattern, layout, placement)
        if pattern.num_classes and not getattr(pattern, "one_to_one", False):
            return super().price_listed(pattern, layout, placement)
        if getattr(pattern, "one_to_one", False) and not pattern.num_classes:
            # One transfer per port: the largest transfer, without listing the pairs of every group.
            if pattern.num_pairs() == 0:
                return PatternCost.zero()
            busiest = float(np.max(pattern.weight))
            return PatternCost(self.latency_s, busiest * units.BITS_PER_BYTE / self.bandwidth_bps)
        src, dst, weight, classes = expand_listed(pattern, layout, placement)
        if pattern.num_classes:  # one transfer per port: each class costs its largest transfer
            class_time = np.zeros(pattern.num_classes)
            np.maximum.at(class_time, classes, weight * units.BITS_PER_BYTE / self.bandwidth_bps)
            present = np.zeros(pattern.num_classes, dtype=bool)
            present[classes] = True
            return PatternCost(self.latency_s if src.size else 0.0, float(class_time.max(initial=0.0)),
                               np.where(present, self.latency_s, 0.0), class_time, True)
        if src.size == 0:
            return PatternCost.zero()
        busiest = max(np.bincount(src, weight).max(), np.bincount(dst, weight).max())
        return PatternCost(self.latency_s, float(busiest) * units.BITS_PER_BYTE / self.bandwidth_bps)

    def class_floor(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Every flow takes `latency_s`; a port carries at least the largest transfer through it."""
        classes = getattr(pattern, "classes", None)
        if not pattern.num_classes or classes is None:
            return None
        present = np.bincount(classes, minlength=pattern.num_classes) > 0
        heaviest = np.zeros(pattern.num_classes)
        np.maximum.at(heaviest, classes, pattern.weight)
        return np.where(present, self.latency_s, 0.0), heaviest * units.BITS_PER_BYTE / self.bandwidth_bps

    def pipeline_floor(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                       ) -> tuple[np.ndarray, np.ndarray] | None:
        """`class_floor`, raised to what one class alone sends or receives through a port (sent
        once by a multicast source). The groups of a layout use ports of their own, so the
        pattern's positions stand for them."""
        found = self.class_floor(pattern, layout, placement)
        if found is None or getattr(pattern, "one_to_one", False):
            return found
        class_latency, class_time = found
        multicast = pattern.multicast and self.multicast
        for positions in (pattern.dst,) if multicast else (pattern.dst, pattern.src):
            raise_to_port_loads(class_time, positions, pattern.classes, pattern.weight, pattern.group_size,
                                self.bandwidth_bps)
        return class_latency, class_time

    def price_mesh(self, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost:
        sizes = mesh.block_sizes()
        largest = int(sizes.max()) if sizes.size else 0
        if largest < 2:
            return PatternCost.zero()
        sent = 1 if mesh.multicast and self.multicast else largest - 1
        busiest = max(sent, largest - 1) * mesh.weight
        return PatternCost(self.latency_s, busiest * units.BITS_PER_BYTE / self.bandwidth_bps)
