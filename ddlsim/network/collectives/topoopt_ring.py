"""TopoOpt's ring collectives over several ring permutations at once (TopoOpt sections 4.3, 6).

TopoOpt's NCCL integration "load-balances parameter synchronization across multiple
ring-AllReduce sub-topologies": the buffer is cut into D parts, one per ring permutation +p
(member i sends to member i + p), and the D rings run a ring reduce-scatter and/or all-gather
side by side. On a TopoOpt shard every ring is a set of direct links, so the collective uses all
D interfaces of every server at once: 2(n-1) steps of size / (n D) bytes per ring for an
all-reduce, instead of a single ring's size / n over one interface.

The rings come from the fabric (`TopoOptFabric.ring_rules`): the permutations TopologyFinder
chose for this group kind, or TotientPerms + SelectPermutations for the group's size.

Explicit view: slot b D + i holds part i of block b (block b is what rank b owns after a
reduce-scatter). In ring i, the member at ring index r sends, at reduce-scatter step t, the
partial sum of the block owned by ring index r - t - 1, so that the block of every member
arrives complete at its owner after n - 1 steps; the all-gather then passes finished blocks on.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.patterns import Pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule
from ddlsim.registry import ALGORITHMS
from ddlsim.types import CollectiveOp

Op = CollectiveOp


@dataclass
class TopoOptRingConfig:
    name: str = "topoopt_ring"


def ring_orders(group_size: int, rules: tuple[int, ...]) -> np.ndarray:
    """orders[i, r]: the position at ring index r of ring +rules[i] (ring index 0 is position 0)."""
    index = np.arange(group_size, dtype=np.int64)
    return (index[None, :] * np.asarray(rules, dtype=np.int64)[:, None]) % group_size


def _pattern(group_size: int, rules: tuple[int, ...]) -> Pairs:
    src = np.tile(np.arange(group_size, dtype=np.int64), len(rules))
    dst = (src + np.repeat(np.asarray(rules, dtype=np.int64), group_size)) % group_size
    return Pairs(group_size, src, dst, key=("topoopt_rings", rules))


@ALGORITHMS.register("topoopt_ring", TopoOptRingConfig)
@dataclass(frozen=True)
class TopoOptRing(CollectiveAlgorithm):
    """Ring all-reduce, reduce-scatter and all-gather split over TopoOpt's ring permutations."""

    name: str = "topoopt_ring"
    ops = frozenset({Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER})

    @classmethod
    def from_config(cls, config: TopoOptRingConfig) -> TopoOptRing:
        return cls(config.name)

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is None and not callable(getattr(fabric, "ring_rules", None)):
            return "co-designed for the topoopt fabric (it needs the fabric's ring permutations)"
        return reason

    def rules(self, request: ScheduleRequest) -> tuple[int, ...]:
        return tuple(int(rule) for rule in request.fabric.ring_rules(request.layout))

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        return self.rules(request)

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()

    def _build(self, request: ScheduleRequest, *, explicit: bool) -> ScheduleBuilder:
        rules = self.rules(request)
        n, parts = request.group_size, len(rules)
        builder = ScheduleBuilder(request, self.name, n * parts, explicit=explicit)
        fraction = builder.payload / (n * parts)
        pattern = _pattern(n, rules)
        orders = ring_orders(n, rules)
        if request.op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER):
            step = CompactStep(pattern, fraction, n - 1, reductions=(Reduction(2, fraction * parts),),
                               label=f"reduce-scatter on {parts} rings")
            builder.add(step, lambda: self._steps(builder, step, orders, reduce=True))
        if request.op in (Op.ALL_REDUCE, Op.ALL_GATHER):
            step = CompactStep(pattern, fraction, n - 1, label=f"all-gather on {parts} rings")
            builder.add(step, lambda: self._steps(builder, step, orders, reduce=False))
        return builder

    @staticmethod
    def _steps(builder: ScheduleBuilder, step: CompactStep, orders: np.ndarray, *, reduce: bool):
        parts, n = orders.shape
        ring_index = np.arange(n, dtype=np.int64)
        ring = np.repeat(np.arange(parts, dtype=np.int64), n)
        senders = orders.ravel()
        receivers = orders[:, (ring_index + 1) % n].ravel()
        for t in range(n - 1):
            owner_index = (ring_index - t - 1) % n if reduce else (ring_index - t) % n
            slots = orders[:, owner_index].ravel() * parts + ring
            yield builder.rows(senders, receivers, slots, slots, reduce, step)
