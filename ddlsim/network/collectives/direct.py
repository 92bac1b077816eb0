"""Direct (mesh) collectives: every rank talks to every rank it must, in one step per phase.

- all_to_all: each rank sends block j to rank j (one step);
- all_gather: each rank sends its block to all others (one step, the same data to every peer);
- reduce_scatter: each rank sends block j to rank j, which adds n inputs at once (n-to-1);
- all_reduce: reduce_scatter then all_gather (SiPAC's "Mesh": 2 steps);
- broadcast / scatter: the root sends to everyone; reduce / gather: everyone sends to the root;
- barrier: everyone sends an empty token to everyone.

Latency is minimal (one or two steps) and the reductions are n-to-1 (RAMP 8.4.2), but each rank
drives n - 1 flows at once, so a fabric's per-node bandwidth and oversubscription decide the
rest. Every group size is handled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import ALL_OPS, CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


def _mesh_rows(n: int, reduce: bool, slot_of_pair) -> tuple[np.ndarray, ...]:
    src = np.repeat(np.arange(n), n)
    dst = np.tile(np.arange(n), n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    src_slot, dst_slot = slot_of_pair(src, dst)
    return src, dst, src_slot, dst_slot, reduce


def _mesh_phase(builder: ScheduleBuilder, kind: str) -> None:
    n = builder.n
    multicast = kind in ("all-gather", "barrier")
    pattern = Mesh(n, np.zeros(n, dtype=np.int64), multicast=multicast, key=("direct", kind))
    fraction = builder.payload / n
    reductions = (Reduction(n, fraction),) if kind == "reduce-scatter" else ()
    step = CompactStep(pattern, fraction, reductions=reductions, label=f"direct {kind}", circuit=("direct mesh", n))
    slots = {
        "all-to-all": lambda src, dst: (dst, src),
        "reduce-scatter": lambda src, dst: (dst, dst),
        "all-gather": lambda src, dst: (src, src),
        "barrier": lambda src, dst: (src, src),
    }[kind]
    builder.add(step, lambda: [builder.rows(*_mesh_rows(n, kind == "reduce-scatter", slots), step, multicast)])


def _rooted_phase(builder: ScheduleBuilder, kind: str) -> None:
    n, root = builder.n, builder.request.root
    others = np.delete(np.arange(n, dtype=np.int64), root)
    whole = kind in ("broadcast", "reduce")
    fraction = builder.payload * (1.0 if whole else 1.0 / n)
    towards_root = kind in ("reduce", "gather")
    src, dst = (others, np.full(others.size, root)) if towards_root else (np.full(others.size, root), others)
    pattern = Pairs(n, src, dst, multicast=kind == "broadcast", key=("direct", kind, root))
    reductions = (Reduction(n, fraction),) if kind == "reduce" else ()
    step = CompactStep(pattern, fraction, reductions=reductions, label=f"direct {kind}")

    def explicit():
        slots = np.zeros(others.size, dtype=np.int64) if whole else others
        yield builder.rows(src, dst, slots, slots, kind == "reduce", step, kind == "broadcast")

    builder.add(step, explicit)


def build_direct(builder: ScheduleBuilder) -> None:
    op = builder.request.op
    if op is Op.ALL_TO_ALL:
        _mesh_phase(builder, "all-to-all")
    elif op is Op.BARRIER:
        _mesh_phase(builder, "barrier")
    elif op in (Op.REDUCE_SCATTER, Op.ALL_REDUCE):
        _mesh_phase(builder, "reduce-scatter")
        if op is Op.ALL_REDUCE:
            _mesh_phase(builder, "all-gather")
    elif op is Op.ALL_GATHER:
        _mesh_phase(builder, "all-gather")
    else:
        _rooted_phase(builder, op.value)


@dataclass
class DirectConfig:
    name: str = "direct"


@ALGORITHMS.register("direct", DirectConfig)
@dataclass(frozen=True)
class Direct(CollectiveAlgorithm):
    """Direct / mesh: every pair at once; one step per phase, n - 1 flows per rank."""

    name: str = "direct"
    ops = ALL_OPS

    @classmethod
    def from_config(cls, config: DirectConfig) -> Direct:
        return cls(config.name)

    def _chunks(self, op: CollectiveOp, n: int) -> int:
        return 1 if op in (Op.BROADCAST, Op.REDUCE) else n

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        builder = ScheduleBuilder(request, self.name, self._chunks(request.op, request.group_size), explicit=False)
        build_direct(builder)
        return builder.schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        builder = ScheduleBuilder(request, self.name, self._chunks(request.op, request.group_size), explicit=True)
        build_direct(builder)
        return builder.explicit_schedule()
