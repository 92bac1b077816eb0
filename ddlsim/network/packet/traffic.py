"""Synthetic traffic of the OPSquare experiment: uniform random destinations shaped by locality.

Every slot, each node independently starts a packet with probability `load` (Bernoulli arrivals
at most one per slot, so `load` is the offered fraction of the node's injection bandwidth). With
probability `locality` the destination is drawn uniformly from the other nodes of the source's
pod, otherwise uniformly from the nodes of every other pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError


@dataclass(frozen=True)
class LocalityTraffic:
    num_nodes: int
    pod_size: int
    load: float
    locality: float

    def __post_init__(self) -> None:
        if self.pod_size < 1 or self.num_nodes % self.pod_size:
            raise ConfigError("pod_size", self.pod_size, f"must divide num_nodes = {self.num_nodes}")
        if not 0.0 <= self.load <= 1.0:
            raise ConfigError("load", self.load, "must be in [0, 1] (fraction of the node's injection bandwidth)")
        if not 0.0 <= self.locality <= 1.0:
            raise ConfigError("locality", self.locality, "must be in [0, 1] (fraction of intra-pod traffic)")
        if self.locality > 0 and self.pod_size < 2:
            raise ConfigError("locality", self.locality, "needs pods of at least 2 nodes to have local traffic")
        if self.locality < 1 and self.num_pods < 2:
            raise ConfigError("locality", self.locality, "must be 1 when there is a single pod")

    @property
    def num_pods(self) -> int:
        return self.num_nodes // self.pod_size

    def destinations(self, rng: np.random.Generator, src: np.ndarray) -> np.ndarray:
        """A destination for each source node in `src` (never the source itself)."""
        size, pods, locality = self.pod_size, self.num_pods, self.locality
        pod, index = np.divmod(src, size)
        # one uniform draw per packet picks both the kind (below `locality`: local) and the target
        draw = rng.random(src.size)
        local = draw < locality
        local_pick = np.minimum((draw / locality * (size - 1)).astype(np.int64), size - 2) if locality > 0 else 0
        remote_share = (draw - locality) / (1.0 - locality) if locality < 1 else draw
        remote_pick = np.minimum((remote_share * ((pods - 1) * size)).astype(np.int64), (pods - 1) * size - 1)
        pod_offset, remote_index = np.divmod(np.maximum(remote_pick, 0), size)
        local_dst = pod * size + (index + 1 + local_pick) % size
        remote_dst = ((pod + 1 + pod_offset) % pods) * size + remote_index
        return np.where(local, local_dst, remote_dst)

    def generate(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(sources, destinations) of the packets started in one slot."""
        src = np.flatnonzero(rng.random(self.num_nodes) < self.load)
        return src, self.destinations(rng, src)


@dataclass(frozen=True, eq=False)
class MappedTraffic:
    """Every node that starts a packet sends it to `destination[node]` (a fixed pattern, such as
    one step of a collective); nodes mapped to themselves stay silent."""

    destination: np.ndarray
    load: float

    def __post_init__(self) -> None:
        destination = np.asarray(self.destination, dtype=np.int64)
        if destination.ndim != 1 or destination.min() < 0 or destination.max() >= destination.size:
            raise ConfigError("destination", destination.shape, "must map every node to a node id")
        if not 0.0 <= self.load <= 1.0:
            raise ConfigError("load", self.load, "must be in [0, 1] (fraction of the node's injection bandwidth)")
        object.__setattr__(self, "destination", destination)

    def generate(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        src = np.flatnonzero(rng.random(self.destination.size) < self.load)
        src = src[self.destination[src] != src]
        return src, self.destination[src]
