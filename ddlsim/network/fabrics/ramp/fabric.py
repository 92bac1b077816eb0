"""RAMP as a ddlsim fabric: placement, step pricing through the transcoder, cost and power.

Price of a step (RAMP 6.2, 7.4-7.5):
- latency (head-to-head): propagation (1.3 us at maximum scale) plus node I/O (100 ns). The
  sub-nanosecond reconfiguration is the guard time inside every slot, so it is not added again.
- transfer (head-to-tail): the transcoder gives every transfer a number of transceiver groups
  and the step a number of rounds (`transcoder.plan_step`); a group carries b x the slot payload
  (950 B per 20 ns slot at 400 Gbps) and transfer times are rounded up to whole slots.

Groups per transfer follow `transceiver_policy`: ``paper`` uses Eq. 3 (1 + the additional
groups) when a node has several peers and all x groups for a one-to-one step (6.2.2, the
first step-4 formulation); ``greedy`` tries x / peers for every step. Either way, the count is
lowered until the transcoder finds no contention, and the base group of Eq. 2 is replaced by
(g_dst + j_src) mod x when that needs fewer rounds (Eq. 2 collides at receivers when members
differ in both group and rack and x is even). Multicast steps (the broadcast tree) use SOA
gating: one transceiver tuned to a wavelength reaches every group, so a source needs one
transceiver group per distinct destination wavelength.

The price depends only on which nodes talk to which, so the compact and the explicit view of
a schedule get the same price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from ddlsim.core import units
from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout, NetworkCost
from ddlsim.network.fabrics.base import Fabric, listed_pairs_count
from ddlsim.network.fabrics.ramp import transcoder
from ddlsim.network.fabrics.ramp.cost import FIXED_RECEIVER_POWER_W, TUNABLE_RECEIVER_POWER_W, RampCostModel
from ddlsim.network.fabrics.ramp.mesh import large_mesh_plan
from ddlsim.network.fabrics.ramp.multicast import class_multicast_load, multicast_plan
from ddlsim.network.fabrics.ramp.placement import PLACEMENTS, place_job
from ddlsim.network.fabrics.ramp.plan_choice import fastest_plan
from ddlsim.network.fabrics.ramp.topology import RampDims, table2_figures
from ddlsim.network.int_arrays import all_distinct
from ddlsim.network.patterns import MAX_LISTED_PAIRS, Mesh, Pattern, content_key
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost

POLICIES = ("paper", "greedy")
# "transcoder": a step's transfers get the transceiver groups and rounds the transcoder finds
# without subnet-wavelength contention. "ideal": only the nodes limit (x groups shared by a
# node's peers), as the paper's estimator assumes ("ideal switching", RAMP 7.5).
SWITCHING = ("transcoder", "ideal")
# Owned by the process: a plan or a price depends on its key alone, and sweeps over line rates
# (or latencies, or costs) on one structure share them.
_PLANS = PROCESS_CACHES.memo("network.ramp_plans", maxsize=256)
_PRICES = PROCESS_CACHES.memo("network.ramp_prices", maxsize=256)


@dataclass
class RampConfig:
    """RAMP (Ottino et al.): x groups of J racks of Lambda nodes, x transceiver groups per node."""

    name: str = "ramp"
    x: int = 32
    racks: int = 32
    wavelengths: int = 64
    transceivers_per_group: int = 1
    line_rate: str = "400Gbps"
    subnet: str = "broadcast_select"
    propagation: str = "1.3us"
    io_latency: str = "100ns"
    slot: str = "20ns"
    slot_overhead: float = 0.05
    transceiver_policy: str = "paper"
    transceiver_cost_usd: float = 600.0
    coupler_cost_usd: float = 3000.0
    transceiver_power_w: float | None = None
    switching: str = "transcoder"
    placement: str = "contention_aware"


@FABRICS.register("ramp", RampConfig, summary="RAMP optical network: 65,536 nodes x 12.8 Tbps, ns reconfiguration")
@dataclass(frozen=True)
class RampFabric(Fabric):
    """RAMP: flat, single-hop, all-to-all optical circuit switching with ns reconfiguration."""

    dims: RampDims
    subnet: str = "broadcast_select"
    propagation_s: float = 1.3e-6
    io_latency_s: float = 100e-9
    slot_s: float = 20e-9
    slot_overhead: float = 0.05
    transceiver_policy: str = "paper"
    cost_model: RampCostModel = RampCostModel()
    name: str = "ramp"
    switching: str = "transcoder"
    placement: str = "contention_aware"

    @classmethod
    def from_config(cls, config: RampConfig) -> RampFabric:
        dims = RampDims(config.x, config.racks, config.wavelengths, config.transceivers_per_group,
                        units.parse_bandwidth_bps(config.line_rate, "line_rate"))
        transcoder.check_subnet_kind(config.subnet)
        if config.transceiver_policy not in POLICIES:
            raise ConfigError("transceiver_policy", config.transceiver_policy, f"must be one of {', '.join(POLICIES)}")
        if config.switching not in SWITCHING:
            raise ConfigError("switching", config.switching, f"must be one of {', '.join(SWITCHING)}")
        if config.placement not in PLACEMENTS:
            raise ConfigError("placement", config.placement, f"must be one of {', '.join(PLACEMENTS)}")
        if not 0 <= config.slot_overhead < 1:
            raise ConfigError("slot_overhead", config.slot_overhead, "must be in [0, 1)")
        power = config.transceiver_power_w
        if power is None:
            power = FIXED_RECEIVER_POWER_W if config.subnet == "broadcast_select" else TUNABLE_RECEIVER_POWER_W
        costs = RampCostModel(config.transceiver_cost_usd, config.coupler_cost_usd, power)
        return cls(dims, config.subnet, units.parse_time_s(config.propagation, "propagation"),
                   units.parse_time_s(config.io_latency, "io_latency"),
                   units.parse_time_s(config.slot, "slot", allow_zero=False), config.slot_overhead,
                   config.transceiver_policy, costs, config.name, config.switching, config.placement)

    # -- structure ---------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:  # type: ignore[override]
        return self.dims.num_nodes

    def needs_box(self, num_ranks: int) -> bool:
        """True when this fabric cannot place a job of `num_ranks` alone: under contention_aware
        its box is the one RAMP-x runs fastest in, which the collectives choose and hand to
        `place_in_box` (`ddlsim.network.placing.place_ranks`)."""
        return self.placement == "contention_aware" and num_ranks <= self.num_nodes

    def place(self, num_ranks: int) -> Placement:
        """Placement for the fewest RAMP-x steps (RAMP 7.4); contention_aware is handed its box."""
        if self.needs_box(num_ranks):
            raise ConfigError("placement", self.placement,
                              "places a job in the box RAMP-x runs fastest in, which the fabric does not choose: "
                              "use ddlsim.network.placing.place_ranks(fabric, num_ranks), or place_in_box")
        return self.place_in_box(num_ranks, None)

    def place_in_box(self, num_ranks: int, box: tuple[int, int, int] | None) -> Placement:
        """The job in the (x', J', Lambda') `box` (None: `placement.job_dims`'s box, or nodes in
        order when RAMP-x has none), ranks ordered inside it as `placement` says."""
        return Placement(num_ranks, place_job(num_ranks, self.dims, self.placement, box),
                         key=("ramp", num_ranks, self.placement, self.switching, box))

    def supports_multicast(self) -> bool:
        return True

    @property
    def payload_bytes(self) -> float:
        """Bytes one transceiver carries per slot (950 B at 400 Gbps, 20 ns, 5% guard)."""
        return transcoder.payload_bytes_per_slot(self.dims.line_rate_bps, self.slot_s, self.slot_overhead)

    @property
    def group_rate_bytes_per_s(self) -> float:
        """Payload rate of one transceiver group (b transceivers)."""
        return self.dims.b * self.payload_bytes / self.slot_s

    @property
    def step_latency_s(self) -> float:
        return self.propagation_s + self.io_latency_s

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.step_latency_s, 1.0 / (self.dims.x * self.group_rate_bytes_per_s)

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """x transceiver groups of b transceivers at the line rate (12.8 Tbps at x = 32, 400 Gbps)."""
        return self.dims.node_capacity_bps

    def bisection_bps(self) -> float | None:
        """Node ids are group-major, so with x even the lower half of the ids is the lower half of
        the communication groups. Every flow across uses a subnet (g_src, g_dst, t) from one half
        to the other: (x/2)^2 b x of them, each carrying one signal per wavelength in a
        broadcast-and-select subnet (AWGR subnets carry more than the nodes can send)."""
        dims = self.dims
        if dims.x % 2:
            return None
        nodes = dims.num_nodes // 2 * dims.node_capacity_bps
        if self.subnet != "broadcast_select":
            return nodes
        subnets = (dims.x // 2) ** 2 * dims.b * dims.x
        return min(nodes, subnets * dims.wavelengths * dims.line_rate_bps)

    def min_latency_s(self) -> float:
        return self.step_latency_s

    def describe(self) -> dict[str, Any]:
        return {"fabric": self.name, "fabric_nodes": self.num_nodes, "ramp_x": self.dims.x,
                "ramp_racks": self.dims.racks, "ramp_wavelengths": self.dims.wavelengths,
                "node_capacity_bps": self.dims.node_capacity_bps, "subnet": self.subnet}

    def table2(self) -> dict[str, float]:
        return table2_figures(self.dims)

    def network_cost(self, num_ranks: int) -> NetworkCost:
        return self.cost_model.network_cost(self.dims, num_ranks)

    # -- pricing -------------------------------------------------------------------------------
    @cached_property
    def structure(self) -> RampFabric:
        """The fabric as a cache key for plans and prices: itself, with the fields that only scale a
        price (line rate: a price is slots / rate) or shift it (latencies), and those that never touch
        it (costs, name), set to fixed values. Every other field, present or future, is in the key."""
        return replace(self, dims=replace(self.dims, line_rate_bps=1.0), propagation_s=0.0, io_latency_s=0.0,
                       cost_model=RampCostModel(), name="ramp")

    def transfers(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src node, dst node, weight) of every transfer of `pattern` in every group of `layout`."""
        listed = pattern.pairs()
        if layout.num_groups == 1 and layout.stride == 1:  # the job ranks are the positions
            return placement.node_of(listed.src), placement.node_of(listed.dst), listed.weight
        src = placement.node_of(job_ranks(layout, listed.src).ravel())
        dst = placement.node_of(job_ranks(layout, listed.dst).ravel())
        return src, dst, np.tile(listed.weight, layout.num_groups)

    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        """Cached per structure: a price found at one line rate serves every other (it scales as 1 / B)."""
        key = (pattern.full_key, layout, placement.key, self.structure)
        cached = _PRICES.get(key)
        if cached is None:
            cost = self._price(pattern, layout, placement)
            rate = self.group_rate_bytes_per_s
            cached = (bool(cost.latency_s > 0), cost.s_per_unit * rate,
                      None if cost.class_latency_s is None else cost.class_latency_s > 0,
                      None if cost.class_s_per_unit is None else cost.class_s_per_unit * rate, cost.disjoint)
            _PRICES.put(key, cached)
        has_latency, slots, class_active, class_slots, disjoint = cached
        rate = self.group_rate_bytes_per_s
        latency = self.step_latency_s if has_latency else 0.0
        if class_active is None:
            return PatternCost(latency, slots / rate)
        return PatternCost(latency, slots / rate, np.where(class_active, self.step_latency_s, 0.0),
                           class_slots / rate, disjoint)

    def _price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        if isinstance(pattern, Mesh) and (listed_pairs_count(pattern, layout) > MAX_LISTED_PAIRS
                                          or self._mesh_multiplexed(pattern)):
            return self._price_large_mesh(pattern, layout, placement)
        src, dst, weight = self.transfers(pattern, layout, placement)
        if pattern.num_classes:
            return self._price_classes(pattern, src, dst, weight, layout.num_groups)
        active = weight > 0
        if not np.any(active):
            return PatternCost(self.step_latency_s if src.size else 0.0, 0.0)
        src, dst, weight = src[active], dst[active], weight[active]
        if pattern.multicast:
            per_pair, rounds = multicast_plan(self.dims, self.subnet, src, dst)
            s_per_unit = rounds * float(np.max(weight / per_pair)) / self.group_rate_bytes_per_s
        else:
            per_pair, rounds = self.step_plan(src, dst)
            s_per_unit = rounds * float(weight.max()) / (per_pair * self.group_rate_bytes_per_s)
        return PatternCost(self.step_latency_s, s_per_unit)

    def _mesh_multiplexed(self, mesh: Mesh) -> bool:
        """True when a member has more peers than transceiver groups: the transcoder then
        time-multiplexes the step in ceil(load / x) rounds without building an assignment
        (`transcoder.plan_step_rules`), which the closed form counts without listing a transfer
        (equal on every mesh of tests/network/ramp/test_ramp_large_mesh.py)."""
        return self.switching != "ideal" and int(mesh.block_sizes().max(initial=0)) - 1 > self.dims.x

    def _price_large_mesh(self, mesh: Mesh, layout: GroupLayout, placement: Placement) -> PatternCost:
        """A direct exchange too large to list: ceil(load / x) rounds at one transceiver group per
        transfer, the load (peers per node, transfers per subnet wavelength) counted in closed
        form (`mesh.large_mesh_plan`) as the transcoder would count it."""
        per_pair, rounds = large_mesh_plan(self.dims, self.subnet, mesh, layout, placement)
        return PatternCost(self.step_latency_s, rounds * mesh.weight / (per_pair * self.group_rate_bytes_per_s))

    def _price_classes(self, pattern: Pattern, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                       groups: int) -> PatternCost:
        """Pipelined patterns (classes run in windows): each class priced alone with the node bound,
        x // (busiest node's transfers in the class) groups per transfer, as if classes were disjoint.

        An approximation: the explicit view prices a step's active classes together, through the
        transcoder, and charges classes that share a subnet wavelength against each other, so the
        two views of generic pipelined algorithms on RAMP can differ (docs/ramp.md). Pricing every
        window through the transcoder instead takes minutes at 65,536 ranks."""
        classes = np.tile(pattern.pairs().classes, groups)
        count = pattern.num_classes
        busiest = np.zeros(count, dtype=np.int64)
        for nodes in (src, dst):
            keys, loads = np.unique(classes * self.num_nodes + nodes, return_counts=True)
            np.maximum.at(busiest, keys // self.num_nodes, loads)
        heaviest = np.zeros(count)
        np.maximum.at(heaviest, classes, weight)
        if pattern.multicast:  # one channel per destination wavelength, not per destination
            busiest = class_multicast_load(self.dims, self.subnet, src, dst, classes, count)
        per_pair = np.maximum(1, self.dims.x // np.maximum(busiest, 1))
        rounds = np.where(busiest > self.dims.x, np.ceil(busiest / self.dims.x), 1)
        class_s = rounds * heaviest / (per_pair * self.group_rate_bytes_per_s)
        class_latency = np.where(heaviest > 0, self.step_latency_s, 0.0)
        return PatternCost(float(class_latency.max()), float(class_s.max()), class_latency, class_s, True)

    def transfer_time_s(self, step_bytes: np.ndarray, s_per_byte: np.ndarray | float) -> np.ndarray:
        """Whole slots: a transfer occupies its slots even when the last one is not full."""
        exact = np.asarray(step_bytes, dtype=np.float64) * s_per_byte
        return np.ceil(exact / self.slot_s - 1e-9) * self.slot_s

    def step_plan(self, src: np.ndarray, dst: np.ndarray) -> tuple[int, int]:
        """(transceiver groups per transfer, rounds) the transcoder settles for these transfers."""
        if src.size == 0:
            return self.dims.x, 1
        if self.switching == "ideal":
            return node_bound_plan(self.dims.x, src, dst)
        # The plan depends on the structure, not on the line rate; node ids of 32 bits halve the bytes to digest.
        narrow = np.int32 if self.num_nodes <= np.iinfo(np.int32).max else np.int64
        key = (self.structure, content_key(src.astype(narrow), dst.astype(narrow)))
        cached = _PLANS.get(key)
        if cached is not None:
            return cached
        peers = int(np.bincount(src).max())
        one_to_one = peers == 1 and int(np.bincount(dst).max()) == 1
        if one_to_one and self._wavelengths_disjoint(src, dst):
            plan_found = (self.dims.x, 1)
        else:
            use_all = one_to_one or self.transceiver_policy == "greedy"
            plan = fastest_plan(self.dims, src, dst, members=peers + 1, use_all=use_all,
                                rules=(*transcoder.BASE_RULES, *transcoder.NUMBERED_RULES), kind=self.subnet)
            plan_found = (plan.per_pair, plan.rounds)
        return _PLANS.put(key, plan_found)

    def _wavelengths_disjoint(self, src: np.ndarray, dst: np.ndarray) -> bool:
        """For one-to-one transfers: True when no two share a subnet wavelength. Every transfer then
        gets all x transceiver groups (the transcoder's answer, found directly)."""
        gs, js, ls = self.dims.coords(src)
        gd, jd, ld = self.dims.coords(dst)
        pair = (gs * self.dims.x + gd) * self.dims.wavelengths
        if self.subnet == "route_switch":  # one source rack per crossbar input and output
            keys = [(pair + ld) * self.dims.racks + js, (pair + ld) * self.dims.racks + jd]
        elif self.subnet == "route_broadcast":
            keys = [(pair + ld) * self.dims.wavelengths + (ld - ls) % self.dims.wavelengths]
        else:
            keys = [pair + ld]
        return all(all_distinct(key) for key in keys)


def node_bound_plan(x: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, int]:
    """(groups per transfer, rounds) when only the nodes limit: the busiest node's x transceiver
    groups shared by its transfers, in ceil(transfers / x) rounds."""
    busiest = max(int(np.bincount(src).max()), int(np.bincount(dst).max()))
    return max(1, x // busiest), max(1, math.ceil(busiest / x))


def rampx_dims_of(fabric: Fabric) -> RampDims | None:
    """The RAMP dimensions of a fabric, or None when it is not RAMP."""
    return fabric.dims if isinstance(fabric, RampFabric) else None


def slots_for(fabric: RampFabric, size_bytes: float, groups: int) -> int:
    """Slots one transfer of `size_bytes` needs over `groups` transceiver groups."""
    return math.ceil(size_bytes / (groups * fabric.dims.b * fabric.payload_bytes)) if size_bytes > 0 else 0
