"""`CollectiveEstimator`: the time of one collective call on one fabric, with caches.

    estimator = CollectiveEstimator(fabric, algorithm="best", device="a100_80gb")
    estimator.estimate("all_reduce", 10**9, num_ranks=1024)           # one group of 1,024
    estimator.estimate("all_reduce", 10**9, layout=GroupLayout(8192, stride=8, num_ranks=65536))
    estimator(call)                                                    # a CollectiveCall

Schedules are cached per (algorithm, op, group, root, layout, placement), pattern prices per
(pattern, layout, placement) and whole estimates per call, because a training run prices the
same calls many times.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

from ddlsim.core import units
from ddlsim.core.caches import Memo
from ddlsim.core.errors import ConfigError, DdlsimError, InfeasibleError
from ddlsim.core.registry import build
from ddlsim.core.types import CollectiveCall, CollectiveEstimate, CollectiveOp, GroupLayout
from ddlsim.network.bounds import check_price, lower_bound_s
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.estimate import PRUNE_MARGIN, Breakdown, StepPricer, price_schedule
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placing import place_ranks
from ddlsim.network.reduction import DEFAULT_DEVICE, ReductionModel, resolve_reduction_model
from ddlsim.network.schedule import Schedule
from ddlsim.network.selection import floor_s, rough_price_s


def make_algorithm(algorithm: str | CollectiveAlgorithm | dict[str, Any]) -> CollectiveAlgorithm:
    """An algorithm from an option name (registered or a YAML variant in configs/collective/), a
    config mapping, or an algorithm object (`ddlsim.core.registry.build`)."""
    return build("collective", algorithm)


def resolve_layout(num_ranks: int | None, layout: GroupLayout | None) -> GroupLayout:
    if layout is None:
        if num_ranks is None:
            raise ConfigError("num_ranks", None, "give num_ranks (the group size) or a layout")
        if not isinstance(num_ranks, int) or isinstance(num_ranks, bool) or num_ranks < 1:
            raise ConfigError("num_ranks", num_ranks, "must be an integer >= 1")
        return GroupLayout(size=num_ranks)
    if num_ranks is not None and num_ranks != layout.size:
        raise ConfigError("num_ranks", num_ranks, f"must equal the layout's group size {layout.size} (or be omitted)")
    return layout


def check_call(op: CollectiveOp, size_bytes: int, layout: GroupLayout, root: int) -> None:
    if not isinstance(size_bytes, int) or isinstance(size_bytes, bool) or size_bytes < 0:
        raise ConfigError("size_bytes", size_bytes, "must be an integer >= 0")
    if op is CollectiveOp.BARRIER and size_bytes != 0:
        raise ConfigError("size_bytes", size_bytes, "a barrier carries no data; use 0")
    if op is CollectiveOp.SEND_RECV and layout.size != 2:
        raise ConfigError("num_ranks", layout.size, "send_recv needs a group of 2 (sender = root)")
    if not 0 <= root < layout.size:
        raise ConfigError("root", root, f"must be in [0, {layout.size})")


class CollectiveEstimator:
    """Prices collectives on one fabric with one algorithm choice and one reduction device."""

    def __init__(self, fabric: Fabric, algorithm: str | CollectiveAlgorithm | dict[str, Any] = "best",
                 device: ReductionModel | str | None = DEFAULT_DEVICE, *, cache_size: int = 4096) -> None:
        if not isinstance(fabric, Fabric):
            raise ConfigError("fabric", fabric, "must be a Fabric (see make_fabric)")
        self.fabric = fabric
        self.algorithm = make_algorithm(algorithm)
        self.model = resolve_reduction_model(device)
        self.pricer = StepPricer(fabric)
        # Its own caches (`ddlsim.clear_caches` empties them too): schedules, whole estimates, placements.
        self._schedules = Memo("estimator.schedules", 256)
        self._estimates = Memo("estimator.estimates", cache_size)
        self._placements = Memo("estimator.placements")

    # -- public ----------------------------------------------------------------------------------
    def estimate(self, op: CollectiveOp | str, size_bytes: int | str, *, num_ranks: int | None = None,
                 layout: GroupLayout | None = None, root: int = 0) -> CollectiveEstimate:
        op = _op(op)
        if isinstance(size_bytes, str):
            size_bytes = units.parse_size_bytes(size_bytes, "size_bytes")
        layout = resolve_layout(num_ranks, layout)
        check_call(op, size_bytes, layout, root)
        key = (op, size_bytes, layout, root)
        cached = self._estimates.get(key)
        if cached is None:
            cached = self._estimates.put(key, self._estimate(op, size_bytes, layout, root))
        return cached

    def estimate_call(self, call: CollectiveCall) -> CollectiveEstimate:
        """One call of `call` (its `count` is the caller's to multiply)."""
        return self.estimate(call.op, call.size_bytes, layout=call.group, root=call.root)

    __call__ = estimate_call

    def schedule(self, algorithm: CollectiveAlgorithm, request: ScheduleRequest) -> Schedule:
        """The (cached) compact schedule, after the fabric's `prepare` hook."""
        size_key = request.size_bytes if algorithm.size_dependent else None
        key = (algorithm, request.op, request.group_size, request.root, request.layout, request.placement.key,
               algorithm.schedule_key(request), size_key)
        schedule = self._schedules.get(key)
        if schedule is None:
            raw = algorithm.compact(request)
            schedule = self._schedules.put(key, self.fabric.prepare(raw, request.layout, request.placement))
        return schedule

    def breakdown(self, algorithm: CollectiveAlgorithm, request: ScheduleRequest) -> Breakdown:
        schedule = self.schedule(algorithm, request)
        return price_schedule(self.pricer, schedule, request.layout, request.placement, request.size_bytes,
                              self.model)

    # -- internals -------------------------------------------------------------------------------
    def _request(self, op: CollectiveOp, size_bytes: int, layout: GroupLayout, root: int) -> ScheduleRequest:
        placement = self._placements.get(layout.job_ranks)
        if placement is None:
            placement = self._placements.put(layout.job_ranks, place_ranks(self.fabric, layout.job_ranks))
        return ScheduleRequest(op, layout.size, root, size_bytes, self.fabric, layout, placement)

    def _estimate(self, op: CollectiveOp, size_bytes: int, layout: GroupLayout, root: int) -> CollectiveEstimate:
        request = self._request(op, size_bytes, layout, root)
        bound_s = lower_bound_s(self.fabric, op, size_bytes, layout, root, request.placement)
        if getattr(self.algorithm, "is_selector", False):
            algorithm, result = self._best(request, bound_s)
        else:
            reason = self.algorithm.supports(self.fabric, op, layout.size)
            if reason is not None:
                raise InfeasibleError(f"{self.algorithm.name} cannot run {op.value} on {layout.size} ranks of "
                                      f"{self.fabric.name}: {reason}")
            algorithm, result = self.algorithm, self._checked(self.algorithm, request, bound_s)
        return CollectiveEstimate(op=op, size_bytes=size_bytes, group_size=layout.size, algorithm=algorithm.name,
                                  fabric=self.fabric.name, time_s=result.time_s, latency_s=result.latency_s,
                                  transfer_s=result.transfer_s, compute_s=result.compute_s,
                                  num_steps=result.num_steps, lower_bound_s=bound_s)

    def _checked(self, algorithm: CollectiveAlgorithm, request: ScheduleRequest, bound_s: float) -> Breakdown:
        """The algorithm's price, after checking it against the physical bound (a price below it
        is a modelling bug: `BelowPhysicalBoundError`)."""
        result = self.breakdown(algorithm, request)
        check_price(result.time_s, bound_s, fabric=self.fabric.name, algorithm=algorithm.name, op=request.op,
                    size_bytes=request.size_bytes, layout=request.layout)
        return result

    def _best(self, request: ScheduleRequest, bound_s: float) -> tuple[CollectiveAlgorithm, Breakdown]:
        """The fastest candidate; ties go to the first name. Each candidate's floor (local work
        and one minimum hop latency per step with traffic, `ddlsim.network.selection`) is known
        before any step is priced: a candidate whose floor exceeds the best price found so far is
        not priced, and one whose partial price exceeds it is given up. Neither could have won,
        so the choice and the price are those of pricing every candidate; candidates are priced
        in the order of a rough guess of their price so that the likely winner comes first
        (`_guessed_order`)."""
        reasons: list[str] = []
        floored = []
        for candidate in self.algorithm.candidates(request.op):
            reason = candidate.supports(self.fabric, request.op, request.group_size)
            if reason is None:
                try:
                    schedule = self.schedule(candidate, request)
                except InfeasibleError as error:
                    reason = str(error)
            if reason is not None:
                reasons.append(f"{candidate.name}: {reason}")
                continue
            floored.append((floor_s(schedule, self.pricer, request.size_bytes, self.model), candidate.name,
                            candidate, schedule))
        best: tuple[float, str, CollectiveAlgorithm, Breakdown] | None = None

        def limit() -> float | None:
            # A margin keeps rounding from dropping a candidate that ties with the best (first name wins).
            return None if best is None else best[0] * (1 + PRUNE_MARGIN)

        for name, floor, candidate, schedule in self._guessed_order(request, floored, limit):
            limit_s = limit()
            if limit_s is not None and floor > limit_s:
                continue
            try:
                result = price_schedule(self.pricer, schedule, request.layout, request.placement,
                                        request.size_bytes, self.model, give_up_above_s=limit_s)
            except InfeasibleError as error:
                reasons.append(f"{name}: {error}")
                continue
            if result is None:
                continue
            check_price(result.time_s, bound_s, fabric=self.fabric.name, algorithm=name, op=request.op,
                        size_bytes=request.size_bytes, layout=request.layout)
            entry = (result.time_s, name, candidate, result)
            if best is None or entry[:2] < best[:2]:
                best = entry
        if best is None:
            raise InfeasibleError(f"no algorithm can run {request.op.value} on {request.group_size} ranks of "
                                  f"{self.fabric.name}: " + "; ".join(reasons))
        return best[2], best[3]

    def _guessed_order(self, request: ScheduleRequest, floored: list[tuple], limit: Callable[[], float | None]
                       ) -> Iterator[tuple]:
        """(name, floor, candidate, schedule) of `floored` (floor, name, candidate, schedule) entries,
        the lowest rough guess first. A guess can cost as much as a price at scale, so guesses are
        made in the order of the floors and only as far as needed: a candidate is guessed once its
        floor is no higher than the lowest guess not yet handed out, and dropped unguessed once its
        floor is above `limit()` (the best price so far). The order never changes the choice."""
        pending = sorted(floored, key=lambda entry: entry[:2])[::-1]  # the lowest floor last
        guessed: list[tuple[float, str]] = []
        by_name = {entry[1]: entry for entry in floored}
        while pending or guessed:
            while pending and (not guessed or pending[-1][0] <= guessed[0][0]):
                floor, name, _, schedule = pending.pop()
                limit_s = limit()
                if limit_s is not None and floor > limit_s:
                    continue
                guess = rough_price_s(schedule, self.pricer, request.layout, request.placement, request.size_bytes,
                                      floor)
                heapq.heappush(guessed, (guess, name))
            if guessed:
                floor, name, candidate, schedule = by_name[heapq.heappop(guessed)[1]]
                yield name, floor, candidate, schedule

    def clear(self) -> None:
        """Forget every cached schedule, price and estimate."""
        self.pricer.clear()
        self._schedules.clear()
        self._estimates.clear()
        self._placements.clear()


def _op(op: CollectiveOp | str) -> CollectiveOp:
    try:
        return CollectiveOp(op)
    except ValueError:
        raise ConfigError("op", op, f"unknown op; choose one of {', '.join(o.value for o in CollectiveOp)}") from None


__all__ = ["CollectiveEstimator", "DdlsimError", "make_algorithm"]
