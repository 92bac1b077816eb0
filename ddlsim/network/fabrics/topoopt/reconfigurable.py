"""TopoOpt's reconfigurable baselines on the normal pricing path: `ocs_reconfig` and `sipml`.

Both have d circuits of bandwidth B per server (per GPU for SiP-ML, whose GPUs have their own
optical I/O) and choose them with Algorithm 5 for the traffic in front of them:

* `ocs_reconfig` (TopoOpt Sec. 5.1, App. E.4): 3D-MEMS OCSs (10 ms), Algorithm 5 with the halving
  discount, circuits kept connected, host-based forwarding over them;
* `sipml` (App. F): Algorithm 5 without discount, 25 us reconfiguration, no forwarding, so a step
  whose transfers need more circuits than a node has runs in several rounds, one reconfiguration
  each.

Pricing a collective step by step, the circuits follow each step's pattern: a step whose pattern
differs from the previous step's pays one reconfiguration (`setup_time_s`), repetitions of the
same step reuse the circuits, and a multi-round SiP-ML step pays its extra rounds' reconfigurations
in its latency (one more per repetition than strictly needed when its last round's circuits are
not its first's). This is the paper's policy where the demand is known at once; the 50 ms
measurement cycle of OCS-reconfig within a training iteration is modelled by the training room
(`ddlsim.training.reconfiguration`, ``task=topoopt`` with the ``ocs_reconfig`` system), which
prices the circuits with `circuits.Circuits`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout, NetworkCost
from ddlsim.network.fabrics.topoopt.circuits import ReconfigPolicy, on_demand_rounds
from ddlsim.network.fabrics.topoopt.cost import ocs_reconfig_cost
from ddlsim.network.fabrics.topoopt.direct_connect import DirectConnectFabric
from ddlsim.network.fabrics.topoopt.ocs_reconfig import ocs_reconfig
from ddlsim.network.fabrics.topoopt.topology import MAX_EXPLICIT_NODES, DirectTopology
from ddlsim.network.patterns import Pattern
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost, Routes, price_flows


@dataclass
class OcsReconfigConfig:
    """TopoOpt Sec. 5.1 OCS-reconfig: 128 servers of 4 GPUs, d = 4 OCS ports of 100 Gbps, 10 ms."""

    name: str = "ocs_reconfig"
    num_servers: int = 128
    gpus_per_server: int = 4
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    link_latency: str = "1us"
    reconfiguration: str = "10ms"
    forwarding: bool = True
    discount: bool = True
    intra_server_bandwidth: str = "2.4Tbps"
    intra_server_latency: str = "120ns"


@dataclass
class SipMlConfig:
    """SiP-ML as TopoOpt App. F runs it: 512 GPUs with d = 4 wavelengths of 100 Gbps each, 25 us."""

    name: str = "sipml"
    num_servers: int = 512
    gpus_per_server: int = 1
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    link_latency: str = "1us"
    reconfiguration: str = "25us"
    forwarding: bool = False
    discount: bool = False
    intra_server_bandwidth: str = "2.4Tbps"
    intra_server_latency: str = "120ns"


@dataclass(frozen=True)
class ReconfigurableFabric(DirectConnectFabric):
    """Circuits chosen by Algorithm 5 for every step's traffic (OCS-reconfig, SiP-ML)."""

    num_servers: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    reconfiguration_s: float
    forwarding: bool = True
    discount: bool = True
    gpus_per_server: int = 1
    forwarding_latency_s: float = 0.0
    intra_server_bandwidth_bps: float = 2.4e12
    intra_server_latency_s: float = 120e-9
    name: str = "ocs_reconfig"
    _shards: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def num_nodes(self) -> int:
        return self.num_servers * self.gpus_per_server

    @classmethod
    def from_config(cls, config: OcsReconfigConfig | SipMlConfig) -> ReconfigurableFabric:
        for key in ("num_servers", "gpus_per_server", "degree"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        if config.num_servers > MAX_EXPLICIT_NODES:
            raise ConfigError("num_servers", config.num_servers,
                              f"must be at most {MAX_EXPLICIT_NODES}: Algorithm 5 and the routes use n x n matrices")
        return cls(num_servers=config.num_servers, degree=config.degree,
                   link_bandwidth_bps=units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"),
                   link_latency_s=units.parse_time_s(config.link_latency, "link_latency"),
                   reconfiguration_s=units.parse_time_s(config.reconfiguration, "reconfiguration",
                                                      bounds=units.PERIOD_BOUNDS_S),
                   forwarding=config.forwarding, discount=config.discount, gpus_per_server=config.gpus_per_server,
                   intra_server_bandwidth_bps=units.parse_bandwidth_bps(config.intra_server_bandwidth,
                                                                        "intra_server_bandwidth"),
                   intra_server_latency_s=units.parse_time_s(config.intra_server_latency, "intra_server_latency"),
                   name=config.name)

    def build_shard(self, num_servers: int) -> DirectTopology:
        # Only used for capacity_bps()/route(): circuits are chosen per step in `price`.
        return DirectTopology.from_parts(num_servers, [])

    def setup_time_s(self, previous_circuit: Hashable, circuit: Hashable) -> float:
        return 0.0 if previous_circuit == circuit else self.reconfiguration_s

    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        listed = pattern.pairs()
        g = self.gpus_per_server
        servers = self.priced_gpus(layout, placement) // g
        src = placement.node_of(job_ranks(layout, listed.src).ravel())
        dst = placement.node_of(job_ranks(layout, listed.dst).ravel())
        weights = np.tile(listed.weight, layout.num_groups)
        if not src.size:
            return PatternCost.zero()
        inter = src // g != dst // g
        demand = np.zeros((servers, servers))
        np.add.at(demand, (src[inter] // g, dst[inter] // g), weights[inter])
        latency = self.intra_server_latency_s if not inter.all() else 0.0
        s_per_unit = 0.0
        if (~inter).any():
            per_gpu = np.bincount(src[~inter], weights=weights[~inter]).max()
            per_gpu = max(per_gpu, np.bincount(dst[~inter], weights=weights[~inter]).max())
            s_per_unit = per_gpu * units.BITS_PER_BYTE / self.intra_server_bandwidth_bps
        if inter.any():
            circuit_latency, circuit_s = self._circuits(demand)
            latency, s_per_unit = max(latency, circuit_latency), max(s_per_unit, circuit_s)
        return PatternCost(latency, s_per_unit)

    def _circuits(self, demand: np.ndarray) -> tuple[float, float]:
        """(latency, seconds per weight unit) of one step's inter-server demand on its circuits."""
        if self.forwarding:
            links = ocs_reconfig(demand, self.degree, discount=self.discount, forwarding=True)
            src, dst = np.nonzero(links)
            topology = DirectTopology.from_parts(demand.shape[0], [(np.repeat(src, links[src, dst]),
                                                                    np.repeat(dst, links[src, dst]), "circuit")])
            pairs_src, pairs_dst = np.nonzero(demand)
            loads = topology.link_loads(pairs_src, pairs_dst, demand[pairs_src, pairs_dst])
            sizes = demand[pairs_src, pairs_dst]
            routes = Routes(topology.hops(pairs_src, pairs_dst) * self.link_latency_s, (), fixed_loads=loads)
            cost = price_flows(routes, np.full(topology.num_links, self.link_bandwidth_bps), sizes)
            return cost.latency_s, cost.s_per_unit
        policy = ReconfigPolicy(self.degree, self.link_bandwidth_bps, self.reconfiguration_s, None, False,
                                self.discount)
        scale = float(demand.max())
        first, seconds_at_one_bps, later, last = on_demand_rounds(policy, demand / scale)
        extra = later + (0 if np.array_equal(first, last) else 1)
        return (self.link_latency_s + extra * self.reconfiguration_s,
                seconds_at_one_bps * scale / self.link_bandwidth_bps)



@FABRICS.register("ocs_reconfig", OcsReconfigConfig)
@dataclass(frozen=True)
class OcsReconfigFabric(ReconfigurableFabric):
    """OCS-reconfig: 3D-MEMS circuits re-planned by Algorithm 5, host-based forwarding over them."""

    def network_cost(self, num_ranks: int) -> NetworkCost:
        """Appendix G: d OCSs connected to all servers, in a flat topology."""
        return ocs_reconfig_cost(self.servers_for(num_ranks), self.degree, self.link_bandwidth_bps).network_cost()


@FABRICS.register("sipml", SipMlConfig)
@dataclass(frozen=True)
class SipMlFabric(ReconfigurableFabric):
    """SiP-ML as TopoOpt runs it: circuits rebuilt per step, 25 us, no forwarding (no cost model:
    the paper prices no silicon-photonic parts)."""
