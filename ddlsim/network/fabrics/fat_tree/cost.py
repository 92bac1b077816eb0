"""Cost and power of electrical packet-switched fat-trees (RAMP Section 4.3, Tables 3 and 4).

Two reference systems, scaled to 65,536 nodes and to an intra-to-inter oversubscription
sigma (node capacity 12.8 Tbps divided by its inter-node bandwidth):

- HPC: a 3-tier DGX A100 SuperPod fat-tree of 40-port 200 Gbps NVIDIA QM8790 switches
  ($23.7k, 404 W), one 200 Gbps HDR transceiver (4.35 W) per GPU port;
- DCN: a 3-tier fat-tree of 64-port 100 Gbps Arista 7170-64C switches ($44k, 320 W), optical
  QSFP transceivers (3.5 W) between racks and copper twinax (0.5 W) inside racks.

Matching a bandwidth is done with parallel copies of the network: floor(12.8 Tbps / sigma /
port rate) of them (64 and 128 at 1:1, 6 and 12 at 10:1, 1 and 2 at 64:1, as the paper does).

One copy for N nodes needs 5N/k switches (two tiers of N/(k/2), a top tier of N/k) and six
transceivers per node (each of a path's three links has one at each end); a path crosses five
switches. The paper's totals are reproduced when five of the six HPC transceivers are priced
(the GPU-side HCA belongs to the DGX server) and four of the six DCN transceivers (the two
copper cables inside the rack are not), each at $200; see docs/ramp.md for the derivation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import NetworkCost

RAMP_NODE_CAPACITY_BPS = 12.8e12
PAPER_SCALE_NODES = 65536


@dataclass(frozen=True)
class EpsFatTreeModel:
    """Component figures of one EPS fat-tree family (defaults: none; see HPC_SUPERPOD, DCN_FAT_TREE)."""

    name: str
    switch_ports: int
    port_rate_bps: float
    switch_cost_usd: float
    switch_power_w: float
    transceiver_cost_usd: float
    transceiver_power_w: tuple[float, ...]  # one entry per transceiver of a path (6 for 3 tiers)
    priced_transceivers_per_path: int
    switches_per_path: int = 5
    tiers: int = 3

    @property
    def transceivers_per_path(self) -> int:
        return len(self.transceiver_power_w)

    def parallel_networks(self, oversubscription: float, node_capacity_bps: float = RAMP_NODE_CAPACITY_BPS) -> int:
        """Copies of the network that give each node node_capacity / sigma of inter-node bandwidth."""
        if not (math.isfinite(oversubscription) and oversubscription >= 1):
            raise ConfigError("oversubscription", oversubscription, "must be >= 1 (intra-to-inter ratio)")
        return max(1, math.floor(node_capacity_bps / oversubscription / self.port_rate_bps + 1e-9))

    def switches_per_network(self, num_nodes: int) -> int:
        """5N/k for three tiers: two tiers of ceil(N / (k/2)) and a top tier of ceil(N / k)."""
        half = self.switch_ports // 2
        return 2 * math.ceil(num_nodes / half) + math.ceil(num_nodes / self.switch_ports)

    def energy_per_bit_j(self) -> float:
        """Energy per bit along one path: the switches crossed plus every transceiver of the path."""
        switch = self.switches_per_path * self.switch_power_w / (self.switch_ports * self.port_rate_bps)
        return switch + sum(self.transceiver_power_w) / self.port_rate_bps

    def counts(self, num_nodes: int, oversubscription: float) -> dict[str, float]:
        networks = self.parallel_networks(oversubscription)
        return {"parallel_networks": networks,
                "switches": networks * self.switches_per_network(num_nodes),
                "transceivers": networks * num_nodes * self.transceivers_per_path,
                "priced_transceivers": networks * num_nodes * self.priced_transceivers_per_path}

    def capex_usd(self, num_nodes: int, oversubscription: float) -> float:
        counts = self.counts(num_nodes, oversubscription)
        return counts["switches"] * self.switch_cost_usd + counts["priced_transceivers"] * self.transceiver_cost_usd

    def capacity_bps(self, num_nodes: int, oversubscription: float) -> float:
        """Inter-node capacity of all nodes: N x copies x port rate."""
        return num_nodes * self.parallel_networks(oversubscription) * self.port_rate_bps

    def power_w(self, num_nodes: int, oversubscription: float) -> float:
        """Every path busy: capacity x energy per bit per path (RAMP 4.3's method)."""
        return self.capacity_bps(num_nodes, oversubscription) * self.energy_per_bit_j()

    def network_cost(self, num_ranks: int, oversubscription: float,
                     fabric_nodes: int = PAPER_SCALE_NODES) -> NetworkCost:
        """The job's share (num_ranks / fabric_nodes) of a fabric of `fabric_nodes` nodes."""
        if not 1 <= num_ranks <= fabric_nodes:
            raise ConfigError("num_ranks", num_ranks, f"must be in [1, {fabric_nodes}]")
        share = num_ranks / fabric_nodes
        counts = self.counts(fabric_nodes, oversubscription)
        return NetworkCost(capex_usd=share * self.capex_usd(fabric_nodes, oversubscription),
                           power_w=share * self.power_w(fabric_nodes, oversubscription), scope="job",
                           components={kind: share * count for kind, count in counts.items()
                                       if kind != "parallel_networks"})

    def network_cost_at_nic(self, nic_bandwidth_bps: float, num_ranks: int, fabric_nodes: int) -> NetworkCost:
        """`network_cost` of a fabric whose NICs carry `nic_bandwidth_bps` each: ceil(nic / port
        rate) parallel networks, that is sigma = 12.8 Tbps over their bandwidth (at least 1)."""
        networks = max(1, math.ceil(nic_bandwidth_bps / self.port_rate_bps - 1e-9))
        sigma = RAMP_NODE_CAPACITY_BPS / (networks * self.port_rate_bps)
        return self.network_cost(num_ranks, max(sigma, 1.0), fabric_nodes=fabric_nodes)


HPC_SUPERPOD = EpsFatTreeModel(
    name="superpod_hpc", switch_ports=40, port_rate_bps=200e9, switch_cost_usd=23_700, switch_power_w=404,
    transceiver_cost_usd=200, transceiver_power_w=(4.35,) * 6, priced_transceivers_per_path=5)

DCN_FAT_TREE = EpsFatTreeModel(
    name="dcn_fat_tree", switch_ports=64, port_rate_bps=100e9, switch_cost_usd=44_000, switch_power_w=320,
    transceiver_cost_usd=200, transceiver_power_w=(0.5, 3.5, 3.5, 3.5, 3.5, 0.5), priced_transceivers_per_path=4)

EPS_MODELS = {model.name: model for model in (HPC_SUPERPOD, DCN_FAT_TREE)}
