"""What every fabric provides: structure (nodes, domains, placement) and the price of a pattern.

A fabric subclass is a frozen dataclass registered in `ddlsim.core.registry.FABRICS` with a config
schema. The minimum it implements is

- `route(src_nodes, dst_nodes)`: per-flow latency and the shared resources each flow crosses,
- `capacity_bps()`: the capacity of every resource id `route` can return,
- `nominal_alpha_beta()`: a typical (latency, seconds per byte) that algorithms may use to size
  pipeline chunks,

and the base class then prices any `Pairs` pattern over all concurrent groups of a layout. A
fabric may price some patterns in closed form (`price_mesh`: a direct exchange cannot be listed
at scale), round transfer times to its own granularity (`transfer_time_s`: timeslots), charge
circuit setup (`setup_time_s`), annotate a schedule before pricing (`prepare`: transceivers,
wavelengths, timeslots), and place ranks its own way (`place`).

Every fabric also declares its physical capacities, from which `ddlsim.network.bounds` derives
a lower bound no price may undercut: `node_egress_bps` and `node_ingress_bps` (everything one
node, that is one rank, can send or receive at once: all its links and transceivers together),
`bisection_bps` (the capacity across the cut between the lower and the upper half of the node
ids, where the fabric has one), `supports_multicast`, `reduces_in_network` and
`min_latency_s` (the smallest head-to-head latency any step with traffic pays), and
`domain_cuts` (what a whole server, DGX, pod or oversubscribed tier domain can send out of itself).

Capabilities that only some fabrics have are methods here with defaults, overridden where they
exist: `network_cost` (a published energy/cost model), `grid_dims` (a torus's dimensions),
`switch_radix` (BCube-like recursion), `has_ring_plan`/`ring_plan` (TopoOpt's permutations),
`node_bandwidth_key` and `sized_config` (how a sweep sets a node's bandwidth and the fabric's size).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.types import GroupLayout, NetworkCost
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.patterns import Mesh, Pairs, Pattern
from ddlsim.network.placement import Placement, group_hierarchy, job_ranks
from ddlsim.network.pricing import PatternCost, Routes, price_flows
from ddlsim.network.schedule import Schedule

_HIERARCHIES = PROCESS_CACHES.memo("network.hierarchies", maxsize=256)


@dataclass(frozen=True)
class DomainCut:
    """Every aligned block of `size_nodes` node ids, [i size, (i + 1) size), is a domain whose
    traffic to and from the rest of the fabric crosses at most `egress_bps` and `ingress_bps`."""

    size_nodes: int
    egress_bps: float
    ingress_bps: float


class Fabric:
    """Base class of fabrics (subclasses are frozen dataclasses with `name` and `num_nodes`)."""

    name: str
    num_nodes: int

    # -- structure -------------------------------------------------------------------------
    def place(self, num_ranks: int) -> Placement:
        """Greedy placement: ranks fill nodes in order (the fastest domains first)."""
        return Placement.identity(num_ranks, self.num_nodes, self.name)

    def domain_sizes(self) -> tuple[int, ...]:
        """Nested domains in nodes, fastest first (e.g. 8 GPUs per node, 32 per leaf, ...)."""
        return (self.num_nodes,)

    def hierarchy(self, layout: GroupLayout, placement: Placement) -> tuple[int, ...]:
        """Dimensions of one group along the fabric's domains (product = group size)."""
        key = (layout, placement, self.domain_sizes())
        return _HIERARCHIES.get_or_make(key, lambda: group_hierarchy(*key))

    def supports_multicast(self) -> bool:
        """True if a source can send one copy that the fabric replicates to many receivers."""
        return False

    def nominal_alpha_beta(self) -> tuple[float, float]:
        """A typical flow's (latency_s, seconds per byte), for algorithms that size chunks."""
        raise NotImplementedError

    # -- physical capacities (ddlsim.network.bounds) -------------------------------------------
    def node_egress_bps(self) -> float:
        """Most bits per second one node can send at once, over all its links or transceivers."""
        raise NotImplementedError(f"{type(self).__name__} declares no node_egress_bps")

    def node_ingress_bps(self) -> float:
        """Most bits per second one node can receive at once (by default its egress: symmetric links)."""
        return self.node_egress_bps()

    def bisection_bps(self) -> float | None:
        """Capacity in each direction (the larger, if they differ) across the cut between nodes
        [0, num_nodes // 2) and [num_nodes // 2, num_nodes); None when the fabric declares none."""
        return None

    def reduces_in_network(self) -> bool:
        """True if switches can combine (add) flows on the way (SHARP-like); no fabric here does."""
        return False

    def min_latency_s(self) -> float:
        """The smallest head-to-head latency of any step that moves data (0 when not declared)."""
        return 0.0

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        """Domains (nodes of a server, a pod, an oversubscribed tier) whose links to the rest of
        the fabric carry less than their nodes could send: () when none is declared."""
        return ()

    # -- the flow model ----------------------------------------------------------------------
    def capacity_bps(self) -> np.ndarray:
        raise NotImplementedError

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        raise NotImplementedError

    # -- pricing -------------------------------------------------------------------------------
    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        """Latency and seconds per weight-byte of `pattern` run by every group of `layout` at once."""
        if isinstance(pattern, Mesh):
            cost = self.price_mesh(pattern, layout, placement)
            if cost is not None:
                return cost
        return self.price_listed(pattern, layout, placement)

    def price_mesh(self, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost | None:
        """Closed-form price of a mesh, or None to list its pairs."""
        return None

    def price_listed(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        src, dst, weights, classes = expand_listed(pattern, layout, placement)
        routes = self.route(src, dst, weights)
        return price_flows(routes, self.capacity_bps(), weights, classes=classes,
                           num_classes=pattern.num_classes, sources=src,
                           multicast=pattern.multicast and self.supports_multicast())

    def class_floor(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Per class of `pattern`, its latency alone (the largest over its flows, as `price` gives
        it) and a floor of its seconds per weight-byte, when the fabric can tell them without
        pricing loads (`best` skips candidates by them); None when it cannot."""
        return None

    def pipeline_floor(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                       ) -> tuple[np.ndarray, np.ndarray] | None:
        """`class_floor` for a step whose windows span several classes (a pipeline): such a step is
        costly to price, so a fabric may spend more here on a tighter floor of each class's seconds
        per weight-byte (the loads of its ports, `raise_to_port_loads`). The default is `class_floor`."""
        return self.class_floor(pattern, layout, placement)

    def price_windows(self, pattern: Pattern, windows: np.ndarray, layout: GroupLayout, placement: Placement
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """(latency_s, seconds per weight-byte) of each window [first, last] of classes of
        `pattern` (rows of `windows`), each equal to the price of its pairs alone; None to
        price every window by its own pattern (the default)."""
        return None

    def transfer_time_s(self, step_bytes: np.ndarray, s_per_byte: np.ndarray | float) -> np.ndarray:
        """Head-to-tail time of steps carrying `step_bytes` per weight unit (linear by default;
        a slotted fabric rounds up to whole timeslots here)."""
        return np.asarray(step_bytes, dtype=np.float64) * s_per_byte

    def setup_time_s(self, previous_circuit: Hashable, circuit: Hashable) -> float:
        """Circuit setup before a step (0 for packet-switched fabrics)."""
        return 0.0

    def prepare(self, schedule: Schedule, layout: GroupLayout, placement: Placement) -> Schedule:
        """Hook: annotate or check a schedule before pricing (default: unchanged)."""
        return schedule

    def describe(self) -> dict[str, Any]:
        """Result-row fields that identify this fabric."""
        return {"fabric": self.name, "fabric_nodes": self.num_nodes}

    # -- capabilities (callers ask these, never getattr; tests/network/test_fabric_capabilities.py) --
    def network_cost(self, num_ranks: int) -> NetworkCost | None:
        """Equipment cost and power of the network a job of `num_ranks` ranks uses, from the
        fabric's published energy/cost model; None when no published model covers the fabric."""
        return None

    def grid_dims(self) -> tuple[int, ...]:
        """Sizes of the grid the nodes sit on (a torus's (x, y)); () when the nodes form no grid."""
        return ()

    def switch_radix(self) -> int | None:
        """Ports r of the switches of a recursive (BCube-like) fabric of r^L nodes, where
        L = len(domain_sizes()); None for any other fabric."""
        return None

    def has_ring_plan(self) -> bool:
        """True when `ring_plan` gives ring permutations chosen by the fabric (TopoOpt)."""
        return False

    def ring_plan(self, layout: GroupLayout) -> tuple[int, tuple[int, ...]]:
        """(GPUs per server in each group, ring rules) of the fabric's own rings for `layout`."""
        raise NotImplementedError(f"{type(self).__name__} chooses no ring permutations (has_ring_plan() is False)")

    @classmethod
    def node_bandwidth_key(cls) -> str | None:
        """The config key that sets the total bandwidth one node (CU, GPU) has into the fabric,
        for sweeps over it (task=hybrid); None when no single key does."""
        return None

    @classmethod
    def sized_config(cls, params: dict[str, Any], num_nodes: int) -> dict[str, Any]:
        """The fabric's config resized to `num_nodes` nodes the way the fabric grows (a copy);
        unchanged by default, for fabrics whose size a job does not set."""
        return dict(params)


def expand_listed(pattern: Pattern, layout: GroupLayout, placement: Placement
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The pattern's pairs in every group of the layout, as fabric nodes: (src, dst, weight, class)."""
    listed = pattern.pairs()
    if layout.num_groups == 1 and layout.stride == 1 and placement.nodes is None:
        return listed.src, listed.dst, listed.weight, listed.classes
    groups = layout.num_groups
    src = placement.node_of(job_ranks(layout, listed.src).ravel())
    dst = placement.node_of(job_ranks(layout, listed.dst).ravel())
    classes = None if listed.classes is None else np.tile(listed.classes, groups)
    return src, dst, np.tile(listed.weight, groups), classes


def listed_pairs_count(pattern: Pattern, layout: GroupLayout) -> int:
    """Flows a pattern lists over the whole job."""
    return pattern.num_pairs() * layout.num_groups


__all__ = ["DomainCut", "Fabric", "Mesh", "Pairs", "PatternCost", "Placement", "Routes", "expand_listed",
           "listed_pairs_count"]


def raise_to_port_loads(class_time: np.ndarray, ports: np.ndarray, classes: np.ndarray, weight: np.ndarray,
                        num_ports: int, capacity_bps: float) -> None:
    """Raise each class's floor in `class_time` (seconds per weight-byte) to the load its flows put
    on each port that no other class uses (flow f through port ports[f] of capacity_bps): a window
    of classes loads such a port with at least that, whatever else it adds. Ports several classes
    share are left out, which keeps the floor below every window's price."""
    port_class = np.zeros(num_ports, dtype=np.int64)
    port_class[ports] = classes
    mixed = np.zeros(num_ports, dtype=bool)
    mixed[ports[port_class[ports] != classes]] = True
    loads = np.bincount(ports, weights=weight, minlength=num_ports)
    loads[mixed] = 0.0
    np.maximum.at(class_time, port_class, loads * BITS_PER_BYTE / capacity_bps)
