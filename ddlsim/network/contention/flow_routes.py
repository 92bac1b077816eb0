"""Per-flow paths on a fabric: the resources each (source node, destination node) pair crosses.

`route_pairs` asks `Fabric.route` once for every distinct ordered pair and keeps, per pair, its
head-to-head latency and the resources it crosses with the bits each byte puts there (8 per
crossing, `units.BITS_PER_BYTE`), in compressed rows. A fabric whose `route` sums loads in
aggregate (`Routes.fixed_loads`: TopoOpt's host-forwarded paths, long torus paths) is asked
pair by pair instead, so that each flow still gets its own path. Resource ids are renumbered
to the ones some pair uses, with their capacities, so the fluid engine and the SimGrid
reference only see the part of a large fabric a case touches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.topoopt.reconfigurable import ReconfigurableFabric


@dataclass(frozen=True, eq=False)
class PairRoutes:
    """Routes of P node pairs over R resources (local ids 0..R-1).

    Pair p goes from `src_node[p]` to `dst_node[p]` after `latency_s[p]`, and puts
    `bits_per_byte[e]` bits on resource `resource[e]` per byte it moves, for e in
    [indptr[p], indptr[p + 1]). `capacity_bps[r]` serves resource r; `fabric_resource[r]` is its
    id in the fabric's `capacity_bps()`.
    """

    src_node: np.ndarray
    dst_node: np.ndarray
    latency_s: np.ndarray
    indptr: np.ndarray
    resource: np.ndarray
    bits_per_byte: np.ndarray
    capacity_bps: np.ndarray
    fabric_resource: np.ndarray

    @property
    def num_pairs(self) -> int:
        return int(self.src_node.size)

    def of(self, pair: int) -> tuple[np.ndarray, np.ndarray]:
        """(resources, bits per byte) of one pair."""
        low, high = self.indptr[pair], self.indptr[pair + 1]
        return self.resource[low:high], self.bits_per_byte[low:high]


def has_flow_routes(fabric: Fabric) -> bool:
    """True when the fabric lists fixed per-flow paths (`Fabric.route` overridden, and not a
    fabric that chooses its circuits step by step for the traffic in front of it)."""
    overridden = type(fabric).route is not Fabric.route and type(fabric).capacity_bps is not Fabric.capacity_bps
    return overridden and not isinstance(fabric, ReconfigurableFabric)


def require_flow_routes(fabric: Fabric) -> None:
    if isinstance(fabric, ReconfigurableFabric):
        raise ConfigError("fabric", fabric.name, "chooses its circuits step by step for each step's traffic, so it "
                                                 "has no fixed per-flow routes for the flow-level contention engine")
    if not has_flow_routes(fabric):
        raise ConfigError("fabric", fabric.name, "has no per-flow routes (Fabric.route): its steps are priced "
                                                 "otherwise, so the flow-level contention engine cannot run on it")


def route_pairs(fabric: Fabric, src_node: np.ndarray, dst_node: np.ndarray) -> PairRoutes:
    """Routes of the given ordered node pairs (distinct pairs, any order) on `fabric`."""
    require_flow_routes(fabric)
    src = np.asarray(src_node, dtype=np.int64)
    dst = np.asarray(dst_node, dtype=np.int64)
    capacity = np.asarray(fabric.capacity_bps(), dtype=np.float64)
    if src.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return PairRoutes(empty, empty, np.zeros(0), np.zeros(1, dtype=np.int64), empty, np.zeros(0), np.zeros(0),
                          empty)
    try:
        routes = fabric.route(src, dst, np.ones(src.size))
    except NotImplementedError as error:
        raise ConfigError("fabric", fabric.name, "has no per-flow routes (Fabric.route): the flow-level "
                                                 "contention engine cannot run on it") from error
    latency = np.asarray(routes.latency_s, dtype=np.float64).reshape(-1)
    latency = np.broadcast_to(latency, src.shape).astype(np.float64)
    if routes.fixed_loads is None:
        pair, resource, count = _entries_from_hops(routes.hops, src.size)
    else:
        pair, resource, count = _entries_one_by_one(fabric, src, dst)
    used, local = np.unique(resource, return_inverse=True)
    indptr = np.zeros(src.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair, minlength=src.size), out=indptr[1:])
    return PairRoutes(src, dst, latency, indptr, local.astype(np.int64), count * BITS_PER_BYTE,
                      capacity[used], used)


def _entries_from_hops(hops: tuple[np.ndarray, ...], num_pairs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair, resource, crossings) sorted by pair, one entry per distinct (pair, resource)."""
    if not hops or num_pairs == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    table = np.stack([np.broadcast_to(np.asarray(hop, dtype=np.int64), (num_pairs,)) for hop in hops])
    pair = np.broadcast_to(np.arange(num_pairs, dtype=np.int64), table.shape)
    used = table >= 0
    return _combine(pair[used], table[used], np.ones(int(used.sum())))


def _entries_one_by_one(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair, the resources its own route loads (a fabric that only sums loads in aggregate)."""
    pairs, resources, counts = [], [], []
    for index in range(src.size):
        routes = fabric.route(src[index:index + 1], dst[index:index + 1], np.ones(1))
        if routes.fixed_loads is None:
            _, resource, count = _entries_from_hops(routes.hops, 1)
        else:
            loads = np.asarray(routes.fixed_loads, dtype=np.float64)
            resource = np.flatnonzero(loads)
            count = loads[resource]
        pairs.append(np.full(resource.size, index, dtype=np.int64))
        resources.append(np.asarray(resource, dtype=np.int64))
        counts.append(np.asarray(count, dtype=np.float64))
    if not pairs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    return _combine(np.concatenate(pairs), np.concatenate(resources), np.concatenate(counts))


def _combine(pair: np.ndarray, resource: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries of the same (pair, resource) summed (a path crossing a resource twice), by pair."""
    width = int(resource.max()) + 1 if resource.size else 1
    key, inverse = np.unique(pair * width + resource, return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=count, minlength=key.size)
    return key // width, key % width, total
