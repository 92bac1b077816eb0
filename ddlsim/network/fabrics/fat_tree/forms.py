"""Closed forms for the fat-tree (`fabric.FatTree`, read through `FatTreeShape`): what its
generic flow model would give, computed without listing every flow. The golden tests compare each
with the listed pairs.

- `mesh_cost`: a direct exchange inside blocks, from how many block mates share each domain;
- `structured_cost`: a full XOR or cyclic shift over aligned power-of-two blocks (RHD, Bruck, rings);
- `class_costs`: per-class costs of a one-to-one pattern with classes (pipelined ring phases);
- `class_floor`: per-class floors of any pattern with classes, for `best`'s pruning.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ddlsim.core import units
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.base import expand_listed, raise_to_port_loads
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost


class FatTreeShape(Protocol):
    """What these closed forms read of a fat-tree (`ddlsim.network.fabrics.fat_tree.fabric.FatTree`)."""

    num_nodes: int
    gpus_per_node: int
    node_bandwidth_bps: float
    nic_bandwidth_bps: float
    tier_sizes: tuple[int, ...]
    oversubscription: tuple[float, ...]

    @property
    def level_sizes(self) -> tuple[int, ...]: ...

    @property
    def level_latency_s(self) -> np.ndarray: ...

    def domain_sizes(self) -> tuple[int, ...]: ...

    def common_level(self, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> np.ndarray: ...


def class_costs(tree: FatTreeShape, pattern: Pattern, layout: GroupLayout, placement: Placement
                ) -> PatternCost | None:
    """Per-class costs of a one-to-one pattern (each GPU link carries one flow); None when two
    classes share a domain's uplinks, which the generic path then handles."""
    src, dst, weight, classes = expand_listed(pattern, layout, placement)
    count = pattern.num_classes
    level = tree.common_level(src, dst)
    class_latency, class_time, flow_time = _flow_classes(tree, level, weight, classes, count)
    overall = float(flow_time.max()) if flow_time.size else 0.0
    for tier, (size, ratio) in enumerate(zip(tree.tier_sizes[:-1], tree.oversubscription)):
        crossing = level > tier + 1
        if not crossing.any():
            break
        crossing_classes, crossing_weight = classes[crossing], weight[crossing]
        for nodes in (src[crossing], dst[crossing]):
            domain = nodes // size
            low = np.full(-(-tree.num_nodes // size), count)
            high = np.full(low.size, -1)
            np.minimum.at(low, domain, crossing_classes)
            np.maximum.at(high, domain, crossing_classes)
            touched = high >= 0
            if np.any(low[touched] != high[touched]):
                return None
            times = (np.bincount(domain, crossing_weight, minlength=low.size) * units.BITS_PER_BYTE * ratio
                     / (size * tree.nic_bandwidth_bps))
            overall = max(overall, float(times.max()))
            np.maximum.at(class_time, high[touched], times[touched])
    return PatternCost(float(class_latency.max()), overall, class_latency, class_time, True)


def class_floor(tree: FatTreeShape, pattern: Pattern, layout: GroupLayout, placement: Placement,
                multicast: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each class's latency alone and a floor of its seconds per weight-byte: its heaviest flow,
    and the load of each GPU port (NVLink inside a node, the NIC otherwise) that flows of this
    class alone leave or enter by. A window of classes loads a port with at least what one of its
    classes does, and a multicast source (`multicast`) sends each copy once, so its egress is
    counted by its heaviest flow only."""
    src, dst, weight, classes = expand_listed(pattern, layout, placement)
    count = pattern.num_classes
    level = tree.common_level(src, dst)
    class_latency, class_time, _ = _flow_classes(tree, level, weight, classes, count)
    if src.size and not getattr(pattern, "one_to_one", False):  # one flow per port: flow_time is its load
        inside = level == 0
        for nodes in (dst,) if multicast else (dst, src):
            for kind, port_bps in ((inside, tree.node_bandwidth_bps), (~inside, tree.nic_bandwidth_bps)):
                if kind.any():
                    raise_to_port_loads(class_time, nodes[kind], classes[kind], weight[kind], tree.num_nodes, port_bps)
    return class_latency, class_time


def _flow_classes(tree: FatTreeShape, level: np.ndarray, weight: np.ndarray, classes: np.ndarray, count: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per class its longest flow's latency and its heaviest flow's time through its GPU port, and
    each flow's time there."""
    class_latency = np.zeros(count)
    np.maximum.at(class_latency, classes, tree.level_latency_s[level])
    flow_time = weight * units.BITS_PER_BYTE / np.where(level == 0, tree.node_bandwidth_bps,
                                                        tree.nic_bandwidth_bps)
    class_time = np.zeros(count)
    np.maximum.at(class_time, classes, flow_time)
    return class_latency, class_time, flow_time


def structured_cost(tree: FatTreeShape, pattern: Pattern, layout: GroupLayout, placement: Placement
                    ) -> PatternCost | None:
    """Closed form of a full XOR or cyclic shift over aligned power-of-two blocks (RHD, Bruck, rings).

    With identity placement and a power-of-two group size and stride, position p XOR m is job rank
    r XOR (m s), and a cyclic shift by d is a cyclic shift by d s inside blocks of B = n s ranks.
    Every flow of an XOR crosses the same levels; a shift moves min(D, delta, B - delta) members
    out of every domain of D < B GPUs.
    """
    structure = getattr(pattern, "structure", None)
    n, stride = layout.size, layout.stride
    if (structure is None or placement.nodes is not None or n & (n - 1) or stride & (stride - 1)
            or any(size & (size - 1) for size in tree.domain_sizes())):
        return None
    kind, amount = structure
    weight = float(pattern.weight[0]) if pattern.weight.size else 0.0
    unit = weight * units.BITS_PER_BYTE
    block = n * stride
    if kind == "xor":
        delta = amount * stride
        level = sum(delta >= size for size in tree.level_sizes)
        intra, inter = level == 0, level > 0
        leaving = [min(size, layout.job_ranks) if delta >= size else 0 for size in tree.tier_sizes[:-1]]
    elif kind == "shift":
        delta = (amount % n) * stride
        level = sum(size < block for size in tree.level_sizes)
        near = min(delta, block - delta)
        intra = tree.gpus_per_node >= block or near < tree.gpus_per_node
        inter = tree.gpus_per_node < block
        leaving = [min(size, near) if size < block else 0 for size in tree.tier_sizes[:-1]]
    else:
        return None
    times = [unit / tree.node_bandwidth_bps if intra else 0.0, unit / tree.nic_bandwidth_bps if inter else 0.0]
    for size, ratio, count in zip(tree.tier_sizes[:-1], tree.oversubscription, leaving):
        times.append(count * unit * ratio / (size * tree.nic_bandwidth_bps))
    return PatternCost(float(tree.level_latency_s[level]), float(max(times)))


def mesh_cost(tree: FatTreeShape, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost:
    members = np.flatnonzero(mesh.blocks >= 0)
    if members.size == 0:
        return PatternCost.zero()
    nodes = placement.node_of(job_ranks(layout, members).ravel())
    num_blocks = int(mesh.blocks.max()) + 1
    block = (np.arange(layout.num_groups)[:, None] * num_blocks + mesh.blocks[members][None, :]).ravel()
    order = np.lexsort((nodes, block))
    nodes, block = nodes[order], block[order]
    mates = np.bincount(block)[block]
    active = mates > 1
    if not np.any(active):
        return PatternCost.zero()
    nodes, block, mates = nodes[active], block[active], mates[active]
    within = [_run_lengths(block, nodes // size) for size in tree.domain_sizes()]
    unit = mesh.weight * units.BITS_PER_BYTE
    times = [np.max(within[0] - 1) * unit / tree.node_bandwidth_bps,
             np.max(mates - within[0]) * unit / tree.nic_bandwidth_bps]
    for tier, (size, ratio) in enumerate(zip(tree.tier_sizes[:-1], tree.oversubscription)):
        leaving = np.bincount(nodes // size, weights=mates - within[tier + 1])
        times.append(leaving.max() * unit * ratio / (size * tree.nic_bandwidth_bps))
    top_level = next(level for level, counts in enumerate(within) if np.all(counts == mates))
    return PatternCost(float(tree.level_latency_s[top_level]), float(max(times)))


def _run_lengths(block: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """For rows sorted by (block, domain): how many rows share each row's (block, domain)."""
    change = np.ones(block.size, dtype=bool)
    change[1:] = (block[1:] != block[:-1]) | (domain[1:] != domain[:-1])
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, block.size))
    return lengths[np.cumsum(change) - 1]
