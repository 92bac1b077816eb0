"""A 2D torus: X x Y nodes, each linked to its four neighbours, dimension-ordered routing.

Node (x, y) is number x + X y; placement fills rows (dimension x) first. Every node has four
outgoing links (+x, -x, +y, -y) of `link_bandwidth` each (by default a quarter of the node's
total `node_bandwidth`, as in SiPAC's per-CU accounting). A flow goes the short way round
along x first, then along y, and loads every link it crosses; intermediate nodes forward it
(`router_latency` per intermediate node). Latency: node I/O, plus per-hop propagation of each
dimension. RAMP 7.5's torus is 128 x 512 at 2.4 Tbps per node with 156 ns and 520 ns of
worst-case propagation per hop in the two dimensions; SiPAC uses near-square dimensions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.base import DomainCut, Fabric, expand_listed, listed_pairs_count
from ddlsim.network.fabrics.torus_forms import shift_cost
from ddlsim.network.fabrics.torus_rings import (
    interval_max,
    interval_parts,
    ring_interval_loads,
    short_way,
    usable_links,
)
from ddlsim.network.fabrics.torus_windows import WindowPricer
from ddlsim.network.int_arrays import floor_mod
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement
from ddlsim.network.pricing import PatternCost, Routes

PADDED_HOP_ENTRIES = 1 << 22
MAX_MESH_FLOWS = 1 << 22


@dataclass
class TorusConfig:
    name: str = "torus2d"
    dims: list[int] = field(default_factory=lambda: [128, 512])
    num_nodes: int = 0
    node_bandwidth: str = "2.4Tbps"
    link_bandwidth: str = ""
    propagation: list[str] = field(default_factory=lambda: ["156ns", "520ns"])
    router_latency: str = "0ns"
    io_latency: str = "100ns"


def near_square_dims(num_nodes: int) -> tuple[int, int]:
    """The factor pair (x, y), x <= y, of `num_nodes` with the smallest difference."""
    x = math.isqrt(num_nodes)
    while num_nodes % x:
        x -= 1
    return x, num_nodes // x


@FABRICS.register("torus2d", TorusConfig)
@dataclass(frozen=True)
class Torus2D(Fabric):
    """X x Y torus with four links per node and dimension-ordered shortest routing."""

    dims: tuple[int, int]
    num_nodes: int
    link_bandwidth_bps: float
    node_bandwidth_bps: float
    propagation_s: tuple[float, float]
    router_latency_s: float
    io_latency_s: float
    name: str = "torus2d"

    @classmethod
    def from_config(cls, config: TorusConfig) -> Torus2D:
        if config.dims:
            if len(config.dims) != 2 or min(config.dims) < 1:
                raise ConfigError("dims", list(config.dims), "must be two positive integers [x, y]")
            dims = (int(config.dims[0]), int(config.dims[1]))
            if config.num_nodes not in (0, dims[0] * dims[1]):
                raise ConfigError("num_nodes", config.num_nodes,
                                  f"must be 0 or dims[0] x dims[1] = {dims[0] * dims[1]}")
        elif config.num_nodes >= 1:
            dims = near_square_dims(config.num_nodes)
        else:
            raise ConfigError("dims", [], "give dims [x, y] or num_nodes (near-square dims)")
        if len(config.propagation) != 2:
            raise ConfigError("propagation", list(config.propagation), "needs one value per dimension")
        node_bps = units.parse_bandwidth_bps(config.node_bandwidth, "node_bandwidth")
        link_bps = (units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth")
                    if config.link_bandwidth else node_bps / 4)
        return cls(dims=dims, num_nodes=dims[0] * dims[1], link_bandwidth_bps=link_bps, node_bandwidth_bps=node_bps,
                   propagation_s=tuple(units.parse_time_s(value, "propagation") for value in config.propagation),
                   router_latency_s=units.parse_time_s(config.router_latency, "router_latency"),
                   io_latency_s=units.parse_time_s(config.io_latency, "io_latency"), name=config.name)

    # -- capabilities ----------------------------------------------------------------------------
    def grid_dims(self) -> tuple[int, ...]:
        return self.dims

    @classmethod
    def node_bandwidth_key(cls) -> str | None:
        return "node_bandwidth"

    @classmethod
    def sized_config(cls, params: dict[str, Any], num_nodes: int) -> dict[str, Any]:
        """Near-square dimensions for `num_nodes` (8 x 8, 16 x 32), as SiPAC VI-A sizes the torus."""
        return {**params, "dims": [], "num_nodes": num_nodes}

    def domain_sizes(self) -> tuple[int, ...]:
        return (self.dims[0], self.num_nodes)

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.io_latency_s + self.propagation_s[0], units.BITS_PER_BYTE / self.link_bandwidth_bps

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """The links a node's flows can use: two per dimension of 3 or more nodes, one (+) for a
        dimension of 2 (the shorter way to the one neighbour is always +), none for a dimension of 1."""
        return sum(usable_links(size) for size in self.dims) * self.link_bandwidth_bps

    def bisection_bps(self) -> float | None:
        """The lower half of the node ids is the lower half of the rows (y) when Y is even, or of
        one row when Y = 1: the cut crosses every column's (row's) ring twice, once for Y (X) = 2."""
        width, height = self.dims
        ring, lines = (height, width) if height > 1 else (width, 1)
        if ring % 2:
            return None
        return lines * usable_links(ring) * self.link_bandwidth_bps

    def min_latency_s(self) -> float:
        hops = [propagation for size, propagation in zip(self.dims, self.propagation_s) if size > 1]
        return self.io_latency_s + min(hops, default=0.0)

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        """A row (x) of the torus leaves itself on its nodes' y links only."""
        width, height = self.dims
        if height < 2 or width < 2:
            return ()
        out = width * usable_links(height) * self.link_bandwidth_bps
        return (DomainCut(width, out, out),)

    @cached_property
    def _window_pricer(self) -> WindowPricer:
        return WindowPricer(self)

    @cached_property
    def _capacity(self) -> np.ndarray:
        return np.full(4 * self.num_nodes, self.link_bandwidth_bps)

    def capacity_bps(self) -> np.ndarray:
        return self._capacity

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        width, height = self.dims
        x1, y1 = floor_mod(src_nodes, width), src_nodes // width
        x2, y2 = floor_mod(dst_nodes, width), dst_nodes // width
        forward_x, hops_x = short_way(x2 - x1, width)
        forward_y, hops_y = short_way(y2 - y1, height)
        latency = (self.io_latency_s + hops_x * self.propagation_s[0] + hops_y * self.propagation_s[1]
                   + self.router_latency_s * np.maximum(hops_x + hops_y - 1, 0))
        most_x = int(hops_x.max()) if hops_x.size else 0
        most_y = int(hops_y.max()) if hops_y.size else 0
        if (most_x + most_y) * src_nodes.size <= PADDED_HOP_ENTRIES:
            return Routes(latency, self._padded_hops(x1, y1, x2, forward_x, hops_x, forward_y, hops_y, most_x, most_y))
        loads = self._interval_loads(x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights)
        return Routes(latency, (), fixed_loads=loads)

    def _padded_hops(self, x1, y1, x2, forward_x, hops_x, forward_y, hops_y, most_x, most_y) -> tuple:
        width, height = self.dims
        n = self.num_nodes
        hops = []
        step_x = np.where(forward_x, 1, -1)
        for j in range(most_x):
            node = floor_mod(x1 + step_x * j, width) + width * y1
            hops.append(np.where(hops_x > j, np.where(forward_x, 0, n) + node, -1))
        step_y = np.where(forward_y, 1, -1)
        for j in range(most_y):
            node = x2 + width * floor_mod(y1 + step_y * j, height)
            hops.append(np.where(hops_y > j, np.where(forward_y, 2 * n, 3 * n) + node, -1))
        return tuple(hops)

    def _interval_loads(self, x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights) -> np.ndarray:
        parts = interval_parts(self.dims, x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights)
        flat = [np.zeros(self.num_nodes) if part is None else part.T.ravel() if index >= 2 else part.ravel()
                for index, part in enumerate(parts)]
        return np.concatenate(flat)

    def price_listed(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        """Link loads by interval sums along rows and columns (the generic path handles classes)."""
        if pattern.num_classes:
            return self._price_classes(pattern, layout, placement)
        structured = self._xor_cost(pattern, layout, placement)
        if structured is None:
            structured = shift_cost(self, pattern, layout, placement)
        if structured is not None:
            return structured
        src, dst, weight, _ = expand_listed(pattern, layout, placement)
        if src.size == 0:
            return PatternCost.zero()
        width = self.dims[0]
        x1, y1, x2, y2 = floor_mod(src, width), src // width, floor_mod(dst, width), dst // width
        forward_x, hops_x = short_way(x2 - x1, width)
        forward_y, hops_y = short_way(y2 - y1, self.dims[1])
        latency = (self.io_latency_s + hops_x * self.propagation_s[0] + hops_y * self.propagation_s[1]
                   + self.router_latency_s * np.maximum(hops_x + hops_y - 1, 0))
        most = interval_max(self.dims, x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weight)
        return PatternCost(float(latency.max()), most * units.BITS_PER_BYTE / self.link_bandwidth_bps)

    def _price_classes(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        """Flows too many to route hop by hop carry no per-class figures (`route`): the whole
        pattern is then the window of every class, priced from the class loads that the windows of
        its steps reuse (`torus_windows`); otherwise the generic path, with per-class figures."""
        if listed_pairs_count(pattern, layout) * sum(self.dims) > PADDED_HOP_ENTRIES:
            src, dst, _, _ = expand_listed(pattern, layout, placement)
            width, height = self.dims
            most_x = int(short_way(floor_mod(dst, width) - floor_mod(src, width), width)[1].max(initial=0))
            most_y = int(short_way(dst // width - src // width, height)[1].max(initial=0))
            if (most_x + most_y) * src.size > PADDED_HOP_ENTRIES:
                every = np.array([[0, pattern.num_classes - 1]])
                whole = self._window_pricer.prices(pattern, every, layout, placement)
                if whole is not None:
                    return PatternCost(float(whole[0][0]), float(whole[1][0]))
        return super().price_listed(pattern, layout, placement)

    def price_windows(self, pattern: Pattern, windows: np.ndarray, layout: GroupLayout, placement: Placement
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        return self._window_pricer.prices(pattern, windows, layout, placement)

    def class_floor(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Each class's longest flow, and a floor of its seconds per weight-byte: a link carries at
        least the heaviest flow crossing it (stated only for whole-number weights, whose interval
        sums are exact; 0 otherwise)."""
        if not pattern.num_classes:
            return None
        src, dst, weight, classes = expand_listed(pattern, layout, placement)
        width = self.dims[0]
        _, hops_x = short_way(floor_mod(dst, width) - floor_mod(src, width), width)
        _, hops_y = short_way(dst // width - src // width, self.dims[1])
        latency = (self.io_latency_s + hops_x * self.propagation_s[0] + hops_y * self.propagation_s[1]
                   + self.router_latency_s * np.maximum(hops_x + hops_y - 1, 0))
        class_latency = np.zeros(pattern.num_classes)
        np.maximum.at(class_latency, classes, latency)
        heaviest = np.zeros(pattern.num_classes)
        if np.all(weight == np.floor(weight)) and float(np.sum(weight)) < 2.0 ** 52:
            np.maximum.at(heaviest, classes, np.where(hops_x + hops_y > 0, weight, 0.0))
        return class_latency, heaviest * units.BITS_PER_BYTE / self.link_bandwidth_bps

    def _xor_cost(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost | None:
        """Closed form of a full XOR (RHD, recursive doubling) on whole rows, or None.

        With identity placement and power-of-two group size, stride and row length X, the flows are
        r -> r XOR M (M = m x stride) for every job rank r: along x every row carries the same flows
        x -> x XOR (M mod X), then along y every column the same y -> y XOR (M div X). One row and one
        column give every link load, summed in the order of the listed path (the same floats), and
        the longest flow combines the longest x and y legs.
        """
        structure = getattr(pattern, "structure", None)
        n, stride, width = layout.size, layout.stride, self.dims[0]
        if (structure is None or structure[0] != "xor" or placement.nodes is not None or pattern.multicast
                or n & (n - 1) or stride & (stride - 1) or width & (width - 1)):
            return None
        ranks = layout.job_ranks
        if ranks > width and ranks % width:
            return None
        mask = structure[1] * stride
        weight = float(pattern.weight[0])
        row = np.arange(min(ranks, width), dtype=np.int64)
        column = np.arange(max(ranks // width, 1), dtype=np.int64)
        legs = []
        for positions, moved, ring in ((row, row ^ (mask % width), width), (column, column ^ (mask // width),
                                                                             self.dims[1])):
            forward, hops = short_way(moved - positions, ring)
            most = int(hops.max())
            load = 0.0
            for way in (True, False):
                used = (forward == way) & (hops > 0)
                if used.any():
                    start = positions[used] if way else floor_mod(positions[used] - hops[used] + 1, ring)
                    loads = ring_interval_loads(np.zeros(int(used.sum()), dtype=np.int64), start, hops[used],
                                                 np.full(int(used.sum()), weight), 1, ring)
                    load = max(load, float(loads.max()))
            legs.append((most, load))
        (hops_x, load_x), (hops_y, load_y) = legs
        latency = (self.io_latency_s + hops_x * self.propagation_s[0] + hops_y * self.propagation_s[1]
                   + self.router_latency_s * max(hops_x + hops_y - 1, 0))
        return PatternCost(float(latency), max(load_x, load_y) * units.BITS_PER_BYTE / self.link_bandwidth_bps)

    def price_mesh(self, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost | None:
        flows = listed_pairs_count(mesh, layout)
        if flows > MAX_MESH_FLOWS:
            raise InfeasibleError(f"a direct exchange of {flows} flows on {self.name} would have to be listed "
                                  f"flow by flow (limit {MAX_MESH_FLOWS}); use a ring, torus2d or Bruck schedule")
        return None

