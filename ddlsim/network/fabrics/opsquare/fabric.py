"""OPSquare for ML as an analytical fabric: collectives priced through the core's flow model.

Resources are the transceivers: every node has P intra-pod channels and one inter-pod channel,
each with a transmitter and a receiver of `channel_bandwidth`. A flow inside a pod uses one
intra-pod channel (the one to the destination's group); a flow to another pod uses the source's
inter-pod channel to the node of the same index in the destination pod and, unless that node is
the destination, that relay's intra-pod channel onwards. So relays carry other nodes' traffic on
their own transmitters, and the pricer sees it (the busiest transceiver sets the step's time).

Head-to-head latency per optical hop: optical preamble + label processing + fibre propagation;
a relayed flow adds the relay's transceiver forwarding latency. The 1 MB transmit buffers and
the packet-level contention (a receiver takes one packet per slot) belong to the packet model
(`ddlsim.network.packet`); here flows share transceivers fairly, as on every other fabric.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ddlsim.core import units
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.base import DomainCut, Fabric
from ddlsim.network.fabrics.opsquare.mesh import has_relayed_pair, mesh_loads
from ddlsim.network.fabrics.opsquare.params import OpsquareConfig, OpsquareParams
from ddlsim.network.fabrics.opsquare.topology import OpsquareTopology
from ddlsim.network.patterns import Mesh
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost, Routes


@FABRICS.register("opsquare", OpsquareConfig)
@dataclass(frozen=True)
class OpsquareFabric(Fabric):
    """OPSquare for ML: pods of nodes on P optical intra-pod switches and per-index inter-pod switches."""

    params: OpsquareParams
    num_nodes: int
    name: str = "opsquare"

    @classmethod
    def from_config(cls, config: OpsquareConfig) -> OpsquareFabric:
        params = OpsquareParams.from_config(config)
        return cls(params=params, num_nodes=params.topology.num_nodes, name=config.name)

    @property
    def topology(self) -> OpsquareTopology:
        return self.params.topology

    # -- structure -----------------------------------------------------------------------------
    def domain_sizes(self) -> tuple[int, ...]:
        """A pod (P channels to its members) inside the whole fabric (one inter-pod channel)."""
        return (self.topology.pod_size, self.num_nodes)

    @property
    def relay_latency_s(self) -> float:
        """Head-to-head latency of a two-hop flow."""
        return 2 * self.params.hop_latency_s + self.params.forward_latency_s

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.relay_latency_s, units.BITS_PER_BYTE / self.params.channel_bps

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """P intra-pod transceivers and one inter-pod transceiver, a full channel each."""
        return self.topology.channels_per_node * self.params.channel_bps

    def bisection_bps(self) -> float | None:
        """With N even the lower half of the ids is the lower half of the pods: every flow across
        leaves on an inter-pod transmitter of its half (a relay sits in the destination's pod)."""
        if self.topology.num_pods % 2:
            return None
        return self.num_nodes // 2 * self.params.channel_bps

    def min_latency_s(self) -> float:
        return self.params.hop_latency_s

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        """A pod's nodes leave it on their inter-pod transceivers only (a relay sits in the
        destination's pod)."""
        if self.topology.num_pods == 1:
            return ()
        inter_pod = self.topology.pod_size * self.params.channel_bps
        return (DomainCut(self.topology.pod_size, inter_pod, inter_pod),)

    # -- resources: [transmitters | receivers], each node * (P + 1) + channel ----------------------
    @cached_property
    def _capacity(self) -> np.ndarray:
        return np.full(2 * self.num_nodes * self.topology.channels_per_node, self.params.channel_bps)

    def capacity_bps(self) -> np.ndarray:
        return self._capacity

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        topo = self.topology
        channels = topo.channels_per_node
        receivers = self.num_nodes * channels
        src, dst = np.asarray(src_nodes, dtype=np.int64), np.asarray(dst_nodes, dtype=np.int64)
        moving = src != dst
        same_pod = topo.pod(src) == topo.pod(dst)
        relay = topo.relay(src, dst)
        first_channel = np.where(same_pod, topo.intra_channel(src, dst), topo.inter_channel)
        first_target = np.where(same_pod, dst, relay)
        relayed = ~same_pod & (relay != dst)
        second_channel = topo.intra_channel(relay, dst)
        hops = (
            np.where(moving, src * channels + first_channel, -1),
            np.where(moving, receivers + first_target * channels + first_channel, -1),
            np.where(relayed, relay * channels + second_channel, -1),
            np.where(relayed, receivers + dst * channels + second_channel, -1),
        )
        latency = np.where(relayed, self.relay_latency_s, np.where(moving, self.params.hop_latency_s, 0.0))
        return Routes(latency, hops, egress=(0,))

    def price_mesh(self, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost:
        """A direct exchange priced from per-block counts (`mesh.py`), never listed pair by pair."""
        members = np.flatnonzero(mesh.blocks >= 0)
        if members.size == 0:
            return PatternCost.zero()
        nodes = placement.node_of(job_ranks(layout, members).ravel())
        num_blocks = int(mesh.blocks.max()) + 1
        blocks = (np.arange(layout.num_groups)[:, None] * num_blocks + mesh.blocks[members][None, :]).ravel()
        active = np.bincount(blocks)[blocks] > 1
        if not np.any(active):
            return PatternCost.zero()
        nodes, blocks = nodes[active], blocks[active]
        ids, loads = mesh_loads(self.topology, nodes, blocks)
        busiest = float(np.bincount(ids, weights=loads, minlength=self._capacity.size).max())
        latency = self.relay_latency_s if has_relayed_pair(self.topology, nodes, blocks) else self.params.hop_latency_s
        return PatternCost(latency, busiest * mesh.weight * units.BITS_PER_BYTE / self.params.channel_bps)

    def describe(self) -> dict[str, Any]:
        topo = self.topology
        return {**super().describe(), "opsquare_pods": topo.num_pods, "opsquare_pod_size": topo.pod_size,
                "opsquare_groups": topo.num_groups}
