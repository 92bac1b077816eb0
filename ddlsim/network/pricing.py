"""The generic flow pricer: latency and transfer time of a batch of concurrent flows.

A fabric describes each flow's path as a head-to-head latency and a few shared resources (a
NIC's egress, a domain's uplinks, a torus link, ...), each with a capacity. The step then costs

    latency_s  = max over flows of the flow's latency              (head to head)
    transfer_s = max over resources of bytes through it / capacity (head to tail)

which is the critical path of the step once concurrent flows share their links fairly: when
equal flows share a resource, each gets capacity / count, and the slowest flow ends when the
busiest resource has drained. Loads add up over flows, so concurrent groups, repetitions and
message sizes compose linearly: a pattern is priced per unit of weight and scaled.

With classes (see `ddlsim.network.patterns.Pairs`) the pricer also returns the cost of each
class alone, valid for any window of classes when no resource is shared between classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.units import BITS_PER_BYTE


@dataclass(frozen=True, eq=False)
class Routes:
    """Paths of F flows: per-flow latency and, per hop slot, the resource each flow uses there.

    `hops[h][f]` is the resource id flow f uses in hop slot h, or -1. Slots listed in `egress`
    are where a multicast source pays once for all its copies. `fixed_loads` adds loads a
    fabric computed in aggregate (e.g. long torus paths), which hides them from class analysis.
    """

    latency_s: np.ndarray
    hops: tuple[np.ndarray, ...] = ()
    egress: tuple[int, ...] = (0,)
    fixed_loads: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class PatternCost:
    """Price of one pattern: latency, and seconds per byte carried by one unit of weight.

    `class_latency_s` / `class_s_per_unit` hold each class's own cost when the classes use
    disjoint resources (`disjoint`); a window of classes then costs the maximum over it.
    """

    latency_s: float
    s_per_unit: float
    class_latency_s: np.ndarray | None = None
    class_s_per_unit: np.ndarray | None = None
    disjoint: bool = False

    @classmethod
    def zero(cls, num_classes: int = 0) -> PatternCost:
        empty = np.zeros(num_classes)
        return cls(0.0, 0.0, empty, empty.copy(), True)


def _dedupe_multicast(ids: np.ndarray, sources: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One copy per (resource, source): a multicast sender transmits its data once."""
    key = ids * (int(sources.max()) + 1) + sources
    unique, inverse = np.unique(key, return_inverse=True)
    best = np.zeros(unique.size)
    np.maximum.at(best, inverse, weights)
    return unique // (int(sources.max()) + 1), best


def price_flows(routes: Routes, capacity_bps: np.ndarray, weights: np.ndarray, *,
                classes: np.ndarray | None = None, num_classes: int = 0,
                sources: np.ndarray | None = None, multicast: bool = False) -> PatternCost:
    """Price F concurrent flows of `weights` units along `routes` (see the module docstring)."""
    if weights.size == 0:
        return PatternCost.zero(num_classes)
    id_parts, weight_parts, class_id_parts, class_parts = [], [], [], []
    for slot, hop in enumerate(routes.hops):
        used = hop >= 0
        ids, slot_weights = hop[used], weights[used]
        if classes is not None:
            class_id_parts.append(ids)
            class_parts.append(classes[used])
        if multicast and slot in routes.egress and sources is not None and ids.size:
            ids, slot_weights = _dedupe_multicast(ids, sources[used], slot_weights)
        id_parts.append(ids)
        weight_parts.append(slot_weights)
    ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int64)
    loads = np.bincount(ids, weights=np.concatenate(weight_parts) if weight_parts else None,
                        minlength=capacity_bps.size)
    if routes.fixed_loads is not None:
        loads = loads + routes.fixed_loads
    time_per_unit = loads * BITS_PER_BYTE / capacity_bps
    latency_s = float(routes.latency_s.max())
    s_per_unit = float(time_per_unit.max())
    if classes is None or num_classes == 0:
        return PatternCost(latency_s, s_per_unit)
    if routes.fixed_loads is not None:
        return PatternCost(latency_s, s_per_unit)
    class_ids = np.concatenate(class_id_parts)
    resource_classes = np.concatenate(class_parts)
    low = np.full(capacity_bps.size, np.iinfo(np.int64).max)
    high = np.full(capacity_bps.size, -1)
    np.minimum.at(low, class_ids, resource_classes)
    np.maximum.at(high, class_ids, resource_classes)
    touched = high >= 0
    if np.any(low[touched] != high[touched]):
        return PatternCost(latency_s, s_per_unit)
    class_latency = np.zeros(num_classes)
    np.maximum.at(class_latency, classes, routes.latency_s)
    class_time = np.zeros(num_classes)
    np.maximum.at(class_time, high[touched], time_per_unit[touched])
    return PatternCost(latency_s, s_per_unit, class_latency, class_time, True)


def window_max(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """max(values[low[i] : high[i] + 1]) for every i, with a sparse table (O(K log K) + O(1) each)."""
    table = [np.asarray(values, dtype=np.float64)]
    length = 1
    while 2 * length <= values.size:
        previous = table[-1]
        table.append(np.maximum(previous[:-length], previous[length:]))
        length *= 2
    span = high - low + 1
    level = np.floor(np.log2(span)).astype(np.int64)
    result = np.empty(low.size)
    for index in np.unique(level):
        rows = level == index
        width = 1 << int(index)
        result[rows] = np.maximum(table[index][low[rows]], table[index][high[rows] - width + 1])
    return result
