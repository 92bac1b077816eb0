"""Pricing shared by the direct-connect fabrics (TopoOpt, the expander, the reconfigurable OCS):
servers of `gpus_per_server` GPUs, each job on a shard of its own servers whose links host-based
forwarding shares.

Pricing: every flow follows its route (CoinChangeMod on a ring union, shortest paths otherwise)
and loads every link it crosses; a step lasts as long as its most loaded link needs, plus the
longest route's latency: `link_latency` per hop and `forwarding_latency` per relaying server.
`traffic_report` gives the bandwidth tax of TopoOpt sections 5.4 and 5.5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.base import DomainCut, Fabric
from ddlsim.network.fabrics.topoopt.topology import MAX_EXPLICIT_NODES, DirectTopology
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost, Routes, price_flows


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
    """Pricing shared by direct-connect fabrics of servers holding `gpus_per_server` GPUs each.

    Ranks are GPUs; rank r sits on server r // gpus_per_server. A job runs on a shard of its own
    servers. GPUs of one server talk over the server's internal fabric (each GPU has an egress
    and an ingress port of `intra_server_bandwidth_bps`); traffic between servers is forwarded
    by hosts along its route over the shard's links, `link_bandwidth_bps` each way.

    Subclasses are frozen dataclasses with the fields below and a `_shards` cache, and implement
    `build_shard(num_servers)`.
    """

    name: str
    num_nodes: int
    num_servers: int
    gpus_per_server: int
    degree: int
    link_bandwidth_bps: float
    link_latency_s: float
    forwarding_latency_s: float
    intra_server_bandwidth_bps: float
    intra_server_latency_s: float
    _shards: dict

    def build_shard(self, num_servers: int) -> DirectTopology:
        raise NotImplementedError

    def servers_for(self, num_ranks: int) -> int:
        return -(-num_ranks // self.gpus_per_server)

    def priced_gpus(self, layout: GroupLayout, placement: Placement) -> int:
        """The GPUs a job's prices see: its own shard's, or the whole cluster's when its placement puts
        ranks on servers beyond that shard (another job's place in `task=jobs`, a spread placement),
        so that its routes are those `route` gives (a shard's ring offsets would wrap around)."""
        own = self.servers_for(layout.job_ranks) * self.gpus_per_server
        if placement.nodes is not None and placement.nodes.size and int(placement.nodes.max()) >= own:
            return self.num_nodes
        return own

    def shard(self, num_ranks: int) -> DirectTopology:
        """The topology of the servers a job of `num_ranks` GPU ranks runs on (built once, cached)."""
        if num_ranks > self.num_nodes:
            raise InfeasibleError(f"{num_ranks} ranks do not fit on {self.name}, which has {self.num_nodes} GPUs "
                                  f"({num_ranks - self.num_nodes} too many)")
        servers = self.servers_for(num_ranks)
        topology = self._shards.get(servers)
        if topology is None:
            topology = DirectTopology.from_parts(1, []) if servers == 1 else self.build_shard(servers)
            self._shards[servers] = topology
        return topology

    def domain_sizes(self) -> tuple[int, ...]:
        return (self.gpus_per_server, self.num_nodes) if self.gpus_per_server > 1 else (self.num_nodes,)

    # -- Fabric interface ----------------------------------------------------------------------
    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.link_latency_s, units.BITS_PER_BYTE / self.link_bandwidth_bps

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """A GPU's port into its server (when it has server mates) plus, at most, all of its
        server's d interfaces (one GPU may have them to itself)."""
        inside = self.intra_server_bandwidth_bps if self.gpus_per_server > 1 else 0.0
        return inside + self.degree * self.link_bandwidth_bps

    def min_latency_s(self) -> float:
        return min(self.link_latency_s, self.intra_server_latency_s) if self.gpus_per_server > 1 \
            else self.link_latency_s

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        """A server's GPUs share its d interfaces."""
        if self.gpus_per_server == 1:
            return ()
        interfaces = self.degree * self.link_bandwidth_bps
        return (DomainCut(self.gpus_per_server, interfaces, interfaces),)

    def _latency(self, hops: np.ndarray) -> np.ndarray:
        return hops * self.link_latency_s + np.maximum(hops - 1, 0) * self.forwarding_latency_s

    def _capacity(self, topology: DirectTopology, num_gpus: int) -> np.ndarray:
        """Links of the shard, then every GPU's intra-server egress, then its ingress."""
        intra = np.full(2 * num_gpus if self.gpus_per_server > 1 else 0, self.intra_server_bandwidth_bps)
        return np.concatenate([np.full(topology.num_links, self.link_bandwidth_bps), intra])

    def capacity_bps(self) -> np.ndarray:
        return self._capacity(self.shard(self.num_nodes), self.num_nodes)

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        """Routes on the shard of the whole cluster (pricing uses the job's own shard instead)."""
        return self._routes(self.shard(self.num_nodes), self.num_nodes, src_nodes, dst_nodes, weights,
                            with_paths=False)

    def _routes(self, topology: DirectTopology, num_gpus: int, src: np.ndarray, dst: np.ndarray,
                weights: np.ndarray, *, with_paths: bool = True) -> Routes:
        g = self.gpus_per_server
        src_server, dst_server = src // g, dst // g
        inter = src_server != dst_server
        hops = topology.hops(src_server, dst_server)
        latency = np.where(inter, self._latency(hops), self.intra_server_latency_s)
        links = topology.path_links(src_server[inter], dst_server[inter]) if with_paths else None
        egress = topology.num_links + src
        ingress = topology.num_links + num_gpus + dst
        if links is not None:
            # One path per flow: the core pricer gets every hop, so it can also price each
            # pattern class alone (pipelined steps activate windows of classes).
            rows = np.full((max(links.shape[0], 2 if g > 1 else 0), src.size), -1, dtype=np.int64)
            rows[: links.shape[0], inter] = links
            if g > 1:
                rows[0, ~inter] = egress[~inter]
                rows[1, ~inter] = ingress[~inter]
            return Routes(latency, tuple(rows), egress=(0,))
        loads = np.zeros(topology.num_links + (2 * num_gpus if g > 1 else 0))
        loads[: topology.num_links] = topology.link_loads(src_server[inter], dst_server[inter], weights[inter])
        if g > 1:
            loads += np.bincount(egress[~inter], weights=weights[~inter], minlength=loads.size)
            loads += np.bincount(ingress[~inter], weights=weights[~inter], minlength=loads.size)
        return Routes(latency, (), fixed_loads=loads)

    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        num_gpus = self.priced_gpus(layout, placement)
        topology = self.shard(num_gpus)
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
        if classes is None and self.gpus_per_server == 1:
            shift = topology.shift_loads(src, dst, weights)
            if shift is not None:          # ring-type steps at scale: no per-flow routing at all
                per_ring, longest = shift
                return PatternCost(float(self._latency(np.array([longest]))[0]),
                                   float(per_ring.max()) * units.BITS_PER_BYTE / self.link_bandwidth_bps)
        routes = self._routes(topology, num_gpus, src, dst, weights)
        return price_flows(routes, self._capacity(topology, num_gpus), weights, classes=classes,
                           num_classes=pattern.num_classes, sources=src)

    def _price_full_mesh(self, mesh: Mesh, layout: GroupLayout, topology: DirectTopology) -> PatternCost | None:
        """A mesh over every GPU of the job on a ring union, in closed form. By symmetry every
        link of a ring carries the same bytes: g x g GPU pairs per server pair, times the sum over
        server offsets of that ring's coin count; each GPU also sends g - 1 transfers inside its
        server."""
        sizes = mesh.block_sizes()
        g = self.gpus_per_server
        whole = (sizes.size == 1 and int(sizes[0]) == layout.job_ranks == layout.size
                 and layout.job_ranks == topology.num_nodes * g and topology.circulant_rules is not None)
        if not whole:
            if mesh.num_pairs() * layout.num_groups > MAX_EXPLICIT_NODES ** 2:
                raise InfeasibleError(
                    f"{self.name} prices a partial all-to-all by listing its transfers, and "
                    f"{mesh.num_pairs() * layout.num_groups} transfers are too many; only an all-to-all over the "
                    f"whole job has a closed form here")
            return None
        per_link = topology.coin_routes.coin_counts()[1:].sum(axis=0) * mesh.weight * g * g
        s_per_unit = float(per_link.max(initial=0.0)) * units.BITS_PER_BYTE / self.link_bandwidth_bps
        latency = float(self._latency(np.array([topology.coin_routes.diameter]))[0])
        if g > 1:
            s_per_unit = max(s_per_unit, (g - 1) * mesh.weight * units.BITS_PER_BYTE / self.intra_server_bandwidth_bps)
            latency = max(latency, self.intra_server_latency_s)
        return PatternCost(latency, s_per_unit)

    # -- reports -------------------------------------------------------------------------------
    def traffic_report(self, src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray,
                       num_servers: int | None = None) -> TrafficReport:
        """Bandwidth tax (link bytes over demand bytes), hop counts and link loads of a traffic
        matrix between servers, on the shard of `num_servers` servers (default: all of them)."""
        topology = self.shard((num_servers or self.num_servers) * self.gpus_per_server)
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
        return {"fabric": self.name, "fabric_nodes": self.num_nodes, "servers": self.num_servers,
                "gpus_per_server": self.gpus_per_server, "degree": self.degree,
                "link_bandwidth_bps": self.link_bandwidth_bps}
