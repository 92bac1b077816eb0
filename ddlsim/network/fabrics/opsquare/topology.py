"""OPSquare for ML (Rombouts and Calabretta 2022, Section 2): nodes, transceivers, switches, routes.

``num_pods`` (N) pods of ``pod_size`` (M) nodes; each pod's nodes form ``num_groups`` (P) groups
of ``split`` = F = M / P consecutive nodes. Every node has P intra-pod transceivers and one
inter-pod transceiver, each a full channel.

Intra-pod: each pod has P broadcast-and-select switches of M x M ports whose inputs are split F
ways. Transceiver ``p`` of a node in group ``s`` feeds switch ``p``, which reaches the F nodes
of group ``(s + p) mod P``; the receiver ``p`` of a node in group ``d`` therefore hears exactly
the F nodes of group ``(d - p) mod P``. Together the P switches connect every pair of nodes of a
pod in one hop, and each of a node's P channels carries traffic to one destination group (the
paper: "P optical transceivers, one for each group").

Inter-pod: one N x N switch per node index (M switches) joins the m-th node of every pod.

Routing (at most two hops): inside a pod, one intra-pod hop; to another pod at the same index,
one inter-pod hop; otherwise the inter-pod switch of the source's index first, to the node of
that index in the destination pod, which forwards over its intra-pod switch.

Everything is vectorised over numpy arrays of node ids, so the packet model and the fabric's
pricing use the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError

INTER_POD = -1
"""Channel code of the inter-pod transceiver in `Hop.channel` (intra-pod channels are 0..P-1)."""


@dataclass(frozen=True)
class Hop:
    """One optical hop: the sending node, the receiving node, and the channel both use."""

    src: int
    dst: int
    channel: int

    @property
    def is_inter_pod(self) -> bool:
        return self.channel == INTER_POD


@dataclass(frozen=True)
class OpsquareTopology:
    """The node layout and wiring of one OPSquare network; node id = pod * pod_size + index."""

    num_pods: int
    pod_size: int
    num_groups: int

    def __post_init__(self) -> None:
        for key in ("num_pods", "pod_size", "num_groups"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(key, value, "must be an integer >= 1")
        if self.pod_size % self.num_groups:
            raise ConfigError("num_groups", self.num_groups,
                              f"must divide pod_size = {self.pod_size} (the split F = M / P is a whole number)")

    # --- sizes -----------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return self.num_pods * self.pod_size

    @property
    def split(self) -> int:
        """F = M / P: how many ways each intra-pod switch input is split."""
        return self.pod_size // self.num_groups

    @property
    def channels_per_node(self) -> int:
        """P intra-pod transceivers plus one inter-pod transceiver."""
        return self.num_groups + 1

    @property
    def inter_channel(self) -> int:
        """Index of the inter-pod transceiver among a node's `channels_per_node` channels."""
        return self.num_groups

    @property
    def num_intra_switches(self) -> int:
        return self.num_pods * self.num_groups

    @property
    def num_inter_switches(self) -> int:
        return self.pod_size

    @property
    def intra_switch_ports(self) -> int:
        return self.pod_size

    @property
    def inter_switch_ports(self) -> int:
        return self.num_pods

    # --- coordinates ---------------------------------------------------------------------------
    def check_nodes(self, nodes: np.ndarray | int, key: str = "node") -> None:
        array = np.asarray(nodes)
        if array.size and (array.min() < 0 or array.max() >= self.num_nodes):
            bad = array[(array < 0) | (array >= self.num_nodes)].flat[0]
            raise ConfigError(key, int(bad), f"must be in [0, {self.num_nodes}) for {self.describe()}")

    def pod(self, nodes: np.ndarray | int) -> np.ndarray:
        return np.asarray(nodes) // self.pod_size

    def index(self, nodes: np.ndarray | int) -> np.ndarray:
        return np.asarray(nodes) % self.pod_size

    def group(self, nodes: np.ndarray | int) -> np.ndarray:
        return self.index(nodes) // self.split

    def node(self, pod: np.ndarray | int, index: np.ndarray | int) -> np.ndarray:
        return np.asarray(pod) * self.pod_size + np.asarray(index)

    def describe(self) -> str:
        return (f"OPSquare N={self.num_pods} pods x M={self.pod_size} nodes, P={self.num_groups} groups "
                f"(F={self.split})")

    # --- wiring ---------------------------------------------------------------------------------
    def intra_channel(self, src: np.ndarray | int, dst: np.ndarray | int) -> np.ndarray:
        """Intra-pod transceiver (0..P-1) that carries src -> dst inside one pod."""
        return (self.group(dst) - self.group(src)) % self.num_groups

    def intra_reach(self, node: int, channel: int) -> tuple[int, ...]:
        """The F nodes that `node`'s intra-pod transceiver `channel` reaches (its own pod)."""
        self.check_nodes(node)
        if not 0 <= channel < self.num_groups:
            raise ConfigError("channel", channel, f"must be in [0, {self.num_groups})")
        target_group = (int(self.group(node)) + channel) % self.num_groups
        first = int(self.node(self.pod(node), target_group * self.split))
        return tuple(range(first, first + self.split))

    def inter_reach(self, node: int) -> tuple[int, ...]:
        """The nodes at the same index in the other pods, reached by the inter-pod transceiver."""
        self.check_nodes(node)
        index = int(self.index(node))
        return tuple(int(self.node(p, index)) for p in range(self.num_pods) if p != int(self.pod(node)))

    # --- routing ---------------------------------------------------------------------------------
    def hop_count(self, src: np.ndarray | int, dst: np.ndarray | int) -> np.ndarray:
        """0 (same node), 1 (same pod or same index) or 2 (anything else)."""
        src, dst = np.asarray(src), np.asarray(dst)
        same_pod = self.pod(src) == self.pod(dst)
        same_index = self.index(src) == self.index(dst)
        return np.where(src == dst, 0, np.where(same_pod | same_index, 1, 2))

    def relay(self, src: np.ndarray | int, dst: np.ndarray | int) -> np.ndarray:
        """The node an inter-pod packet lands on first: the source's index in the destination pod."""
        return self.node(self.pod(dst), self.index(src))

    def route(self, src: int, dst: int) -> tuple[Hop, ...]:
        """The hops from `src` to `dst` (empty for src == dst)."""
        self.check_nodes(np.array([src, dst]))
        src, dst = int(src), int(dst)
        if src == dst:
            return ()
        if self.pod(src) == self.pod(dst):
            return (Hop(src, dst, int(self.intra_channel(src, dst))),)
        relay = int(self.relay(src, dst))
        first = Hop(src, relay, INTER_POD)
        if relay == dst:
            return (first,)
        return (first, Hop(relay, dst, int(self.intra_channel(relay, dst))))

    def channel_ids(self, nodes: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """Flat transceiver ids (node * (P + 1) + channel); `INTER_POD` maps to channel P."""
        channels = np.where(np.asarray(channels) == INTER_POD, self.inter_channel, channels)
        return np.asarray(nodes) * self.channels_per_node + channels
