"""An ideal single non-blocking switch: every node has one port of `bandwidth`."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim import units
from ddlsim.errors import ConfigError
from ddlsim.registry import FABRICS


@dataclass
class IdealSwitchConfig:
    name: str = "ideal"
    bandwidth: str = "400Gbps"
    latency: str = "1us"
    num_nodes: int = 65536


@FABRICS.register("ideal", IdealSwitchConfig)
@dataclass(frozen=True)
class IdealSwitch:
    """One non-blocking switch: a fixed latency per message and full bandwidth per port."""

    bandwidth_bps: float
    latency_s: float
    num_nodes: int
    name: str = "ideal"

    @classmethod
    def from_config(cls, config: IdealSwitchConfig) -> IdealSwitch:
        if config.num_nodes < 1:
            raise ConfigError("num_nodes", config.num_nodes, "must be >= 1")
        return cls(bandwidth_bps=units.parse_bandwidth_bps(config.bandwidth, "bandwidth"),
                   latency_s=units.parse_time_s(config.latency, "latency"),
                   num_nodes=config.num_nodes)
