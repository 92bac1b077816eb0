"""The TopoOpt fabric (NSDI'23, sections 3 and 5.1): servers with d optical interfaces of bandwidth
B, joined through patch panels or 3D-MEMS OCSs into a direct-connect topology made for the job.

A job of J ranks gets a shard of J servers (rank r on server r) whose links are set once, before
the job starts, and stay fixed ("one-shot reconfiguration"). Without knowledge of the job's
traffic the shard is TopoOpt's pure data-parallel design: d ring permutations over the J
servers, chosen by TotientPerms and SelectPermutations (`rules` fixes them instead). With the
traffic, `TopoOptFabric.for_plan` holds the topology TopologyFinder (Algorithm 1) made for it.

Pricing: every flow follows its route (CoinChangeMod on a ring union, shortest paths otherwise)
and loads every link it crosses (host-based forwarding); a step lasts as long as its most loaded
link needs, plus the longest route's latency: `link_latency` per hop and `forwarding_latency`
per relaying server. `traffic_report` gives the bandwidth tax of sections 5.4 and 5.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddlsim import units
from ddlsim.errors import ConfigError, InfeasibleError
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.topoopt.cost import topoopt_cost
from ddlsim.network.fabrics.topoopt.permutations import select_permutations, totient_perms
from ddlsim.network.fabrics.topoopt.technologies import technology
from ddlsim.network.fabrics.topoopt.topology import MAX_EXPLICIT_NODES, DirectTopology
from ddlsim.network.fabrics.topoopt.topology_finder import TopologyPlan
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost, Routes, price_flows
from ddlsim.registry import FABRICS
from ddlsim.types import GroupLayout, NetworkCost


@dataclass
class TopoOptConfig:
    """TopoOpt section 5.3 defaults: 128 servers, d = 4 interfaces of 100 Gbps, 1 us links."""

    name: str = "topoopt"
    num_nodes: int = 128
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    link_latency: str = "1us"
    forwarding_latency: str = "0us"
    switch: str = "patch_panel"
    rules: list[int] = field(default_factory=list)
    prime_only: bool = False
    check_port_count: bool = True


@dataclass(frozen=True)
class TrafficReport:
    """How a traffic matrix fares on a shard: bandwidth tax, hop counts, link utilisation spread."""

    bandwidth_tax: float
    mean_hops: float
    max_hops: int
    max_link_bytes: float
    min_link_bytes: float
    drain_time_s: float


class DirectConnectFabric(Fabric):
    """Pricing shared by direct-connect fabrics: a job runs on a shard of its own servers, flows are
    forwarded by hosts along their routes, links are `link_bandwidth_bps` each way.

    Subclasses are frozen dataclasses with `name`, `num_nodes`, `degree`, `link_bandwidth_bps`,
    `link_latency_s`, `forwarding_latency_s` and a `_shards` cache, and implement `build_shard`.
    """

    name: str
    num_nodes: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    forwarding_latency_s: float
    _shards: dict

    def build_shard(self, num_ranks: int) -> DirectTopology:
        raise NotImplementedError

    def shard(self, num_ranks: int) -> DirectTopology:
        """The topology of the servers a job of `num_ranks` ranks runs on (built once, cached)."""
        if num_ranks > self.num_nodes:
            raise InfeasibleError(f"{num_ranks} ranks do not fit on {self.name}, which has {self.num_nodes} servers "
                                  f"({num_ranks - self.num_nodes} too many)")
        topology = self._shards.get(num_ranks)
        if topology is None:
            topology = DirectTopology.from_parts(1, []) if num_ranks == 1 else self.build_shard(num_ranks)
            self._shards[num_ranks] = topology
        return topology

    # -- Fabric interface ----------------------------------------------------------------------
    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.link_latency_s, units.BITS_PER_BYTE / self.link_bandwidth_bps

    def _latency(self, hops: np.ndarray) -> np.ndarray:
        return hops * self.link_latency_s + np.maximum(hops - 1, 0) * self.forwarding_latency_s

    def capacity_bps(self) -> np.ndarray:
        return np.full(self.shard(self.num_nodes).num_links, self.link_bandwidth_bps)

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        """Routes on the shard of the whole cluster (pricing uses the job's own shard instead)."""
        topology = self.shard(self.num_nodes)
        loads = topology.link_loads(src_nodes, dst_nodes, weights)
        return Routes(self._latency(topology.hops(src_nodes, dst_nodes)), (), fixed_loads=loads)

    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        topology = self.shard(layout.job_ranks)
        if isinstance(pattern, Mesh):
            cost = self._price_full_mesh(pattern, layout, topology)
            if cost is not None:
                return cost
        listed = pattern.pairs()
        src = placement.node_of(job_ranks(layout, listed.src).ravel())
        dst = placement.node_of(job_ranks(layout, listed.dst).ravel())
        weights = np.tile(listed.weight, layout.num_groups)
        classes = None if listed.classes is None else np.tile(listed.classes, layout.num_groups)
        if not src.size:
            return PatternCost.zero(pattern.num_classes)
        latency = self._latency(topology.hops(src, dst))
        links = topology.path_links(src, dst)
        if links is not None:
            # One path per flow: hand the hops to the core pricer, which also prices each pattern
            # class alone (pipelined steps activate windows of classes).
            routes = Routes(latency, tuple(links), egress=(0,))
        else:
            routes = Routes(latency, (), fixed_loads=topology.link_loads(src, dst, weights))
        return price_flows(routes, np.full(topology.num_links, self.link_bandwidth_bps), weights,
                           classes=classes, num_classes=pattern.num_classes, sources=src)

    def _price_full_mesh(self, mesh: Mesh, layout: GroupLayout, topology: DirectTopology) -> PatternCost | None:
        """A mesh over the whole job on a ring union, in closed form (every link of a ring carries
        the same bytes by symmetry: the sum over offsets of that ring's coin count)."""
        sizes = mesh.block_sizes()
        if topology.circulant_rules is None or layout.size != layout.job_ranks or sizes.size != 1:
            if mesh.num_pairs() * layout.num_groups > MAX_EXPLICIT_NODES ** 2:
                raise InfeasibleError(
                    f"{self.name} prices a partial all-to-all by listing its transfers, and "
                    f"{mesh.num_pairs() * layout.num_groups} transfers are too many; only an all-to-all over the "
                    f"whole job has a closed form here")
            return None
        if int(sizes[0]) != topology.num_nodes:
            return None
        per_link = topology.coin_routes.coin_counts()[1:].sum(axis=0) * mesh.weight
        s_per_unit = float(per_link.max()) * units.BITS_PER_BYTE / self.link_bandwidth_bps
        return PatternCost(float(self._latency(np.array([topology.coin_routes.diameter]))[0]), s_per_unit)

    # -- reports -------------------------------------------------------------------------------
    def traffic_report(self, src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray,
                       num_ranks: int | None = None) -> TrafficReport:
        """Bandwidth tax (link bytes over demand bytes), hop counts and link loads of one traffic
        matrix on the shard of `num_ranks` servers (default: the whole cluster)."""
        topology = self.shard(num_ranks or self.num_nodes)
        src, dst = np.asarray(src), np.asarray(dst)
        size = np.broadcast_to(np.asarray(size_bytes, dtype=float), src.shape)
        moving = (src != dst) & (size > 0)
        loads = topology.link_loads(src[moving], dst[moving], size[moving])
        hops = topology.hops(src[moving], dst[moving])
        demand = float(size[moving].sum())
        return TrafficReport(
            bandwidth_tax=float(loads.sum() / demand) if demand else 1.0,
            mean_hops=float(np.average(hops, weights=size[moving])) if demand else 0.0,
            max_hops=int(hops.max()) if hops.size else 0,
            max_link_bytes=float(loads.max()) if loads.size else 0.0,
            min_link_bytes=float(loads.min()) if loads.size else 0.0,
            drain_time_s=float(loads.max() * units.BITS_PER_BYTE / self.link_bandwidth_bps) if loads.size else 0.0)

    def describe(self) -> dict[str, Any]:
        return {"fabric": self.name, "fabric_nodes": self.num_nodes, "degree": self.degree,
                "link_bandwidth_bps": self.link_bandwidth_bps}


@FABRICS.register("topoopt", TopoOptConfig)
@dataclass(frozen=True)
class TopoOptFabric(DirectConnectFabric):
    """TopoOpt: a direct-connect optical shard per job, host-based forwarding between servers."""

    num_nodes: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    forwarding_latency_s: float = 0.0
    switch: str = "patch_panel"
    rules: tuple[int, ...] = ()
    prime_only: bool = False
    plan: TopologyPlan | None = None  # compared by identity: fabrics with different plans differ
    name: str = "topoopt"
    _shards: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_config(cls, config: TopoOptConfig) -> TopoOptFabric:
        if config.num_nodes < 1:
            raise ConfigError("num_nodes", config.num_nodes, "must be >= 1")
        if config.degree < 1:
            raise ConfigError("degree", config.degree, "must be >= 1")
        tech = technology(config.switch)
        if config.check_port_count and config.num_nodes > tech.port_count:
            raise ConfigError("num_nodes", config.num_nodes,
                              f"exceeds the {tech.port_count} ports of one {tech.label}, which must reach every "
                              f"server (TopoOpt Table 1); set check_port_count=false to assume larger switches")
        if len(config.rules) > config.degree or len(set(config.rules)) != len(config.rules):
            raise ConfigError("rules", list(config.rules), f"must be at most degree = {config.degree} distinct rules")
        if any(rule < 1 for rule in config.rules):
            raise ConfigError("rules", list(config.rules), "every ring rule p must be >= 1")
        return cls(num_nodes=config.num_nodes, degree=config.degree,
                   link_bandwidth_bps=units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"),
                   link_latency_s=units.parse_time_s(config.link_latency, "link_latency"),
                   forwarding_latency_s=units.parse_time_s(config.forwarding_latency, "forwarding_latency"),
                   switch=config.switch, rules=tuple(int(r) for r in config.rules), prime_only=config.prime_only,
                   name=config.name)

    @classmethod
    def for_plan(cls, plan: TopologyPlan, link_bandwidth_bps: float, *, link_latency_s: float = 1e-6,
                 forwarding_latency_s: float = 0.0, switch: str = "patch_panel",
                 name: str = "topoopt") -> TopoOptFabric:
        """A fabric whose jobs of `plan.num_nodes` ranks run on the topology TopologyFinder built."""
        technology(switch)
        return cls(num_nodes=plan.num_nodes, degree=plan.degree, link_bandwidth_bps=link_bandwidth_bps,
                   link_latency_s=link_latency_s, forwarding_latency_s=forwarding_latency_s, switch=switch,
                   plan=plan, name=name)

    # -- the shard of one job ------------------------------------------------------------------
    def default_rules(self, group_size: int) -> tuple[int, ...]:
        """Rings SelectPermutations picks for a group of `group_size` that has the whole degree."""
        candidates = totient_perms(group_size, prime_only=self.prime_only)
        return tuple(select_permutations(group_size, min(self.degree, len(candidates)), candidates))

    def build_shard(self, num_ranks: int) -> DirectTopology:
        if self.plan is not None and self.plan.num_nodes == num_ranks:
            return self.plan.topology
        if not self.rules:
            return DirectTopology.circulant(num_ranks, self.default_rules(num_ranks))
        bad = [rule for rule in self.rules if math.gcd(rule, num_ranks) != 1 or rule >= num_ranks]
        if bad:
            raise InfeasibleError(f"ring rules {bad} of {self.name} do not form rings over a job of {num_ranks} "
                                  f"servers (a rule must be below and coprime with the job size)")
        return DirectTopology.circulant(num_ranks, self.rules)

    def ring_rules(self, layout: GroupLayout) -> tuple[int, ...]:
        """The ring permutations a TopoOpt ring collective uses in the groups of `layout`."""
        if self.plan is not None and self.plan.num_nodes == layout.job_ranks:
            for choice in self.plan.rings:
                if choice.layout == layout:
                    return choice.rules
        topology = self.shard(layout.job_ranks)
        if layout.size == layout.job_ranks and topology.circulant_rules:
            return topology.circulant_rules
        return self.default_rules(layout.size)

    def network_cost(self, num_ranks: int) -> NetworkCost:
        """Appendix G cost of the job's shard (scope "job"); power from RAMP Table 4 figures."""
        if self.switch not in ("patch_panel", "ocs_3d_mems"):
            raise InfeasibleError(f"{self.switch} has no price in TopoOpt Table 2 (not commercial)")
        return topoopt_cost(num_ranks, self.degree, self.link_bandwidth_bps, switch=self.switch).network_cost("job")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "optical_switch": self.switch}
