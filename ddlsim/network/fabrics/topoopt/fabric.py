"""The TopoOpt fabric (NSDI'23, sections 3 and 5.1): servers with d optical interfaces of bandwidth
B, joined through patch panels or 3D-MEMS OCSs into a direct-connect topology made for the job.

A job of J ranks gets a shard of J servers (rank r on server r) whose links are set once, before
the job starts, and stay fixed ("one-shot reconfiguration"). Without knowledge of the job's
traffic the shard is TopoOpt's pure data-parallel design: d ring permutations over the J
servers, chosen by TotientPerms and SelectPermutations (`rules` fixes them instead). With the
traffic, `TopoOptFabric.for_plan` holds the topology TopologyFinder (Algorithm 1) made for it.

Pricing with host-based forwarding over the shard's links is `direct_connect.DirectConnectFabric`'s;
`circuits=per_step` prices every step on circuits made for it instead.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout, NetworkCost
from ddlsim.network.fabrics.topoopt.cost import topoopt_cost
from ddlsim.network.fabrics.topoopt.direct_connect import DirectConnectFabric
from ddlsim.network.fabrics.topoopt.permutations import select_permutations, totient_perms
from ddlsim.network.fabrics.topoopt.technologies import technology
from ddlsim.network.fabrics.topoopt.topology import DirectTopology
from ddlsim.network.fabrics.topoopt.topology_finder import TopologyPlan
from ddlsim.network.int_arrays import sorted_distinct
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost


@dataclass
class TopoOptConfig:
    """TopoOpt section 5.3 defaults: 128 servers of 4 A100 GPUs, d = 4 interfaces of 100 Gbps, 1 us
    links, a patch panel. Inside a server GPUs use NVLink-class links (RAMP 7.5's DGX A100 figures:
    2.4 Tbps per GPU, 100 ns switch + 20 ns propagation), which TopoOpt does not specify.
    `circuits=per_step` sets circuits up for every step instead of once per job (RAMP 7.5's
    assumption for its TopoOpt baseline), paying `reconfiguration` when a step's pattern changes."""

    name: str = "topoopt"
    num_servers: int = 128
    gpus_per_server: int = 4
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    link_latency: str = "1us"
    forwarding_latency: str = "0us"
    intra_server_bandwidth: str = "2.4Tbps"
    intra_server_latency: str = "120ns"
    switch: str = "patch_panel"
    rules: list[int] = field(default_factory=list)
    prime_only: bool = False
    check_port_count: bool = True
    circuits: str = "fixed"
    reconfiguration: str = "0s"


def _circuit_mode(value: str) -> str:
    if value not in ("fixed", "per_step"):
        raise ConfigError("circuits", value, "must be 'fixed' (set once per job, TopoOpt) or 'per_step' "
                                             "(set up for every step, as RAMP 7.5 assumes)")
    return value


@FABRICS.register("topoopt", TopoOptConfig)
@dataclass(frozen=True)
class TopoOptFabric(DirectConnectFabric):
    """TopoOpt: a direct-connect optical shard per job, host-based forwarding between servers."""

    num_servers: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    gpus_per_server: int = 1
    forwarding_latency_s: float = 0.0
    intra_server_bandwidth_bps: float = 2.4e12
    intra_server_latency_s: float = 120e-9
    switch: str = "patch_panel"
    rules: tuple[int, ...] = ()
    prime_only: bool = False
    plan: TopologyPlan | None = None  # compared by identity: fabrics with different plans differ
    circuits: str = "fixed"
    reconfiguration_s: float = 0.0
    name: str = "topoopt"
    _shards: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def num_nodes(self) -> int:
        return self.num_servers * self.gpus_per_server

    @classmethod
    def from_config(cls, config: TopoOptConfig) -> TopoOptFabric:
        for key in ("num_servers", "gpus_per_server", "degree"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        tech = technology(config.switch)
        if config.check_port_count and config.num_servers > tech.port_count:
            raise ConfigError("num_servers", config.num_servers,
                              f"exceeds the {tech.port_count} ports of one {tech.label}, which must reach every "
                              f"server (TopoOpt Table 1); set check_port_count=false to assume larger switches")
        if len(config.rules) > config.degree or len(set(config.rules)) != len(config.rules):
            raise ConfigError("rules", list(config.rules), f"must be at most degree = {config.degree} distinct rules")
        if any(rule < 1 for rule in config.rules):
            raise ConfigError("rules", list(config.rules), "every ring rule p must be >= 1")
        return cls(num_servers=config.num_servers, degree=config.degree,
                   link_bandwidth_bps=units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"),
                   link_latency_s=units.parse_time_s(config.link_latency, "link_latency"),
                   gpus_per_server=config.gpus_per_server,
                   forwarding_latency_s=units.parse_time_s(config.forwarding_latency, "forwarding_latency"),
                   intra_server_bandwidth_bps=units.parse_bandwidth_bps(config.intra_server_bandwidth,
                                                                        "intra_server_bandwidth"),
                   intra_server_latency_s=units.parse_time_s(config.intra_server_latency, "intra_server_latency"),
                   switch=config.switch, rules=tuple(int(r) for r in config.rules), prime_only=config.prime_only,
                   circuits=_circuit_mode(config.circuits),
                   reconfiguration_s=units.parse_time_s(config.reconfiguration, "reconfiguration",
                                                      bounds=units.PERIOD_BOUNDS_S), name=config.name)

    @classmethod
    def for_plan(cls, plan: TopologyPlan, link_bandwidth_bps: float, *, gpus_per_server: int = 1,
                 link_latency_s: float = 1e-6, **options: Any) -> TopoOptFabric:
        """A fabric whose jobs on `plan.num_nodes` servers run on the topology TopologyFinder built.

        `options` are further fields (forwarding_latency_s, intra_server_bandwidth_bps, switch, name).
        """
        technology(options.get("switch", "patch_panel"))
        return cls(num_servers=plan.num_nodes, degree=plan.degree, link_bandwidth_bps=link_bandwidth_bps,
                   link_latency_s=link_latency_s, gpus_per_server=gpus_per_server, plan=plan, **options)

    # -- the shard of one job ------------------------------------------------------------------
    def default_rules(self, group_size: int) -> tuple[int, ...]:
        """Rings SelectPermutations picks for a group of `group_size` that has the whole degree."""
        candidates = totient_perms(group_size, prime_only=self.prime_only)
        return tuple(select_permutations(group_size, min(self.degree, len(candidates)), candidates))

    def build_shard(self, num_servers: int) -> DirectTopology:
        if self.plan is not None and self.plan.num_nodes == num_servers:
            return self.plan.topology
        if not self.rules:
            return DirectTopology.circulant(num_servers, self.default_rules(num_servers))
        bad = [rule for rule in self.rules if math.gcd(rule, num_servers) != 1 or rule >= num_servers]
        if bad:
            raise InfeasibleError(f"ring rules {bad} of {self.name} do not form rings over a job of {num_servers} "
                                  f"servers (a rule must be below and coprime with the number of servers)")
        return DirectTopology.circulant(num_servers, self.rules)

    def has_ring_plan(self) -> bool:
        return True

    def ring_plan(self, layout: GroupLayout) -> tuple[int, tuple[int, ...]]:
        """(GPUs per server in each group, ring rules) for a TopoOpt ring collective on `layout`.

        A group of whole servers (consecutive ranks, a multiple of gpus_per_server) runs its rings
        between servers, with the permutations TopologyFinder chose for it or the shard's own; any
        other group runs rings over its members, as SelectPermutations would pick them for its size.
        """
        g = self.gpus_per_server
        if layout.stride == 1 and layout.size % g == 0 and layout.job_ranks % g == 0:
            servers = GroupLayout(layout.size // g, 1, layout.job_ranks // g)
            if self.plan is not None and self.plan.num_nodes == servers.job_ranks:
                for choice in self.plan.rings:
                    if choice.layout == servers:
                        return g, choice.rules
            topology = self.shard(layout.job_ranks)
            if servers.size == servers.job_ranks and topology.circulant_rules:
                return g, topology.circulant_rules
            return g, (self.default_rules(servers.size) if servers.size > 1 else ())
        return 1, self.default_rules(layout.size)

    # -- circuits set up for every step (RAMP 7.5's reading) --------------------------------------
    def setup_time_s(self, previous_circuit: Hashable, circuit: Hashable) -> float:
        if self.circuits == "per_step" and previous_circuit != circuit:
            return self.reconfiguration_s
        return 0.0

    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        if self.circuits == "fixed":
            return super().price(pattern, layout, placement)
        return self._price_per_step(pattern, layout, placement)

    def _price_per_step(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        """Every step gets circuits made for it: each server's d interfaces are scheduled over its
        peers in ceil(peers / d) rounds (a bipartite edge colouring), and bytes drain at d x B per
        server (the preemptive, Birkhoff-von Neumann bound). Extra rounds pay `reconfiguration_s`."""
        g = self.gpus_per_server
        servers = self.priced_gpus(layout, placement) // g
        if isinstance(pattern, Mesh) and servers == self.servers_for(layout.job_ranks):
            sizes = pattern.block_sizes()
            if sizes.size == 1 and int(sizes[0]) == layout.size == layout.job_ranks and servers > 1:
                peers = servers - 1
                per_server = g * g * peers * pattern.weight
                inside = (g - 1) * pattern.weight * units.BITS_PER_BYTE / self.intra_server_bandwidth_bps
                return self._rounds_cost(peers, per_server, inside)
        listed = pattern.pairs()
        src = placement.node_of(job_ranks(layout, listed.src).ravel())
        dst = placement.node_of(job_ranks(layout, listed.dst).ravel())
        weights = np.tile(listed.weight, layout.num_groups)
        inter = src // g != dst // g
        inside = 0.0
        if (~inter).any():
            busiest = max(np.bincount(src[~inter], weights=weights[~inter]).max(),
                          np.bincount(dst[~inter], weights=weights[~inter]).max())
            inside = busiest * units.BITS_PER_BYTE / self.intra_server_bandwidth_bps
        if not inter.any():
            return PatternCost(self.intra_server_latency_s if src.size else 0.0, inside)
        a, b, w = src[inter] // g, dst[inter] // g, weights[inter]
        key_type = np.int32 if servers * servers <= np.iinfo(np.int32).max else np.int64  # 32 bits sort faster
        pairs = sorted_distinct((a * servers + b).astype(key_type, copy=False))
        peers = int(max(np.bincount(pairs // servers).max(), np.bincount(pairs % servers).max()))
        per_server = max(np.bincount(a, weights=w).max(), np.bincount(b, weights=w).max())
        return self._rounds_cost(peers, per_server, inside)

    def _rounds_cost(self, peers: int, per_server_bytes: float, inside_s: float) -> PatternCost:
        rounds = -(-peers // self.degree)
        latency = rounds * self.link_latency_s + (rounds - 1) * self.reconfiguration_s
        transfer = per_server_bytes * units.BITS_PER_BYTE / (self.degree * self.link_bandwidth_bps)
        return PatternCost(latency, max(transfer, inside_s))

    def network_cost(self, num_ranks: int) -> NetworkCost:
        """Appendix G cost of the job's servers (scope "job"); power from RAMP Table 4 figures."""
        if self.switch not in ("patch_panel", "ocs_3d_mems"):
            raise InfeasibleError(f"{self.switch} has no price in TopoOpt Table 2 (not commercial)")
        return topoopt_cost(self.servers_for(num_ranks), self.degree, self.link_bandwidth_bps,
                            switch=self.switch).network_cost("job")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "optical_switch": self.switch}
