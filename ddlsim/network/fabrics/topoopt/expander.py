"""The Expander baseline of TopoOpt section 5.1: d interfaces of bandwidth B per server, cabled
into a random d-regular graph (Jellyfish / Xpander), hosts forwarding over shortest paths.

Like TopoOpt, a job runs on a shard of its own servers; unlike TopoOpt, the shard's graph ignores
the job's traffic, so ring neighbours are rarely one hop apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.seeds import check_seed
from ddlsim.core.types import NetworkCost
from ddlsim.network.fabrics.topoopt.cost import expander_cost
from ddlsim.network.fabrics.topoopt.direct_connect import DirectConnectFabric
from ddlsim.network.fabrics.topoopt.topology import MAX_EXPLICIT_NODES, DirectTopology, expander_topology


@dataclass
class ExpanderConfig:
    """TopoOpt section 5.3 setting: 128 servers of 4 GPUs, d = 4 interfaces of 100 Gbps, 1 us links
    (intra-server figures as in the topoopt fabric)."""

    name: str = "expander"
    num_servers: int = 128
    gpus_per_server: int = 4
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    link_latency: str = "1us"
    forwarding_latency: str = "0us"
    intra_server_bandwidth: str = "2.4Tbps"
    intra_server_latency: str = "120ns"
    seed: int = 0


@FABRICS.register("expander", ExpanderConfig)
@dataclass(frozen=True)
class ExpanderFabric(DirectConnectFabric):
    """A random d-regular direct-connect graph with host-based forwarding (TopoOpt's Expander)."""

    num_servers: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    gpus_per_server: int = 1
    forwarding_latency_s: float = 0.0
    intra_server_bandwidth_bps: float = 2.4e12
    intra_server_latency_s: float = 120e-9
    seed: int = 0
    name: str = "expander"
    _shards: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def num_nodes(self) -> int:
        return self.num_servers * self.gpus_per_server

    @classmethod
    def from_config(cls, config: ExpanderConfig) -> ExpanderFabric:
        if not 2 <= config.num_servers <= MAX_EXPLICIT_NODES:
            raise ConfigError("num_servers", config.num_servers,
                              f"must be in [2, {MAX_EXPLICIT_NODES}]: shortest-path routing keeps an n x n table")
        if not 1 <= config.degree < config.num_servers:
            raise ConfigError("degree", config.degree, f"must be in [1, {config.num_servers - 1}]")
        if config.gpus_per_server < 1:
            raise ConfigError("gpus_per_server", config.gpus_per_server, "must be >= 1")
        return cls(num_servers=config.num_servers, degree=config.degree,
                   link_bandwidth_bps=units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"),
                   link_latency_s=units.parse_time_s(config.link_latency, "link_latency"),
                   gpus_per_server=config.gpus_per_server,
                   forwarding_latency_s=units.parse_time_s(config.forwarding_latency, "forwarding_latency"),
                   intra_server_bandwidth_bps=units.parse_bandwidth_bps(config.intra_server_bandwidth,
                                                                        "intra_server_bandwidth"),
                   intra_server_latency_s=units.parse_time_s(config.intra_server_latency, "intra_server_latency"),
                   seed=check_seed(config.seed), name=config.name)

    def build_shard(self, num_servers: int) -> DirectTopology:
        # A small job cannot use more distinct neighbours than it has servers, nor an odd n x d.
        degree = min(self.degree, num_servers - 1)
        if (num_servers * degree) % 2:
            degree -= 1
        if degree < 1:
            raise InfeasibleError(f"no {self.degree}-regular graph exists on {num_servers} servers "
                                  "(n x d must be even)")
        return expander_topology(num_servers, degree, self.seed)

    def network_cost(self, num_ranks: int) -> NetworkCost:
        return expander_cost(self.servers_for(num_ranks), self.degree, self.link_bandwidth_bps).network_cost("job")
