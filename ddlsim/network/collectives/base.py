"""What every collective algorithm provides: which ops it can run, and both views of a schedule.

An algorithm subclass is a frozen dataclass registered in `ddlsim.core.registry.ALGORITHMS` with a
config schema (its parameters). It implements

- `ops` (class attribute) and optionally `supports(fabric, op, group_size)`, returning None when
  it can run or a sentence saying why not (co-designed algorithms accept only their fabric;
  some reject group sizes);
- `build_compact(request)` -> `Schedule`, cheap enough for 65,536 ranks;
- `build_explicit(request)` -> `ExplicitSchedule`, every chunk moved, for small groups;
- optionally `verification_fabric(group_size)` and `verification_sizes()`, used by the
  functional verification suite that runs over the whole registry.

Point-to-point send/recv and one-rank groups are handled here for every algorithm.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.patterns import Pairs
from ddlsim.network.placement import Placement
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, ExplicitStep, Schedule

ALL_OPS = frozenset(CollectiveOp) - {CollectiveOp.SEND_RECV}
DEFAULT_VERIFICATION_SIZES = (*range(2, 65), 96, 100, 128)


@dataclass(frozen=True)
class ScheduleRequest:
    """One collective to schedule: op, group, root, message size, and the fabric it runs on."""

    op: CollectiveOp
    group_size: int
    root: int
    size_bytes: int
    fabric: Fabric
    layout: GroupLayout
    placement: Placement

    @cached_property
    def hierarchy(self) -> tuple[int, ...]:
        return self.fabric.hierarchy(self.layout, self.placement)

    @classmethod
    def single_group(cls, op: CollectiveOp | str, group_size: int, fabric: Fabric, *, root: int = 0,
                     size_bytes: int = 1 << 20, placement: Placement | None = None) -> ScheduleRequest:
        """One group of `group_size` ranks, placed by the fabric unless `placement` is given (a RAMP
        under contention_aware needs `ddlsim.network.placing.place_ranks`'s)."""
        layout = GroupLayout(size=group_size)
        placement = placement if placement is not None else fabric.place(group_size)
        return cls(CollectiveOp(op), group_size, root, size_bytes, fabric, layout, placement)


class CollectiveAlgorithm:
    """Base class of collective algorithms (subclasses are frozen dataclasses with `name`)."""

    name: str
    ops: ClassVar[frozenset[CollectiveOp]] = frozenset()
    size_dependent: ClassVar[bool] = False
    is_selector: ClassVar[bool] = False

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        """None if this algorithm can run `op` on `group_size` ranks of `fabric`, else why not."""
        op = CollectiveOp(op)
        if op is CollectiveOp.SEND_RECV:
            return None if group_size == 2 else "send_recv needs a group of 2"
        if op not in self.ops:
            return f"{self.name} does not implement {op.value}"
        return None

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        """What, beyond (op, group, root, fabric, layout, placement), the schedule depends on."""
        return ()

    def compact(self, request: ScheduleRequest) -> Schedule:
        if request.op is CollectiveOp.SEND_RECV:
            return send_recv_compact(request, self.name)
        if request.group_size == 1:
            return Schedule(request.op, 1, self.name, (), request.root)
        return self.build_compact(request)

    def explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        if request.op is CollectiveOp.SEND_RECV:
            return send_recv_explicit(request, self.name)
        if request.group_size == 1:
            return ExplicitSchedule(request.op, 1, self.name, (), 1, 1.0, request.root)
        return self.build_explicit(request)

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        raise NotImplementedError

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        raise NotImplementedError

    def verification_fabric(self, group_size: int) -> Fabric:
        """A fabric on which the verification suite runs this algorithm for `group_size` ranks."""
        from ddlsim.network.fabrics.ideal import IdealSwitch

        return IdealSwitch(bandwidth_bps=400e9, latency_s=1e-6, num_nodes=max(group_size, 1))

    def verification_sizes(self) -> tuple[int, ...]:
        return DEFAULT_VERIFICATION_SIZES


def send_recv_compact(request: ScheduleRequest, algorithm: str) -> Schedule:
    sender = request.root
    pattern = Pairs(2, [sender], [1 - sender], key=("send_recv", sender))
    return Schedule(CollectiveOp.SEND_RECV, 2, algorithm, (CompactStep(pattern, 1.0, label="send"),), sender)


def send_recv_explicit(request: ScheduleRequest, algorithm: str) -> ExplicitSchedule:
    sender = request.root
    circuit = send_recv_compact(request, algorithm).steps[0].circuit
    step = ExplicitStep(np.array([sender]), np.array([1 - sender]), np.array([0]), np.array([0]), False,
                        circuit=circuit, label="send")
    return ExplicitSchedule(CollectiveOp.SEND_RECV, 2, algorithm, (step,), 1, 1.0, sender)


def barrier_fraction(op: CollectiveOp) -> float:
    """Barrier messages carry no payload (tokens); every other op carries its data."""
    return 0.0 if op is CollectiveOp.BARRIER else 1.0
