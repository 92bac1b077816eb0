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

from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.int_arrays import floor_mod, sorted_distinct

# Below one flow entry per SPARSE_RATIO resources, loads are kept for the used resources only.
SPARSE_RATIO = 8


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

    With classes, `disjoint` says that windows of classes can be priced from the per-class
    figures: `class_latency_s` and `class_s_per_unit` (resources used by one class only), plus,
    for resources several classes share, `shared_prefix` (cumulative loads over classes, one row
    per class boundary, one column per shared resource) and their `shared_capacity_bps`.
    """

    latency_s: float
    s_per_unit: float
    class_latency_s: np.ndarray | None = None
    class_s_per_unit: np.ndarray | None = None
    disjoint: bool = False
    shared_prefix: np.ndarray | None = None
    shared_capacity_bps: np.ndarray | None = None

    @classmethod
    def zero(cls, num_classes: int = 0) -> PatternCost:
        empty = np.zeros(num_classes)
        return cls(0.0, 0.0, empty, empty.copy(), True)

    def window_s_per_unit(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Seconds per weight-byte of each window [low[i], high[i]] of classes."""
        result = window_max(self.class_s_per_unit, low, high)
        if self.shared_prefix is None:
            return result
        pairs = np.stack([low, high], axis=1)
        distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
        shared = np.empty(len(distinct))
        batch = max(1, (1 << 22) // self.shared_prefix.shape[1])
        for start in range(0, len(distinct), batch):
            rows = distinct[start:start + batch]
            loads = self.shared_prefix[rows[:, 1] + 1] - self.shared_prefix[rows[:, 0]]
            shared[start:start + batch] = (loads * BITS_PER_BYTE / self.shared_capacity_bps).max(axis=1)
        return np.maximum(result, shared[inverse.ravel()])


MAX_SHARED_CELLS = 1 << 24
SMALL_WINDOW_TABLE = 256


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
    id_parts, weight_parts, class_parts = [], [], []
    for slot, hop in enumerate(routes.hops):
        used = hop >= 0
        ids, slot_weights = hop[used], weights[used]
        slot_classes = classes[used] if classes is not None else None
        if multicast and slot in routes.egress and sources is not None and ids.size:
            if classes is not None:  # one copy per (resource, source) within each class
                key_sources = sources[used] * (num_classes + 1) + slot_classes
                ids, slot_weights = _dedupe_multicast(ids, key_sources, slot_weights)
                slot_classes = None if ids.size == 0 else _dedupe_classes(hop[used], sources[used], slot_classes,
                                                                           num_classes)
            else:
                ids, slot_weights = _dedupe_multicast(ids, sources[used], slot_weights)
        id_parts.append(ids)
        weight_parts.append(slot_weights)
        if slot_classes is not None:
            class_parts.append(slot_classes)
    ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int64)
    entry_weights = np.concatenate(weight_parts) if weight_parts else np.zeros(0)
    if routes.fixed_loads is None and ids.size * SPARSE_RATIO < capacity_bps.size:
        # Few flows on a fabric with millions of resources: work on the resources they use only.
        # bincount adds each resource's entries in the same order either way: identical sums.
        used, ids = np.unique(ids, return_inverse=True)
        capacity_bps = capacity_bps[used]
    loads = np.bincount(ids, weights=entry_weights, minlength=capacity_bps.size)
    if routes.fixed_loads is not None:
        loads = loads + routes.fixed_loads
    time_per_unit = loads * BITS_PER_BYTE / capacity_bps
    latency_s = float(routes.latency_s.max())
    s_per_unit = float(time_per_unit.max()) if time_per_unit.size else 0.0
    if classes is None or num_classes == 0 or routes.fixed_loads is not None:
        return PatternCost(latency_s, s_per_unit)
    entry_classes = np.concatenate(class_parts) if class_parts else np.zeros(0, dtype=np.int64)
    class_latency = np.zeros(num_classes)
    np.maximum.at(class_latency, classes, routes.latency_s)
    return _class_costs(ids, entry_classes, entry_weights, capacity_bps, time_per_unit, num_classes,
                        latency_s, s_per_unit, class_latency)


def _dedupe_classes(ids: np.ndarray, sources: np.ndarray, classes: np.ndarray, num_classes: int) -> np.ndarray:
    """The class of each (resource, source, class) entry kept by `_dedupe_multicast`, in its order."""
    key = (ids * (int(sources.max()) + 1) + sources) * (num_classes + 1) + classes
    return floor_mod(sorted_distinct(key), num_classes + 1)


def _class_costs(ids: np.ndarray, entry_classes: np.ndarray, entry_weights: np.ndarray, capacity_bps: np.ndarray,
                 time_per_unit: np.ndarray, num_classes: int, latency_s: float, s_per_unit: float,
                 class_latency: np.ndarray) -> PatternCost:
    """Per-class costs: resources one class uses alone, and cumulative loads of shared ones."""
    size = capacity_bps.size
    narrow = np.int16 if num_classes < np.iinfo(np.int16).max else np.int64  # at scale: less memory to touch
    low = np.full(size, np.iinfo(narrow).max, dtype=narrow)
    high = np.full(size, -1, dtype=narrow)
    np.minimum.at(low, ids, entry_classes.astype(narrow, copy=False))
    np.maximum.at(high, ids, entry_classes.astype(narrow, copy=False))
    touched = high >= 0
    exclusive = touched & (low == high)
    class_time = np.zeros(num_classes)
    np.maximum.at(class_time, high[exclusive], time_per_unit[exclusive])
    shared = np.flatnonzero(touched & (low != high))
    if shared.size == 0:
        return PatternCost(latency_s, s_per_unit, class_latency, class_time, True)
    if shared.size * (num_classes + 1) > MAX_SHARED_CELLS:
        return PatternCost(latency_s, s_per_unit)
    column = np.full(size, -1, dtype=np.int32 if shared.size < np.iinfo(np.int32).max else np.int64)
    column[shared] = np.arange(shared.size)
    on_shared = column[ids] >= 0
    cells = entry_classes[on_shared] * shared.size + column[ids[on_shared]]
    per_class = np.bincount(cells, weights=entry_weights[on_shared], minlength=num_classes * shared.size)
    prefix = np.zeros((num_classes + 1, shared.size))
    np.cumsum(per_class.reshape(num_classes, shared.size), axis=0, out=prefix[1:])
    return PatternCost(latency_s, s_per_unit, class_latency, class_time, True, prefix, capacity_bps[shared])


def window_max(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """max(values[low[i] : high[i] + 1]) for every i: for a few values (tree levels) a table of every
    window, read once per i; otherwise running maxima for the windows that start at the first value
    or end at the last (a pipeline filling and draining), and a sparse table (O(K log W) + O(1)
    each, W the widest of the other windows) for the rest. A maximum is exact in any order."""
    if 0 < values.size <= SMALL_WINDOW_TABLE:
        row = np.asarray(values, dtype=np.float64)
        square = np.broadcast_to(row, (row.size, row.size))
        every = np.maximum.accumulate(np.where(np.tri(row.size, k=-1, dtype=bool), -np.inf, square), axis=1)
        return every[low, high]
    values = np.asarray(values, dtype=np.float64)
    prefix = low == 0
    suffix = ~prefix & (high == values.size - 1)
    rest = ~(prefix | suffix)
    if rest.all():
        return _sparse_table_max(values, low, high)
    result = np.empty(low.size)
    if prefix.any():
        result[prefix] = np.maximum.accumulate(values)[high[prefix]]
    if suffix.any():
        result[suffix] = np.maximum.accumulate(values[::-1])[::-1][low[suffix]]
    if rest.any():
        result[rest] = _sparse_table_max(values, low[rest], high[rest])
    return result


def _sparse_table_max(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """`window_max` by a sparse table built only up to the widest window asked for."""
    if low.size == 0:
        return np.empty(0)
    level = np.frexp(high - low + 1)[1].astype(np.int64) - 1  # floor(log2(width)), exactly
    table = [values]
    length = 1
    for _ in range(int(level.max())):
        previous = table[-1]
        table.append(np.maximum(previous[:-length], previous[length:]))
        length *= 2
    levels = np.flatnonzero(np.bincount(level))
    if levels.size == 1:  # windows of one width (a full pipeline)
        width = 1 << int(levels[0])
        return np.maximum(table[-1][low], table[-1][high - width + 1])
    result = np.empty(low.size)
    for index in levels:
        rows = level == index
        width = 1 << int(index)
        result[rows] = np.maximum(table[index][low[rows]], table[index][high[rows] - width + 1])
    return result
