"""Synthetic traffic of the OPSquare experiment: uniform random destinations shaped by locality.

Every slot, each node independently starts a packet with probability `load` (Bernoulli arrivals
at most one per slot, so `load` is the offered fraction of the node's injection bandwidth). With
probability `locality` the destination is drawn uniformly from the other nodes of the source's
pod, otherwise uniformly from the nodes of every other pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.errors import ConfigError


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
        size = self.pod_size
        pod, index = np.divmod(src, size)
        local = rng.random(src.size) < self.locality
        dst = np.empty_like(src)
        n_local = int(local.sum())
        if n_local:
            offset = rng.integers(1, size, n_local)
            dst[local] = pod[local] * size + (index[local] + offset) % size
        remote = ~local
        n_remote = src.size - n_local
        if n_remote:
            draw = rng.integers(0, (self.num_pods - 1) * size, n_remote)
            pod_offset, dst_index = np.divmod(draw, size)
            dst[remote] = ((pod[remote] + 1 + pod_offset) % self.num_pods) * size + dst_index
        return dst

    def generate(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(sources, destinations) of the packets started in one slot."""
        src = np.flatnonzero(rng.random(self.num_nodes) < self.load)
        return src, self.destinations(rng, src)
