"""TopologyFinder (TopoOpt Algorithm 1): a job's direct-connect topology from its traffic.

Inputs: n servers of degree d, the AllReduce groups with their traffic, and the model-parallel
(MP) demand matrix. Steps, as in section 4.2:

1. split the degree: d_A = max(1, ceil(d x AllReduce share)) for AllReduce, the rest for MP;
2. per AllReduce group kind k, d_k = ceil(d_A x its share) ring permutations, chosen by
   TotientPerms and SelectPermutations (`permutations.py`);
3. d_MP rounds of Blossom maximum-weight matching over the MP demand (`mp_topology.py`);
4. routing: CoinChangeMod on the rings, shortest paths on the union (`topology.py`).

Choices the pseudocode leaves open, made explicit here: group kinds are served in decreasing
traffic order; a group kind never gets more rings than it has candidates; AllReduce degree left
over after the proportional pass goes, one ring at a time, to the kinds (in traffic order) that
still have unused candidates, and only then to the MP sub-topology; the degree of an MP round
that finds no demand stays unused (reported in `unused_degree`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.topoopt.mp_topology import mp_matchings
from ddlsim.network.fabrics.topoopt.permutations import select_permutations, totient_perms
from ddlsim.network.fabrics.topoopt.topology import DirectTopology, ring_links


@dataclass(frozen=True)
class AllReduceDemand:
    """All groups of one AllReduce kind (e.g. the data-parallel groups) and their bytes on the wire."""

    layout: GroupLayout
    traffic_bytes: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.traffic_bytes) and self.traffic_bytes >= 0):
            raise ConfigError("traffic_bytes", self.traffic_bytes, "must be finite and >= 0")


@dataclass(frozen=True)
class RingChoice:
    """The ring permutations chosen for one AllReduce kind: member i -> member i + p per group."""

    layout: GroupLayout
    rules: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class TopologyPlan:
    """What TopologyFinder returns: the degree split, the rings, the matchings and the topology."""

    num_nodes: int
    degree: int
    allreduce_degree: int
    mp_degree: int
    rings: tuple[RingChoice, ...]
    matchings: tuple[tuple[tuple[int, int], ...], ...]
    topology: DirectTopology
    unused_degree: int


def split_degree(degree: int, allreduce_bytes: float, mp_bytes: float) -> tuple[int, int]:
    """Algorithm 1, lines 2-3: (d_A, d_MP), with at least one degree for AllReduce."""
    if degree < 1:
        raise ConfigError("degree", degree, "must be >= 1")
    total = allreduce_bytes + mp_bytes
    share = 1.0 if total == 0 else allreduce_bytes / total
    d_allreduce = max(1, math.ceil(degree * share))
    return d_allreduce, degree - d_allreduce


def topology_finder(num_nodes: int, degree: int, allreduce: Sequence[AllReduceDemand],
                    mp_demand: np.ndarray | None = None, *, prime_only: bool = False) -> TopologyPlan:
    """Algorithm 1 for `num_nodes` servers of `degree` interfaces each."""
    if num_nodes < 2:
        raise ConfigError("num_nodes", num_nodes, "must be >= 2 for a direct-connect topology")
    for demand in allreduce:
        if demand.layout.job_ranks != num_nodes:
            raise ConfigError("allreduce.layout.num_ranks", demand.layout.job_ranks,
                              f"must equal the {num_nodes} servers of the job")
    mp = np.zeros((num_nodes, num_nodes)) if mp_demand is None else np.asarray(mp_demand, dtype=float)
    if mp.shape != (num_nodes, num_nodes):
        raise ConfigError("mp_demand", mp.shape, f"must be {num_nodes} x {num_nodes}")
    allreduce_bytes = float(sum(d.traffic_bytes for d in allreduce))
    mp_bytes = float(mp.sum() - np.trace(mp))
    if not allreduce:
        allreduce = [AllReduceDemand(GroupLayout(size=num_nodes, num_ranks=num_nodes), 0.0)]
    d_allreduce, d_mp = split_degree(degree, allreduce_bytes, mp_bytes)

    kinds = sorted(allreduce, key=lambda d: -d.traffic_bytes)
    candidates = [totient_perms(d.layout.size, prime_only=prime_only) for d in kinds]
    counts = [0] * len(kinds)
    remaining = d_allreduce
    for index, demand in enumerate(kinds):
        if remaining == 0:
            break
        share = 1.0 if allreduce_bytes == 0 else demand.traffic_bytes / allreduce_bytes
        counts[index] = min(math.ceil(d_allreduce * share), remaining, len(candidates[index]))
        remaining -= counts[index]
    while remaining and any(c < len(p) for c, p in zip(counts, candidates)):
        for index in range(len(kinds)):
            if remaining and counts[index] < len(candidates[index]):
                counts[index] += 1
                remaining -= 1
    d_mp += remaining

    rings: list[RingChoice] = []
    parts: list[tuple[np.ndarray, np.ndarray, str]] = []
    for demand, pool, count in zip(kinds, candidates, counts):
        rules = select_permutations(demand.layout.size, count, pool)
        if rules:
            rings.append(RingChoice(demand.layout, tuple(rules)))
        for rule in rules:
            src, dst = ring_links(demand.layout, rule)
            parts.append((src, dst, "allreduce"))

    rounds = mp_matchings(mp, d_mp) if d_mp else []
    for pairs in rounds:
        if pairs:
            u, v = np.array(pairs, dtype=np.int64).T
            parts.append((np.concatenate([u, v]), np.concatenate([v, u]), "mp"))
    unused = sum(1 for pairs in rounds if not pairs)

    pure_rings = (len(rings) == 1 and not any(rounds) and rings[0].layout.size == num_nodes)
    topology = (DirectTopology.circulant(num_nodes, rings[0].rules) if pure_rings
                else DirectTopology.from_parts(num_nodes, parts))
    return TopologyPlan(num_nodes=num_nodes, degree=degree, allreduce_degree=sum(counts),
                        mp_degree=d_mp, rings=tuple(rings), matchings=tuple(tuple(r) for r in rounds),
                        topology=topology, unused_degree=unused)
