"""The estimator: walk a schedule, ask the fabric to price each step, add the local work.

    time_s = latency_s + transfer_s + compute_s
    latency_s  = sum over steps and repetitions of the step's head-to-head latency (+ circuit setup)
    transfer_s = sum of the step's bytes per weight unit x the fabric's seconds per weight-byte
    compute_s  = sum of the roofline time of each step's x-to-1 reductions and local copies

A compact step's pattern is priced once (cached per pattern, layout and placement) and reused
for its repetitions; windows of pattern classes take the maximum over the active classes.
`price_explicit` prices the explicit view step by step with no caching and no windows; both
must agree, which the test suite checks.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.caches import Memo
from ddlsim.core.types import GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.patterns import Mesh, Pairs, Pattern
from ddlsim.network.placement import Placement
from ddlsim.network.pricing import PatternCost, window_max
from ddlsim.network.reduction import ReductionModel
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Schedule

# Callers that give up on a candidate above the best price so far allow this relative margin, so
# that rounding never drops one that ties with the best.
PRUNE_MARGIN = 1e-9


@dataclass(frozen=True)
class Breakdown:
    latency_s: float
    transfer_s: float
    compute_s: float
    num_steps: int

    @property
    def time_s(self) -> float:
        return self.latency_s + self.transfer_s + self.compute_s


class StepPricer:
    """Prices patterns on one fabric, with a cache of its own keyed by (pattern, layout, placement)."""

    def __init__(self, fabric: Fabric, cache_size: int = 512) -> None:
        self.fabric = fabric
        self._cache = Memo("estimator.step_prices", cache_size)
        # Size-independent figures of cached steps and schedules (`ddlsim.network.selection`).
        self.memo = Memo("estimator.step_figures", 8 * cache_size)

    def cost(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        key = (pattern.full_key, layout, placement.key)
        cost = self._cache.get(key)
        if cost is None:
            cost = self._cache.put(key, self.fabric.price(pattern, layout, placement))
        return cost

    def windowed(self, step: CompactStep, layout: GroupLayout, placement: Placement, *,
                 step_bytes: np.ndarray | None = None, budget_s: float | None = None
                 ) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-repetition (latency_s, seconds per weight-byte) of a step with class windows.

        One class per window (tree levels): each class is priced alone, which touches every pair
        once in all. Wider windows (pipelines) use the per-class costs when classes share no
        resource, and otherwise price each distinct window. With `budget_s` (and the step's
        `step_bytes` per repetition), windows are priced in the order of the repetitions and
        None comes back (nothing cached) as soon as the latency and transfer of the repetitions
        priced so far exceed it.
        """
        key = ("windows", step, layout, placement.key)  # a step is hashed by identity
        cached = self._cache.get(key)
        if cached is None:
            cached = self._windowed(step, layout, placement, step_bytes, budget_s)
            if cached is None:
                return None
            self._cache.put(key, cached)
        return cached

    def step_floor_s(self, step: CompactStep, layout: GroupLayout, placement: Placement, size_bytes: int, *,
                     node_bytes: bool = True) -> float:
        """A floor of a communication step's latency and transfer over its repetitions: for a step
        that surely carries traffic, the fabric's minimum latency per repetition and (with
        `node_bytes`) the busiest node's bytes over its egress (ingress) capacity, which no
        fabric beats (`ddlsim.network.bounds`); for a windowed step each repetition's floor from
        its classes (`Fabric.class_floor`, or for a pipeline, whose windows span several classes,
        `Fabric.pipeline_floor`)."""
        key = ("moves data", step)
        moving = self.memo.get(key)
        if moving is None:
            moving = self.memo.put(key, moves_data(step))
        if moving:
            latency_s = step.repeat * self.fabric.min_latency_s()
            if not node_bytes or not size_bytes:
                return latency_s
            return latency_s + float(np.sum(self.fabric.transfer_time_s(step.fractions() * size_bytes,
                                                                        self.node_s_per_unit(step))))
        if step.windows is None:
            return 0.0
        return float(np.sum(self._window_floor(step, layout, placement, step.fractions() * size_bytes)))

    def sent_weight(self, step: CompactStep) -> float:
        """`sent_weight` of a step's pattern, cached (a step is hashed by identity; schedules are cached)."""
        key = ("sent weight", step)
        sent = self.memo.get(key)
        if sent is None:
            sent = self.memo.put(key, sent_weight(step.pattern, self.fabric.supports_multicast()))
        return sent

    def node_s_per_unit(self, step: CompactStep) -> float:
        """Seconds per weight-byte of one repetition that the busiest node's egress or ingress
        alone takes (`sent_weight`, `received_weight`)."""
        key = ("received weight", step)
        received = self.memo.get(key)
        if received is None:
            received = self.memo.put(key, received_weight(step.pattern))
        return max(self.sent_weight(step) * BITS_PER_BYTE / self.fabric.node_egress_bps(),
                   received * BITS_PER_BYTE / self.fabric.node_ingress_bps())

    def _window_floor(self, step: CompactStep, layout: GroupLayout, placement: Placement,
                      step_bytes: np.ndarray) -> np.ndarray:
        """Each repetition's latency and transfer floor from its classes' (zeros when the fabric cannot tell)."""
        key = ("window floor", step, layout, placement.key)  # a step is hashed by identity
        floors = self.memo.get(key)
        if floors is None:
            low, high = step.windows
            pipeline = bool(np.any(low != high))  # costly to price: worth a tighter floor
            pattern_key = ("pipeline floor" if pipeline else "class floor", step.pattern.full_key, layout,
                           placement.key)
            found = self.memo.get(pattern_key)
            if found is None:
                floor_of = self.fabric.pipeline_floor if pipeline else self.fabric.class_floor
                found = floor_of(step.pattern, layout, placement)
                empty = np.zeros(step.pattern.num_classes)
                found = self.memo.put(pattern_key, (empty, empty) if found is None else found)
            class_latency, class_s_per_unit = found
            floors = self.memo.put(key, (window_max(class_latency, low, high), window_max(class_s_per_unit, low, high)))
        return floors[0] + self.fabric.transfer_time_s(step_bytes, floors[1])

    def _windowed(self, step: CompactStep, layout: GroupLayout, placement: Placement,
                  step_bytes: np.ndarray | None, budget_s: float | None) -> tuple[np.ndarray, np.ndarray] | None:
        low, high = step.windows
        ahead, left_s = None, 0.0
        if budget_s is not None:  # the repetitions' latency floors (counted in the caller's budget)
            ahead = self._window_floor(step, layout, placement, step_bytes)
            left_s = float(np.sum(ahead))
        if np.any(low != high):
            cost = self.cost(step.pattern, layout, placement)
            if cost.disjoint:
                return window_max(cost.class_latency_s, low, high), cost.window_s_per_unit(low, high)
        assert isinstance(step.pattern, Pairs)
        pairs = np.stack([low, high], axis=1)
        distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        # A fabric that prices every window at once (each as its pairs alone) serves the budget
        # too: the repetitions are then checked against it from those prices.
        together = self.fabric.price_windows(step.pattern, distinct, layout, placement)
        if together is not None:
            if budget_s is None:
                return together[0][inverse], together[1][inverse]
            latency, s_per_unit = together
            priced = np.ones(len(distinct), dtype=bool)
        else:
            latency, s_per_unit = np.empty(len(distinct)), np.empty(len(distinct))
            priced = np.zeros(len(distinct), dtype=bool)
        spent_s = 0.0
        for repetition, index in enumerate(inverse):
            if not priced[index]:
                first, last = distinct[index]
                sub = self.cost(step.pattern.select(int(first), int(last)), layout, placement)
                latency[index], s_per_unit[index] = sub.latency_s, sub.s_per_unit
                priced[index] = True
            if budget_s is not None:
                left_s -= ahead[repetition]
                spent_s += latency[index] + float(self.fabric.transfer_time_s(
                    step_bytes[repetition:repetition + 1], s_per_unit[index])[0])
                if spent_s + max(left_s, 0.0) > budget_s:
                    return None
        return latency[inverse], s_per_unit[inverse]

    def clear(self) -> None:
        self._cache.clear()
        self.memo.clear()


def local_work_s(step: CompactStep, size_bytes: int, model: ReductionModel | None) -> float:
    if model is None:
        return 0.0
    one = sum(model.reduction_time_s(r.fan_in, r.fraction * size_bytes) for r in step.reductions)
    if step.copy_fraction:
        one += model.copy_time_s(step.copy_fraction * size_bytes)
    return one * step.repeat


def schedule_compute_s(schedule: Schedule, size_bytes: int, model: ReductionModel | None) -> float:
    """The local work of a whole schedule, summed as `price_schedule` sums it (a floor of its price)."""
    compute = 0.0
    for step in schedule.steps:
        compute += local_work_s(step, size_bytes, model)
    return compute


def moves_data(step: CompactStep) -> bool:
    """True for a communication step without class windows whose pattern lists at least one flow
    (every repetition of it pays at least the fabric's `min_latency_s`)."""
    pattern = step.pattern
    if pattern is None or step.windows is not None:
        return False
    if isinstance(pattern, Pairs):
        return pattern.src.size > 0
    if isinstance(pattern, Mesh):
        return bool(np.any(pattern.block_sizes() > 1))
    return False


def sent_weight(pattern: Pattern, multicast: bool) -> float:
    """Weight units the busiest node sends in one repetition of `pattern` (a multicast source
    sends once when the fabric replicates: `multicast`)."""
    if isinstance(pattern, Pairs):
        if pattern.src.size == 0:
            return 0.0
        if (pattern.multicast and multicast) or pattern.one_to_one:
            return float(np.max(pattern.weight))
        return float(np.bincount(pattern.src, weights=pattern.weight).max())
    if isinstance(pattern, Mesh):
        peers = _most_peers(pattern)
        return float(pattern.weight) * (min(peers, 1) if pattern.multicast and multicast else peers)
    return 0.0


def received_weight(pattern: Pattern) -> float:
    """Weight units the busiest node receives in one repetition of `pattern`."""
    if isinstance(pattern, Pairs):
        if pattern.src.size == 0:
            return 0.0
        if pattern.one_to_one:
            return float(np.max(pattern.weight))
        return float(np.bincount(pattern.dst, weights=pattern.weight).max())
    if isinstance(pattern, Mesh):
        return float(pattern.weight) * _most_peers(pattern)
    return 0.0


def _most_peers(mesh: Mesh) -> int:
    """The peers of a node in the mesh's largest block (each sends to and receives from all of them)."""
    return max(int(mesh.block_sizes().max(initial=1)) - 1, 0)


def data_hops(schedule: Schedule) -> int:
    """Repetitions of the steps that surely carry traffic (`moves_data`)."""
    return sum(step.repeat for step in schedule.steps if moves_data(step))


def price_schedule(pricer: StepPricer, schedule: Schedule, layout: GroupLayout, placement: Placement,
                   size_bytes: int, model: ReductionModel | None, *, give_up_above_s: float | None = None
                   ) -> Breakdown | None:
    """Price the compact view of `schedule` run by every group of `layout` at once.

    With `give_up_above_s`, returns None as soon as the price is sure to exceed it: the local work
    of the whole schedule, the latency and transfer of the steps priced so far and the fabric's
    minimum latency for each repetition still to price of a step that carries traffic only grow
    (every part is >= 0), so `best` stops pricing a candidate once it cannot win. A windowed step
    is checked repetition by repetition as its windows are priced.
    """
    fabric = pricer.fabric
    latency = transfer = compute = 0.0
    floor = None if give_up_above_s is None else schedule_compute_s(schedule, size_bytes, model)
    ahead_s = [] if floor is None else [pricer.step_floor_s(step, layout, placement, size_bytes)
                                        if step.is_communication
                                        else 0.0 for step in schedule.steps]
    left_s = float(sum(ahead_s))
    if floor is not None and floor + left_s > give_up_above_s:
        return None
    previous: Hashable = None
    for index, step in enumerate(schedule.steps):
        compute += local_work_s(step, size_bytes, model)
        if not step.is_communication:
            continue
        step_bytes = step.fractions() * size_bytes
        if floor is not None:
            left_s = max(left_s - ahead_s[index], 0.0)
        if step.windows is None:
            cost = pricer.cost(step.pattern, layout, placement)
            latency += cost.latency_s * step.repeat
            transfer += float(np.sum(fabric.transfer_time_s(step_bytes, cost.s_per_unit)))
        else:
            budget_s = None if floor is None else give_up_above_s - (latency + transfer + floor + left_s)
            windowed = pricer.windowed(step, layout, placement, step_bytes=step_bytes, budget_s=budget_s)
            if windowed is None:
                return None
            step_latency, s_per_unit = windowed
            latency += float(np.sum(step_latency))
            transfer += float(np.sum(fabric.transfer_time_s(step_bytes, s_per_unit)))
        latency += fabric.setup_time_s(previous, step.circuit)
        if step.repeat > 1:
            latency += (step.repeat - 1) * fabric.setup_time_s(step.circuit, step.circuit)
        previous = step.circuit
        if floor is not None and latency + transfer + floor + left_s > give_up_above_s:
            return None
    return Breakdown(latency, transfer, compute, schedule.num_steps)


def explicit_local_work_s(schedule: ExplicitSchedule, index: int, size_bytes: int,
                          model: ReductionModel | None) -> float:
    """Local work of the busiest rank in explicit step `index`: its reductions and reshapes."""
    if model is None:
        return 0.0
    step = schedule.steps[index]
    chunk_bytes = schedule.chunk_fraction * size_bytes
    n, slots = schedule.group_size, schedule.num_slots
    per_rank = np.zeros(n)
    if np.any(step.reduce):
        targets = step.dst[step.reduce] * slots + step.dst_slot[step.reduce]
        unique, counts = np.unique(targets, return_counts=True)
        for fan_in in np.unique(counts + 1):
            ranks = unique[counts + 1 == fan_in] // slots
            per_rank += np.bincount(ranks, minlength=n) * model.reduction_time_s(int(fan_in), chunk_bytes)
    if step.local_perm is not None:
        moved = np.count_nonzero(step.local_perm != np.arange(slots)[None, :], axis=1)
        per_rank += np.array([model.copy_time_s(count * chunk_bytes) for count in moved])
    return float(per_rank.max())


def price_explicit(fabric: Fabric, schedule: ExplicitSchedule, layout: GroupLayout, placement: Placement,
                   size_bytes: int, model: ReductionModel | None) -> Breakdown:
    """Price the explicit view step by step (no caches, no windows, no repeats)."""
    latency = transfer = compute = 0.0
    previous: Hashable = None
    chunk_bytes = schedule.chunk_fraction * size_bytes
    n = schedule.group_size
    for index, step in enumerate(schedule.steps):
        compute += explicit_local_work_s(schedule, index, size_bytes, model)
        if not step.is_communication:
            continue
        pair = step.src * n + step.dst
        unique, counts = np.unique(pair, return_counts=True)
        pattern = Pairs(n, unique // n, unique % n, counts.astype(np.float64), multicast=step.multicast)
        cost = fabric.price(pattern, layout, placement)
        latency += cost.latency_s + fabric.setup_time_s(previous, step.circuit)
        transfer += float(fabric.transfer_time_s(np.array([chunk_bytes]), cost.s_per_unit)[0])
        previous = step.circuit
    return Breakdown(latency, transfer, compute, schedule.num_steps)
