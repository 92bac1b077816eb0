"""TopoOpt's ring collectives over several ring permutations at once (TopoOpt sections 4.3, 5.1, 6).

TopoOpt's NCCL integration "load-balances parameter synchronization across multiple
ring-AllReduce sub-topologies": the buffer is cut into D parts, one per ring permutation +p
(server i sends to server i + p), and the D rings run side by side. On a TopoOpt shard every ring
is a set of direct links, so the collective uses all D interfaces of every server at once.

Section 5.1 uses "ring-AllReduce and distributed parameter server as default AllReduce
communication collectives between servers and within servers": a group made of whole servers of
g GPUs runs, for an all-reduce, (1) a reduce-scatter among the g GPUs of each server, (2) the D
rings between servers, one set per GPU index, on the parts that GPU holds (reduce-scatter then
all-gather), (3) an all-gather inside each server. We model the intra-server exchange as a ring,
which moves the same bytes per GPU as a parameter server sharded over the server's GPUs. A group
that does not consist of whole servers runs the D rings over its own members.

The rings come from the fabric (`TopoOptFabric.ring_plan`): the permutations TopologyFinder
chose for this group kind, the shard's own, or TotientPerms + SelectPermutations for its size.

Explicit view: member (l, s) is GPU l of the group's server s, position l + g s. Slot c D + i holds
part i of chunk c = l + g s, the chunk that position owns after a reduce-scatter. In ring i the
server at ring index r sends, at step t of the reduce-scatter, the partial sum of the chunk owned
by ring index r - t - 1, so every chunk arrives complete at its owner after J - 1 steps.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.patterns import Pairs, shift_pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


@dataclass
class TopoOptRingConfig:
    name: str = "topoopt_ring"


def ring_orders(group_size: int, rules: tuple[int, ...]) -> np.ndarray:
    """orders[i, r]: the member at ring index r of ring +rules[i] (ring index 0 is member 0)."""
    index = np.arange(group_size, dtype=np.int64)
    return (index[None, :] * np.asarray(rules, dtype=np.int64)[:, None]) % group_size


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
        if reason is None and not fabric.has_ring_plan():
            return "co-designed for the topoopt fabric (it needs the fabric's ring permutations)"
        return reason

    def plan(self, request: ScheduleRequest) -> tuple[int, tuple[int, ...]]:
        gpus, rules = request.fabric.ring_plan(request.layout)
        return int(gpus), tuple(int(rule) for rule in rules)

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        return self.plan(request)

    def verification_fabric(self, group_size: int) -> Fabric:
        from ddlsim.network.fabrics.topoopt.fabric import TopoOptFabric

        gpus = 2 if group_size % 2 == 0 and group_size > 2 else 1
        return TopoOptFabric(num_servers=group_size // gpus, degree=3, link_bandwidth_bps=100e9,
                             link_latency_s=1e-6, gpus_per_server=gpus)

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()

    def _build(self, request: ScheduleRequest, *, explicit: bool) -> ScheduleBuilder:
        g, rules = self.plan(request)
        n = request.group_size
        servers, parts = n // g, max(len(rules), 1)
        builder = ScheduleBuilder(request, self.name, n * parts, explicit=explicit)
        chunk = builder.payload / (n * parts)
        position = np.arange(n, dtype=np.int64)
        local, server = position % g, position // g
        orders = ring_orders(servers, rules) if rules and explicit else np.zeros((0, servers), dtype=np.int64)
        ring_pattern = Pairs(n, np.tile(position, len(rules)),
                             (local + g * ((server[None, :] + np.array(rules)[:, None]) % servers)).ravel()
                             if rules else np.zeros(0, dtype=np.int64),
                             key=("topoopt_rings", g, rules))
        inside = shift_pairs(n, 1, g, 1) if g > 1 else None
        reducing = request.op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER)
        gathering = request.op in (Op.ALL_REDUCE, Op.ALL_GATHER)

        def intra(reduce: bool) -> None:
            fraction = chunk * servers * parts
            step = CompactStep(inside, fraction, g - 1, reductions=(Reduction(2, fraction),) if reduce else (),
                               label=f"{'reduce-scatter' if reduce else 'all-gather'} inside servers")
            builder.add(step, lambda: self._intra_steps(builder, step, g, servers, parts, reduce=reduce))

        def inter(reduce: bool) -> None:
            step = CompactStep(ring_pattern, chunk, servers - 1,
                               reductions=(Reduction(2, chunk * len(rules)),) if reduce else (),
                               label=f"{'reduce-scatter' if reduce else 'all-gather'} on {len(rules)} rings")
            builder.add(step, lambda: self._ring_steps(builder, step, g, orders, reduce=reduce))

        if reducing and g > 1:
            intra(True)
        if reducing and rules:
            inter(True)
        if gathering and rules:
            inter(False)
        if gathering and g > 1:
            intra(False)
        return builder

    @staticmethod
    def _ring_steps(builder: ScheduleBuilder, step: CompactStep, g: int, orders: np.ndarray, *, reduce: bool):
        """Rings between servers: GPU l of the server at ring index r talks to GPU l of r + 1."""
        parts, servers = orders.shape
        ring_index = np.arange(servers, dtype=np.int64)
        ring = np.repeat(np.arange(parts, dtype=np.int64), servers * g)
        local = np.tile(np.repeat(np.arange(g, dtype=np.int64), servers), parts)
        sender_server = np.tile(orders, (1, g)).reshape(parts, g, servers).reshape(-1)
        receiver_server = np.tile(orders[:, (ring_index + 1) % servers], (1, g)).reshape(-1)
        senders, receivers = local + g * sender_server, local + g * receiver_server
        for t in range(servers - 1):
            owner_index = (ring_index - t - 1) % servers if reduce else (ring_index - t) % servers
            owner = np.tile(orders[:, owner_index], (1, g)).reshape(-1)
            slots = (local + g * owner) * parts + ring
            yield builder.rows(senders, receivers, slots, slots, reduce, step)

    @staticmethod
    def _intra_steps(builder: ScheduleBuilder, step: CompactStep, g: int, servers: int, parts: int, *,
                     reduce: bool):
        """A ring inside every server over all chunk parts with one local digit at a time."""
        n = g * servers
        position = np.arange(n, dtype=np.int64)
        local, server = position % g, position // g
        receivers = (local + 1) % g + g * server
        others = (np.arange(servers, dtype=np.int64)[:, None] * g * parts
                  + np.arange(parts, dtype=np.int64)[None, :]).ravel()
        for t in range(g - 1):
            digit = (local - t - 1) % g if reduce else (local - t) % g
            slots = (digit * parts)[:, None] + others[None, :]
            width = slots.shape[1]
            src, dst = np.repeat(position, width), np.repeat(receivers, width)
            yield builder.rows(src, dst, slots.ravel(), slots.ravel(), reduce, step)
