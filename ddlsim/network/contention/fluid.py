"""Max-min fair sharing of declared resources by concurrent activities: a fluid, flow-level model.

An activity is work that drains at a rate: a flow (work in bytes, rate in bytes per second) or
a whole collective seen as one coflow (work in seconds of its isolated time, rate at most 1).
Activity j puts ``amount[j, i]`` units of resource i (bits) on resource i per unit of work it
does, and resource i serves at most ``capacity[i]`` units per second. Rates are the max-min
fair allocation found by progressive filling: every unfrozen activity's *fill* rises at the
same pace, an activity's rate being ``weight x fill``, until a resource saturates (its users
freeze) or an activity reaches ``max_fill``. That is the fairness of TCP-like sharing among
equal flows (Bertsekas and Gallager, Data Networks, section 6.5.2) and the model SimGrid's
flow-level CM02 network uses. Rates are re-solved whenever an activity starts or finishes.

An activity alone at full rate ends at exactly ``start + work / (weight x max_fill)``: the
isolated price comes back bit for bit when nothing shares.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

SATURATION = 1e-12
"""A resource whose remaining capacity falls below this share of its capacity is saturated."""


def max_min_fill(activity: np.ndarray, resource: np.ndarray, amount: np.ndarray, capacity: np.ndarray,
                 max_fill: np.ndarray) -> np.ndarray:
    """Max-min fair fill of each activity (progressive filling).

    Entry e says activity ``activity[e]`` uses ``amount[e]`` units of resource ``resource[e]``
    per unit of fill; activity j's fill is at most ``max_fill[j]`` (inf: only resources bound it).
    An activity with no entries and an infinite cap gets an infinite fill.
    """
    num_activities = max_fill.size
    fill = np.zeros(num_activities)
    frozen = max_fill <= 0
    remaining = np.array(capacity, dtype=np.float64)
    used = amount > 0
    activity, resource, amount = activity[used], resource[used], amount[used]
    users = np.bincount(activity, minlength=num_activities)
    for _ in range(num_activities + remaining.size + 1):
        if frozen.all():
            break
        live = ~frozen[activity]
        demand = np.bincount(resource[live], weights=amount[live], minlength=remaining.size)
        loaded = demand > 0
        step = np.inf
        if loaded.any():
            step = float((np.maximum(remaining[loaded], 0.0) / demand[loaded]).min())
        headroom = (max_fill - fill)[~frozen]
        step = min(step, float(headroom.min()))
        if not np.isfinite(step):  # unconstrained activities: nothing limits them
            fill[~frozen & (users == 0)] = np.inf
            frozen |= users == 0
            if frozen.all():
                break
            continue
        fill[~frozen] += step
        remaining -= step * demand
        saturated = loaded & (remaining <= SATURATION * np.maximum(capacity, 1e-300))
        if saturated.any():
            touching = np.zeros(num_activities, dtype=bool)
            touching[activity[saturated[resource]]] = True
            frozen |= touching
        frozen |= fill >= max_fill * (1 - SATURATION)
    return fill


def binding_entries(activity: np.ndarray, resource: np.ndarray, amount: np.ndarray, capacity: np.ndarray,
                    max_fill: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The entries of the resources that may bind, renumbered over those resources only (in the
    order of their ids): a resource one activity uses alone binds only if it saturates below that
    activity's cap."""
    users = np.bincount(resource, minlength=capacity.size)
    alone = users[resource] == 1
    loose = alone & (amount * max_fill[activity] <= capacity[resource] * (1 + SATURATION))
    keep = ~loose
    if not keep.any():
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), np.zeros(0)
    kept_resource = resource[keep]
    marked = np.zeros(capacity.size, dtype=bool)
    marked[kept_resource] = True
    kept = np.flatnonzero(marked)
    renumber = np.zeros(capacity.size, dtype=np.int64)
    renumber[kept] = np.arange(kept.size)
    return activity[keep], renumber[kept_resource], amount[keep], capacity[kept]


MERGE_ABOVE = 256
"""Above this many binding resources, resources with identical constraints are solved as one."""


def merge_identical(activity: np.ndarray, resource: np.ndarray, amount: np.ndarray, capacity: np.ndarray,
                    num_activities: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The entries with resources of identical columns (the same capacity and the same amount from
    every activity) kept once: the same constraints, so the same max-min fill, on fewer resources
    (a symmetric layout loads thousands of links alike). Unchanged when any two columns differ."""
    if capacity.size <= MERGE_ABOVE:
        return activity, resource, amount, capacity
    width = num_activities + 1
    columns = np.bincount(resource * width + activity, weights=amount, minlength=capacity.size * width)
    columns = columns.reshape(capacity.size, width)
    columns[:, num_activities] = capacity
    probe = np.random.default_rng(0).random(num_activities + 1) + 0.5  # fixed: deterministic grouping
    _, first, inverse = np.unique(columns @ probe, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if first.size == capacity.size or not np.array_equal(columns, columns[first[inverse]]):
        return activity, resource, amount, capacity
    keep = np.isin(resource, first)
    renumber = np.zeros(capacity.size, dtype=np.int64)
    renumber[first] = np.arange(first.size)
    return activity[keep], renumber[resource[keep]], amount[keep], capacity[first]


@dataclass
class _Active:
    key: Hashable
    work: float
    weight: float
    max_fill: float
    resources: np.ndarray
    amounts: np.ndarray
    started_s: float
    share_key: Hashable = None
    done: float = 0.0
    rate: float = 0.0
    slowed: bool = False


@dataclass
class FluidNetwork:
    """Activities sharing resources of `capacity` (units per second), simulated event by event.

    `submit` adds an activity that becomes active at `start_s` (it may lie in the future: a
    flow's head-to-head latency); `advance` runs to the next completion and returns it.
    """

    capacity: np.ndarray
    now_s: float = 0.0
    _pending: list = field(default_factory=list)
    _active: dict = field(default_factory=dict)
    _order: int = 0
    solves: int = 0
    _fills: dict = field(default_factory=dict)
    last_slowed: set = field(default_factory=set)
    """Keys of the activities the last `advance` finished that sharing had slowed."""

    def submit(self, key: Hashable, work: float, resources: np.ndarray, amounts: np.ndarray, *,
               start_s: float | None = None, weight: float = 1.0, max_fill: float = np.inf,
               share_key: Hashable = None) -> None:
        """`share_key`, when given, names what decides the activity's share (its resources,
        amounts, weight and cap): sets of active activities with the same keys reuse one solve."""
        start = self.now_s if start_s is None else max(start_s, self.now_s)
        item = _Active(key, float(work), float(weight), float(max_fill),
                       np.asarray(resources, dtype=np.int64), np.asarray(amounts, dtype=np.float64), start,
                       share_key)
        heapq.heappush(self._pending, (start, self._order, item))
        self._order += 1

    def busy(self) -> bool:
        return bool(self._pending or self._active)

    def _next_finish_s(self) -> float:
        best = np.inf
        for item in self._active.values():
            if item.rate > 0:
                best = min(best, self._finish_s(item))
        return best

    def _finish_s(self, item: _Active) -> float:
        if not item.slowed:
            return item.started_s + item.work / item.rate
        return self.now_s + (item.work - item.done) / item.rate

    def advance(self, until_s: float = np.inf) -> list[tuple[Hashable, float]]:
        """Run to the next completion (or to `until_s`, whichever comes first); returns the
        activities that finished then, as (key, finish time), in submission order."""
        while True:
            start = self._pending[0][0] if self._pending else np.inf
            finish = self._next_finish_s()
            event = min(start, finish, until_s)
            if not np.isfinite(event):
                return []
            self._progress(event)
            finished = [item for item in self._active.values()
                        if item.rate > 0 and self._finish_s_at(item, event) <= event]
            done = []
            for item in finished:
                del self._active[id(item)]
                done.append((item.key, self._finish_s_at(item, event)))
            self.last_slowed = {item.key for item in finished if item.slowed}
            started = False
            while self._pending and self._pending[0][0] <= event:
                _, _, item = heapq.heappop(self._pending)
                item.started_s = event
                self._active[id(item)] = item
                started = True
            if finished or started:
                self._solve()
            if done or event >= until_s:
                return done

    def _finish_s_at(self, item: _Active, event: float) -> float:
        finish = self._finish_s(item)
        return finish if finish <= event * (1 + SATURATION) + 1e-300 else np.inf

    def _fill(self, items: list[_Active]) -> np.ndarray:
        max_fill = np.array([item.max_fill for item in items])
        if len(items) == 1 and np.isfinite(max_fill[0]):
            return max_fill
        sizes = [item.resources.size for item in items]
        activity = np.repeat(np.arange(len(items)), sizes)
        resource = np.concatenate([item.resources for item in items])
        amount = np.concatenate([item.amounts * item.weight for item in items])
        activity, resource, amount, capacity = binding_entries(activity, resource, amount, self.capacity, max_fill)
        if activity.size == 0:
            return max_fill
        activity, resource, amount, capacity = merge_identical(activity, resource, amount, capacity, len(items))
        return max_min_fill(activity, resource, amount, capacity, max_fill)

    def _progress(self, event: float) -> None:
        elapsed = event - self.now_s
        if elapsed > 0:
            for item in self._active.values():
                item.done = min(item.work, item.done + item.rate * elapsed)
        self.now_s = event

    def _solve(self) -> None:
        items = list(self._active.values())
        if not items:
            return
        keys = tuple(item.share_key for item in items)
        cached = None if None in keys else self._fills.get(keys)
        if cached is not None:
            fill = cached
        else:
            self.solves += 1
            fill = self._fill(items)
            if None not in keys:
                self._fills[keys] = fill
        for item, value in zip(items, fill):
            full = item.weight * item.max_fill
            rate = item.weight * float(value)
            if np.isfinite(full) and rate >= full * (1 - SATURATION):
                rate = full
            else:
                item.slowed = True
            item.rate = rate
