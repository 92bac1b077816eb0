"""The Expander baseline of TopoOpt section 5.1: d interfaces of bandwidth B per server, cabled
into a random d-regular graph (Jellyfish / Xpander), hosts forwarding over shortest paths.

Like TopoOpt, a job runs on a shard of its own servers; unlike TopoOpt, the shard's graph ignores
the job's traffic, so ring neighbours are rarely one hop apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsim import units
from ddlsim.errors import ConfigError, InfeasibleError
from ddlsim.network.fabrics.topoopt.cost import expander_cost
from ddlsim.network.fabrics.topoopt.fabric import DirectConnectFabric
from ddlsim.network.fabrics.topoopt.topology import MAX_EXPLICIT_NODES, DirectTopology, expander_topology
from ddlsim.registry import FABRICS
from ddlsim.types import NetworkCost


@dataclass
class ExpanderConfig:
    """TopoOpt section 5.3 setting: 128 servers, d = 4 interfaces of 100 Gbps, 1 us links."""

    name: str = "expander"
    num_nodes: int = 128
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    link_latency: str = "1us"
    forwarding_latency: str = "0us"
    seed: int = 0


@FABRICS.register("expander", ExpanderConfig)
@dataclass(frozen=True)
class ExpanderFabric(DirectConnectFabric):
    """A random d-regular direct-connect graph with host-based forwarding (TopoOpt's Expander)."""

    num_nodes: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    forwarding_latency_s: float = 0.0
    seed: int = 0
    name: str = "expander"
    _shards: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_config(cls, config: ExpanderConfig) -> ExpanderFabric:
        if not 2 <= config.num_nodes <= MAX_EXPLICIT_NODES:
            raise ConfigError("num_nodes", config.num_nodes,
                              f"must be in [2, {MAX_EXPLICIT_NODES}]: shortest-path routing keeps an n x n table")
        if not 1 <= config.degree < config.num_nodes:
            raise ConfigError("degree", config.degree, f"must be in [1, {config.num_nodes - 1}]")
        return cls(num_nodes=config.num_nodes, degree=config.degree,
                   link_bandwidth_bps=units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"),
                   link_latency_s=units.parse_time_s(config.link_latency, "link_latency"),
                   forwarding_latency_s=units.parse_time_s(config.forwarding_latency, "forwarding_latency"),
                   seed=config.seed, name=config.name)

    def build_shard(self, num_ranks: int) -> DirectTopology:
        # A small job cannot use more distinct neighbours than it has servers, nor an odd n x d.
        degree = min(self.degree, num_ranks - 1)
        if (num_ranks * degree) % 2:
            degree -= 1
        if degree < 1:
            raise InfeasibleError(f"no {self.degree}-regular graph exists on {num_ranks} servers (n x d must be even)")
        return expander_topology(num_ranks, degree, self.seed)

    def network_cost(self, num_ranks: int) -> NetworkCost:
        return expander_cost(num_ranks, self.degree, self.link_bandwidth_bps).network_cost("job")
