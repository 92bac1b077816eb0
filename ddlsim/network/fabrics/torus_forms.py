"""Closed forms of regular patterns on the 2D torus, equal float for float to the listed price.

Windows of classes (pipelined trees) are priced in `torus_windows`.

Shifts along one dimension (`shift_pairs` with a stride: the rings of `torus2d` and
`hierarchical`) stay inside rows or columns, and every row (column) carries the same flows.

A full ring shift (Bruck, the dissemination barrier, a ring over the whole group): every
position p sends to (p + d) mod n. With one group of n ranks on whole rows of X nodes
(identity placement, stride 1), write d = q X + r: every row carries the same x legs
x -> (x + r) mod X, and column x' carries y -> (y + q + c) mod R (R = n / X rows in use)
with c = 1 when x' < r (the flow wrapped round its row) and 0 otherwise. So one row and two
columns give every link load. Weights are uniform, and every link's load is the same count of
the same additions as in the listed computation, so the floats are identical; the longest
flow combines the longest x and y legs of each column kind (the latency grows with both).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ddlsim.core import units
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.torus_rings import ring_interval_loads, short_way
from ddlsim.network.int_arrays import floor_mod
from ddlsim.network.patterns import Pattern
from ddlsim.network.placement import Placement
from ddlsim.network.pricing import PatternCost


class TorusShape(Protocol):
    """What these closed forms read of a torus (`ddlsim.network.fabrics.torus.Torus2D`)."""

    dims: tuple[int, int]
    link_bandwidth_bps: float
    propagation_s: tuple[float, float]
    router_latency_s: float
    io_latency_s: float


def _leg_load(positions: np.ndarray, moved: np.ndarray, ring: int, weight: float) -> tuple[int, float]:
    """(most hops, busiest link load) of flows positions -> moved along one ring of `ring` links."""
    forward, hops = short_way(moved - positions, ring)
    load = 0.0
    for way in (True, False):
        used = (forward == way) & (hops > 0)
        if used.any():
            count = int(used.sum())
            start = positions[used] if way else floor_mod(positions[used] - hops[used] + 1, ring)
            loads = ring_interval_loads(np.zeros(count, dtype=np.int64), start, hops[used],
                                         np.full(count, weight), 1, ring)
            load = max(load, float(loads.max()))
    return (int(hops.max()) if hops.size else 0), load


def shift_cost(torus: TorusShape, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost | None:
    """Closed form of a full shift or a shift along one dimension (module docstring) on one group
    of whole rows, or None."""
    structure = getattr(pattern, "structure", None)
    width, height = torus.dims
    n = layout.size
    if (structure is None or structure[0] not in ("shift", "dim_shift") or placement.nodes is not None
            or pattern.multicast or layout.num_groups != 1 or layout.stride != 1 or n % width or n // width > height):
        return None
    if structure[0] == "dim_shift":
        return _dim_shift_cost(torus, float(pattern.weight[0]), n // width, *structure[1])
    rows = n // width
    offset = int(structure[1]) % n
    quotient, remainder = divmod(offset, width)
    weight = float(pattern.weight[0])
    x = np.arange(width, dtype=np.int64)
    hops_x, load_x = _leg_load(x, (x + remainder) % width, width, weight)
    y = np.arange(rows, dtype=np.int64)
    legs = []
    for wrapped in (0, 1):
        sources = x[(x + remainder >= width) == bool(wrapped)]
        if sources.size == 0:
            continue
        most_x = int(_leg_load(sources, (sources + remainder) % width, width, weight)[0])
        most_y, load_y = _leg_load(y, (y + quotient + wrapped) % rows, height, weight)
        legs.append((most_x, most_y, load_y))
    latency = max(_latency_s(torus, hx, hy) for hx, hy, _ in legs)
    load = max([load_x] + [load_y for _, _, load_y in legs])
    return PatternCost(latency, load * units.BITS_PER_BYTE / torus.link_bandwidth_bps)


def _latency_s(torus: TorusShape, hops_x: int, hops_y: int) -> float:
    return float(torus.io_latency_s + hops_x * torus.propagation_s[0] + hops_y * torus.propagation_s[1]
                 + torus.router_latency_s * max(hops_x + hops_y - 1, 0))


def _dim_shift_cost(torus: TorusShape, weight: float, rows: int, stride: int, size: int, offset: int
                    ) -> PatternCost | None:
    """A shift by `offset` among the members `stride` apart in lines of `size` (positions
    p = low + stride (c + size high)) on `rows` whole rows: inside every row when the lines fit
    in a row (stride size divides X), or along every column when they step whole rows (X divides
    stride). Either way every row (column) carries the same flows, so one gives every load."""
    width, height = torus.dims
    if (stride * size) <= width and width % (stride * size) == 0:
        x = np.arange(width, dtype=np.int64)
        coordinate = (x // stride) % size
        hops, load = _leg_load(x, x + ((coordinate + offset) % size - coordinate) * stride, width, weight)
        return PatternCost(_latency_s(torus, hops, 0), load * units.BITS_PER_BYTE / torus.link_bandwidth_bps)
    if stride % width == 0 and rows % ((stride // width) * size) == 0:
        step = stride // width
        y = np.arange(rows, dtype=np.int64)
        coordinate = (y // step) % size
        hops, load = _leg_load(y, y + ((coordinate + offset) % size - coordinate) * step, height, weight)
        return PatternCost(_latency_s(torus, 0, hops), load * units.BITS_PER_BYTE / torus.link_bandwidth_bps)
    return None
