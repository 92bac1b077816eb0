"""Windows of classes on the 2D torus (pipelined trees): each window's price from per-class link loads.

A window [first, last] of classes is priced as the pairs of those classes alone: the longest
flow, and the busiest link's load. Flows routed x first, then y, load intervals of links of
their row and of their destination's column (`torus_rings`). For whole-number weights (below
2^52 in all) every link load is an exact integer, so a window's loads are the sum of its classes'
loads in any order: the windows are walked in order, classes entering the window are added to
one running set of link loads and classes leaving it subtracted, and the busiest link is read
once per window, on the rings the window's classes use. Every class's loads are computed once
(kept while they fit a memory budget, computed again when they leave otherwise; short flows on
many rings as the links they cover), so the cost grows with the classes, not with the windows
times the flows. The result equals the price of each window's pairs float for float
(tests/network/test_torus_windows.py).
"""

from __future__ import annotations

import numpy as np

from ddlsim.core import units
from ddlsim.core.caches import Memo
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.base import expand_listed
from ddlsim.network.fabrics.torus_forms import TorusShape
from ddlsim.network.fabrics.torus_rings import short_way
from ddlsim.network.int_arrays import floor_mod
from ddlsim.network.patterns import Pattern, class_order
from ddlsim.network.placement import Placement

# Per-class loads kept for the walk while they hold at most this many link cells (8 bytes each).
KEPT_CELLS = 1 << 23

# Classes list the links their flows cover when the rings they use have more links than this
# (and the flows cover a quarter of them or less); below it, summing intervals is faster.
SPARSE_FROM_CELLS = 1 << 17

# One direction's loads of one class: (rings used, link ids or None, loads). With link ids (flat
# over rings x links), loads lists those links only; without, it is one row per ring used.
DirectionLoads = tuple[np.ndarray, np.ndarray | None, np.ndarray]
# One class's loads: per direction (+x, -x, +y, -y).
ClassLoads = tuple[DirectionLoads, ...]


def _ring_loads(line: np.ndarray, start: np.ndarray, length: np.ndarray, weight: np.ndarray,
                num_lines: int, ring: int) -> DirectionLoads:
    """Loads of links of rings: each flow covers `length` links of ring `line` from `start`
    onwards (cyclically). Short flows on many rings list the links they cover; otherwise interval
    sums over every link of the rings used. Both are exact for whole-number weights."""
    used = np.flatnonzero(np.bincount(line, minlength=num_lines))
    hops = int(length.sum())
    if 4 * hops <= used.size * ring and used.size * ring > SPARSE_FROM_CELLS:
        flow = np.repeat(np.arange(line.size), length)
        offset = np.arange(hops) - np.repeat(np.cumsum(length) - length, length)
        links, inverse = np.unique(line[flow] * ring + floor_mod(start[flow] + offset, ring), return_inverse=True)
        return used, links, np.bincount(inverse.ravel(), weights=weight[flow], minlength=links.size)
    lookup = np.zeros(num_lines, dtype=np.int64)
    lookup[used] = np.arange(used.size)
    compact = lookup[line]
    width = 2 * ring + 1
    index = np.concatenate([compact * width + start, compact * width + start + length])
    values = np.concatenate([weight, -weight])
    diff = np.bincount(index, weights=values, minlength=used.size * width).reshape(used.size, width)
    covered = np.cumsum(diff, axis=1)[:, :2 * ring]
    return used, None, covered[:, :ring] + covered[:, ring:]


class _Flows:
    """The pattern's flows sorted by class, with their legs along x and y."""

    def __init__(self, torus: TorusShape, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                 classes: np.ndarray, num_classes: int) -> None:
        width, height = torus.dims
        order = class_order(classes, num_classes)
        src, dst, self.weight, classes = src[order], dst[order], weight[order], classes[order]
        self.x1, self.y1, self.x2, y2 = floor_mod(src, width), src // width, floor_mod(dst, width), dst // width
        self.forward_x, self.hops_x = short_way(self.x2 - self.x1, width)
        self.forward_y, self.hops_y = short_way(y2 - self.y1, height)
        flow_latency = (torus.io_latency_s + self.hops_x * torus.propagation_s[0] + self.hops_y * torus.propagation_s[1]
                        + torus.router_latency_s * np.maximum(self.hops_x + self.hops_y - 1, 0))
        self.class_latency = np.zeros(num_classes)
        np.maximum.at(self.class_latency, classes, flow_latency)
        self.bounds = np.searchsorted(classes, np.arange(num_classes + 1))
        self.dims = (width, height)
        self.kept: dict[int, ClassLoads] = {}
        self.kept_cells = 0

    def loads(self, klass: int) -> ClassLoads:
        """The link loads of one class's flows, direction by direction."""
        rows = slice(int(self.bounds[klass]), int(self.bounds[klass + 1]))
        width, height = self.dims
        x1, y1, x2, weight = self.x1[rows], self.y1[rows], self.x2[rows], self.weight[rows]
        parts = []
        for hops, forward_flags, position, line, ring, lines in (
                (self.hops_x[rows], self.forward_x[rows], x1, y1, width, height),
                (self.hops_y[rows], self.forward_y[rows], y1, x2, height, width)):
            for forward in (True, False):
                used = (forward_flags == forward) & (hops > 0)
                if not used.any():
                    parts.append((np.zeros(0, dtype=np.int64), None, np.zeros((0, ring))))
                    continue
                start = position[used] if forward else floor_mod(position[used] - hops[used] + 1, ring)
                parts.append(_ring_loads(line[used], start, hops[used], weight[used], lines, ring))
        return tuple(parts)

    def kept_loads(self, klass: int) -> ClassLoads:
        """`loads(klass)`, kept for later windows while they fit `KEPT_CELLS`."""
        loads = self.kept.get(klass)
        if loads is None:
            loads = self.loads(klass)
            cells = sum(values.size for _, _, values in loads)
            if self.kept_cells + cells <= KEPT_CELLS:
                self.kept[klass], self.kept_cells = loads, self.kept_cells + cells
        return loads

    def release(self, klass: int) -> None:
        """Forget a class's kept loads once the kept ones fill half the budget (a walk whose windows
        move forward never needs them again)."""
        if self.kept_cells > KEPT_CELLS // 2 and klass in self.kept:
            self.kept_cells -= sum(values.size for _, _, values in self.kept.pop(klass))


class WindowPricer:
    """The torus's window prices, with the flows and class loads of the last pattern kept (the
    steps of one pipelined pass share their pattern and ask for different windows of it)."""

    def __init__(self, torus: TorusShape) -> None:
        self.torus = torus
        self._flows = Memo("torus.window_flows", 1)

    def prices(self, pattern: Pattern, windows: np.ndarray, layout: GroupLayout, placement: Placement
               ) -> tuple[np.ndarray, np.ndarray] | None:
        key = (pattern.full_key, layout, placement.key)
        flows = self._flows.get(key)
        if flows is None:
            src, dst, weight, classes = expand_listed(pattern, layout, placement)
            if classes is None or not np.all(weight == np.floor(weight)) or float(np.sum(weight)) >= 2.0 ** 52:
                return None
            flows = self._flows.put(key, _Flows(self.torus, src, dst, weight, classes, pattern.num_classes))
        return window_prices(self.torus, flows, windows)


def window_prices(torus: TorusShape, flows: _Flows, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latency and seconds per weight-byte of each window [first, last] of classes of `flows`
    (module docstring). Rings no class of the window uses carry no load, so the busiest link is
    looked for on the rings in use only (counted per ring)."""
    width, height = torus.dims
    totals = [np.zeros((height, width)), np.zeros((height, width)), np.zeros((width, height)),
              np.zeros((width, height))]
    in_use = [np.zeros(height, dtype=np.int64), np.zeros(height, dtype=np.int64), np.zeros(width, dtype=np.int64),
              np.zeros(width, dtype=np.int64)]

    def shift(klass: int, sign: int) -> None:
        for total, count, (rings, links, values) in zip(totals, in_use, flows.kept_loads(klass)):
            if rings.size:
                count[rings] += sign
                if links is None:
                    total[rings] += sign * values
                else:
                    total.reshape(-1)[links] += sign * values
        if sign < 0:
            flows.release(klass)

    latency, s_per_unit = np.zeros(len(windows)), np.zeros(len(windows))
    low, high = 0, -1  # the classes now in `totals`
    for index, (first, last) in enumerate(windows):
        first, last = int(first), int(last)
        if first == last:  # one class: its own loads are the window's
            if flows.bounds[last + 1] > flows.bounds[first]:
                latency[index] = float(flows.class_latency[first])
                most = max([0.0] + [float(values.max()) for _, _, values in flows.kept_loads(first) if values.size])
                s_per_unit[index] = most * units.BITS_PER_BYTE / torus.link_bandwidth_bps
                flows.release(first)
            continue
        for klass in range(min(low, first), max(high, last) + 1):
            inside_now, inside_next = low <= klass <= high, first <= klass <= last
            if inside_next and not inside_now:
                shift(klass, 1)
            elif inside_now and not inside_next:
                shift(klass, -1)
        low, high = first, last
        if flows.bounds[last + 1] > flows.bounds[first]:
            latency[index] = float(flows.class_latency[first:last + 1].max())
            most = 0.0
            for total, count in zip(totals, in_use):
                rings = np.flatnonzero(count)
                if rings.size == count.size:
                    most = max(most, float(total.max()))
                elif rings.size:
                    most = max(most, float(total[rings].max()))
            s_per_unit[index] = most * units.BITS_PER_BYTE / torus.link_bandwidth_bps
    return latency, s_per_unit
