"""Multi-tier electrical fat-trees: the DGX A100 SuperPod and the H100 leaf-spine.

GPUs sit in nodes of `gpus_per_node` behind a node switch (NVSwitch/NVLink): flows between two
GPUs of one node use the GPUs' node links. Every other flow leaves through the sending GPU's
NIC into a tree of packet switches with one or more tiers; `tier_sizes[t]` is the number of
GPUs under one tier-t switch group (leaf first, the last tier covers the whole fabric). A flow
whose nearest common tier is t crosses 2t + 1 switches and the links of tiers 0..t twice.

Shared resources: each GPU's node-link egress and ingress, each GPU's NIC egress and ingress,
and the uplink and downlink bundles of every tier-t domain below the top, whose capacity is the
domain's NIC bandwidth divided by `oversubscription[t]` (or, with `uplinks_per_domain`, each
physical uplink and downlink of the bundle apart, chosen per flow by ECMP: `ecmp.py`). Latency of a flow: node I/O, plus
propagation both ways up to its common tier, plus the switches crossed.

Constants (RAMP Section 7.5 for the SuperPod; OPSquare Section 2 for the H100 leaf-spine) are
documented in docs/network.md with their sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout, NetworkCost
from ddlsim.network.fabrics.base import DomainCut, Fabric, expand_listed
from ddlsim.network.fabrics.fat_tree import forms
from ddlsim.network.fabrics.fat_tree.cost import EPS_MODELS
from ddlsim.network.fabrics.fat_tree.ecmp import check_uplinks, uplink_indices
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement
from ddlsim.network.pricing import PatternCost, Routes


@dataclass
class SuperPodConfig:
    """DGX A100 SuperPod scaled to 65,536 GPUs (RAMP 7.5): NVSwitch nodes + 3 InfiniBand tiers."""

    name: str = "superpod"
    num_nodes: int = 65536
    gpus_per_node: int = 8
    node_bandwidth: str = "2.4Tbps"
    node_switch_latency: str = "100ns"
    node_propagation: str = "20ns"
    nic_bandwidth: str = "200Gbps"
    switch_latency: str = "350ns"
    tier_sizes: list[int] = field(default_factory=lambda: [32, 1024, 65536])
    tier_propagation: list[str] = field(default_factory=lambda: ["10ns", "50ns", "1.25us"])
    oversubscription: list[float] = field(default_factory=lambda: [1.0, 1.0])
    io_latency: str = "100ns"
    cost_model: str = "superpod_hpc"  # RAMP 4.3 / Table 3's HPC SuperPod; "" for none
    uplinks_per_domain: list[int] = field(default_factory=list)  # [] one bundle per domain; else ECMP links
    ecmp_seed: int = 0  # salts the ECMP hash (with uplinks_per_domain)


@dataclass
class LeafSpineConfig:
    """NVIDIA H100 pods of 8 GPUs on NVLink switches, 4 x 800G uplinks per pod to spines (OPSquare)."""

    name: str = "leaf_spine"
    num_nodes: int = 256
    gpus_per_node: int = 8
    node_bandwidth: str = "3.6Tbps"
    node_switch_latency: str = "1us"
    node_propagation: str = "0ns"
    nic_bandwidth: str = "400Gbps"
    switch_latency: str = "1us"
    tier_sizes: list[int] = field(default_factory=lambda: [256])
    tier_propagation: list[str] = field(default_factory=lambda: ["0ns"])
    oversubscription: list[float] = field(default_factory=list)
    io_latency: str = "100ns"
    cost_model: str = ""  # no published energy/cost model of this leaf-spine; "superpod_hpc" to price it so
    uplinks_per_domain: list[int] = field(default_factory=list)  # [] one bundle per domain; else ECMP links
    ecmp_seed: int = 0  # salts the ECMP hash (with uplinks_per_domain)


def _check_tiers(config: SuperPodConfig | LeafSpineConfig) -> None:
    sizes = list(config.tier_sizes)
    if config.gpus_per_node < 1:
        raise ConfigError("gpus_per_node", config.gpus_per_node, "must be >= 1")
    if not sizes:
        raise ConfigError("tier_sizes", sizes, "needs at least one tier")
    previous = config.gpus_per_node
    for size in sizes:
        if size <= previous or size % previous:
            raise ConfigError("tier_sizes", sizes, f"must increase, each a multiple of the previous "
                                                   f"(starting from gpus_per_node = {config.gpus_per_node})")
        previous = size
    if config.num_nodes < 1 or config.num_nodes > sizes[-1]:
        raise ConfigError("num_nodes", config.num_nodes, f"must be in [1, {sizes[-1]}] (the top tier's size)")
    if len(config.tier_propagation) != len(sizes):
        raise ConfigError("tier_propagation", list(config.tier_propagation),
                          f"needs one value per tier ({len(sizes)})")
    if len(config.oversubscription) != len(sizes) - 1:
        raise ConfigError("oversubscription", list(config.oversubscription),
                          f"needs one ratio per tier below the top ({len(sizes) - 1})")
    for ratio in config.oversubscription:
        if not ratio >= 1:
            raise ConfigError("oversubscription", ratio, "every ratio must be >= 1 (1 = non-blocking)")
    check_uplinks(list(config.uplinks_per_domain), sizes)
    if config.cost_model and config.cost_model not in EPS_MODELS:
        raise ConfigError("cost_model", config.cost_model, f"must be '' (none) or one of {', '.join(EPS_MODELS)}")


@dataclass(frozen=True)
class FatTree(Fabric):
    """GPUs in nodes on a node switch, NICs into a multi-tier switched tree."""

    name: str
    num_nodes: int
    gpus_per_node: int
    node_bandwidth_bps: float
    node_switch_latency_s: float
    node_propagation_s: float
    nic_bandwidth_bps: float
    switch_latency_s: float
    tier_sizes: tuple[int, ...]
    tier_propagation_s: tuple[float, ...]
    oversubscription: tuple[float, ...]
    io_latency_s: float
    cost_model: str = ""  # a key of fat_tree.cost.EPS_MODELS, or "" for none
    uplinks_per_domain: tuple[int, ...] = ()  # () one bundle per domain; else ECMP links (ecmp.py)
    ecmp_seed: int = 0

    @classmethod
    def from_config(cls, config: SuperPodConfig | LeafSpineConfig) -> FatTree:
        _check_tiers(config)
        return cls(name=config.name, num_nodes=config.num_nodes, gpus_per_node=config.gpus_per_node,
                   node_bandwidth_bps=units.parse_bandwidth_bps(config.node_bandwidth, "node_bandwidth"),
                   node_switch_latency_s=units.parse_time_s(config.node_switch_latency, "node_switch_latency"),
                   node_propagation_s=units.parse_time_s(config.node_propagation, "node_propagation"),
                   nic_bandwidth_bps=units.parse_bandwidth_bps(config.nic_bandwidth, "nic_bandwidth"),
                   switch_latency_s=units.parse_time_s(config.switch_latency, "switch_latency"),
                   tier_sizes=tuple(int(size) for size in config.tier_sizes),
                   tier_propagation_s=tuple(units.parse_time_s(value, "tier_propagation")
                                            for value in config.tier_propagation),
                   oversubscription=tuple(float(ratio) for ratio in config.oversubscription),
                   io_latency_s=units.parse_time_s(config.io_latency, "io_latency"), cost_model=config.cost_model,
                   uplinks_per_domain=tuple(int(count) for count in config.uplinks_per_domain),
                   ecmp_seed=int(config.ecmp_seed))

    # -- structure -----------------------------------------------------------------------------
    @property
    def level_sizes(self) -> tuple[int, ...]:
        """Domain sizes that a flow's common level is counted over: node, then tiers below the top."""
        return (self.gpus_per_node, *self.tier_sizes[:-1])

    # -- capabilities ----------------------------------------------------------------------------
    def network_cost(self, num_ranks: int) -> NetworkCost | None:
        """The EPS model `cost_model` (RAMP 4.3) with as many parallel copies of its network as
        one NIC's bandwidth needs; None when the fabric names no model."""
        if not self.cost_model:
            return None
        return EPS_MODELS[self.cost_model].network_cost_at_nic(self.nic_bandwidth_bps, num_ranks, self.num_nodes)

    @classmethod
    def node_bandwidth_key(cls) -> str | None:
        return "node_bandwidth"

    def domain_sizes(self) -> tuple[int, ...]:
        return (self.gpus_per_node, *self.tier_sizes)

    @cached_property
    def level_latency_s(self) -> np.ndarray:
        """Head-to-head latency of a flow by common level (0 = same node, t + 1 = tier t)."""
        latencies = [self.io_latency_s + 2 * self.node_propagation_s + self.node_switch_latency_s]
        for tier in range(len(self.tier_sizes)):
            propagation = 2 * sum(self.tier_propagation_s[:tier + 1])
            latencies.append(self.io_latency_s + propagation + (2 * tier + 1) * self.switch_latency_s)
        return np.array(latencies)

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return float(self.level_latency_s[-1]), units.BITS_PER_BYTE / self.nic_bandwidth_bps

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """A GPU's NIC plus, when it has node mates, its node link (NVLink): both run at once."""
        return self.nic_bandwidth_bps + (self.node_bandwidth_bps if self.gpus_per_node > 1 else 0.0)

    def bisection_bps(self) -> float | None:
        """Half the GPUs' NICs, divided by the worst oversubscription of the tiers whose domains
        the cut leaves whole; None when the cut splits a node (its node links would cross it)."""
        half = self.num_nodes // 2
        if half == 0 or half % self.gpus_per_node:
            return None
        ratios = [ratio for size, ratio in zip(self.tier_sizes[:-1], self.oversubscription) if half % size == 0]
        return half * self.nic_bandwidth_bps / max([1.0, *ratios])

    def min_latency_s(self) -> float:
        levels = self.level_latency_s if self.gpus_per_node > 1 else self.level_latency_s[1:]
        return float(levels.min())

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        """A node's GPUs leave it through their NICs only; an oversubscribed tier domain through
        its uplinks (a tier at 1:1 adds nothing to its nodes' cuts)."""
        cuts = [DomainCut(self.gpus_per_node, self.gpus_per_node * self.nic_bandwidth_bps,
                          self.gpus_per_node * self.nic_bandwidth_bps)] if self.gpus_per_node > 1 else []
        for size, ratio in zip(self.tier_sizes[:-1], self.oversubscription):
            if ratio > 1 and size < self.num_nodes:
                uplinks = size * self.nic_bandwidth_bps / ratio
                cuts.append(DomainCut(size, uplinks, uplinks))
        return tuple(cuts)

    # -- resources -------------------------------------------------------------------------------
    def _links_per_domain(self, tier: int) -> int:
        """Uplinks (and downlinks) declared per tier-`tier` domain: 1, the bundle, without ECMP."""
        return self.uplinks_per_domain[tier] if self.uplinks_per_domain else 1

    @cached_property
    def _uplink_offsets(self) -> tuple[int, ...]:
        offsets, start = [], 4 * self.num_nodes
        for tier, size in enumerate(self.tier_sizes[:-1]):
            offsets.append(start)
            start += 2 * (-(-self.num_nodes // size)) * self._links_per_domain(tier)
        return (*offsets, start)

    @cached_property
    def _capacity(self) -> np.ndarray:
        n = self.num_nodes
        parts = [np.full(2 * n, self.node_bandwidth_bps), np.full(2 * n, self.nic_bandwidth_bps)]
        for tier, (size, ratio) in enumerate(zip(self.tier_sizes[:-1], self.oversubscription)):
            links = -(-n // size) * self._links_per_domain(tier)
            parts.append(np.full(2 * links, size * self.nic_bandwidth_bps / ratio / self._links_per_domain(tier)))
        return np.concatenate(parts)

    def capacity_bps(self) -> np.ndarray:
        return self._capacity

    def common_level(self, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> np.ndarray:
        """0 for two GPUs of one node, t + 1 when their nearest common switch is in tier t."""
        level = np.zeros(src_nodes.size, dtype=np.int64)
        if all(size & (size - 1) == 0 for size in self.level_sizes):
            apart = src_nodes ^ dst_nodes  # two nodes share an aligned power-of-two block iff apart < size
            for size in self.level_sizes:
                level += apart >= size
            return level
        for size in self.level_sizes:
            level += (src_nodes // size) != (dst_nodes // size)
        return level

    def price_listed(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        """The flow model of `route`, aggregated directly (the generic path handles classes)."""
        if pattern.multicast and self.supports_multicast():
            return super().price_listed(pattern, layout, placement)
        if pattern.num_classes:
            one_to_one = getattr(pattern, "one_to_one", False)
            by_class = forms.class_costs(self, pattern, layout, placement) if one_to_one else None
            return by_class if by_class is not None else super().price_listed(pattern, layout, placement)
        structured = forms.structured_cost(self, pattern, layout, placement)
        if structured is not None:
            return structured
        src, dst, weight, _ = expand_listed(pattern, layout, placement)
        if src.size == 0:
            return PatternCost.zero()
        unique = bool(getattr(pattern, "one_to_one", False))
        level = self.common_level(src, dst)
        inside = level == 0
        times = []
        for mask, bandwidth in ((inside, self.node_bandwidth_bps), (~inside, self.nic_bandwidth_bps)):
            if not mask.any():
                continue
            if unique:
                busiest = weight[mask].max()
            else:
                busiest = max(np.bincount(src[mask], weight[mask]).max(), np.bincount(dst[mask], weight[mask]).max())
            times.append(busiest * units.BITS_PER_BYTE / bandwidth)
        for tier, (size, ratio) in enumerate(zip(self.tier_sizes[:-1], self.oversubscription)):
            crossing = level > tier + 1
            if not crossing.any():
                break
            leaving = weight * crossing
            busiest = max(self._domain_sums(src, leaving, size, unique).max(),
                          self._domain_sums(dst, leaving, size, unique).max())
            times.append(busiest * units.BITS_PER_BYTE * ratio / (size * self.nic_bandwidth_bps))
        return PatternCost(float(self.level_latency_s[level.max()]), float(max(times)))

    def pipeline_floor(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                       ) -> tuple[np.ndarray, np.ndarray] | None:
        """Each class's longest flow, and its load on its GPUs' ports (`forms.class_floor`); trees
        priced level by level keep no floor (`class_floor` is None: giving them up is cheap)."""
        if not pattern.num_classes:
            return None
        return forms.class_floor(self, pattern, layout, placement, pattern.multicast and self.supports_multicast())

    def _domain_sums(self, nodes: np.ndarray, values: np.ndarray, size: int, unique: bool) -> np.ndarray:
        domains = -(-self.num_nodes // size)
        if not unique:
            return np.bincount(nodes // size, values, minlength=domains)
        spread = np.zeros(domains * size)
        spread[nodes] = values
        return spread.reshape(domains, size).sum(axis=1)

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        n = self.num_nodes
        level = self.common_level(src_nodes, dst_nodes)
        inside = level == 0
        hops = [np.where(inside, src_nodes, 2 * n + src_nodes), np.where(inside, n + dst_nodes, 3 * n + dst_nodes)]
        chosen = (uplink_indices(src_nodes, dst_nodes, n, self.uplinks_per_domain, self.ecmp_seed)
                  if self.uplinks_per_domain else None)
        for tier, size in enumerate(self.tier_sizes[:-1]):
            crosses = level > tier + 1
            offset = self._uplink_offsets[tier]
            links = self._links_per_domain(tier)
            index = chosen[tier] if chosen is not None else 0
            down = offset + (-(-n // size)) * links
            hops.append(np.where(crosses, offset + (src_nodes // size) * links + index, -1))
            hops.append(np.where(crosses, down + (dst_nodes // size) * links + index, -1))
        return Routes(self.level_latency_s[level], tuple(hops), egress=(0,))

    # -- closed form for a direct exchange ------------------------------------------------------
    def price_mesh(self, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost:
        return forms.mesh_cost(self, mesh, layout, placement)


FABRICS.register("superpod", SuperPodConfig,
                 summary="DGX A100 SuperPod fat-tree scaled to 65,536 GPUs (RAMP 7.5)")(FatTree)
FABRICS.register("leaf_spine", LeafSpineConfig,
                 summary="H100 pods of 8 GPUs on NVLink, 4 x 800G uplinks to spines (OPSquare)")(FatTree)
