"""Collectives that run beside a layer's compute: FSDP prefetch and tensor-parallel overlap.

A schedule hands every task of a step to `LayerOverlap.place` in program order. Without
``fsdp_prefetch`` or ``tp_comm`` overlap (`ddlsim.training.settings.Overlap`) every task goes on
the stage's compute stream, as before. With them:

- a ZeRO-3 parameter all-gather (``fsdp_*`` all-gather) goes on the stream ``<stream>_fsdp_gather``
  and may start as soon as the compute that consumed the gather before the previous one has
  ended (two gathers in flight at most, FSDP's ``limit_all_gathers``); the next compute op waits
  for it;
- a ZeRO-3 gradient reduce-scatter (``fsdp_*`` reduce-scatter) goes on ``<stream>_fsdp_reduce``
  behind the backward op before it; only the end of the iteration waits for it;
- a tensor-parallel collective (``tp_*``) goes on ``<stream>_tp`` and starts with the compute op
  before it (the chunked GEMM it overlaps); the next compute op waits for it.

`outstanding(stream)` lists the side-stream ops the end of the iteration must wait for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ddlsim.core.types import CollectiveCall, CollectiveOp
from ddlsim.core.work import ComputeTask
from ddlsim.training.graph import Op
from ddlsim.training.settings import Overlap

AddOp = Callable[[tuple[int, ...], str], Op]


def side_stream(call: CollectiveCall, overlap: Overlap) -> str | None:
    """The side stream suffix a collective runs on under `overlap`, or None for the compute stream."""
    name = call.name or ""
    if overlap.fsdp_prefetch and name.startswith("fsdp_"):
        if call.op is CollectiveOp.ALL_GATHER:
            return "fsdp_gather"
        if call.op is CollectiveOp.REDUCE_SCATTER:
            return "fsdp_reduce"
    if overlap.tp_comm and name.startswith("tp_"):
        return "tp"
    return None


@dataclass
class _StreamState:
    compute_start: tuple[int, ...] = ()  # what the last compute op waited for (its start)
    waiting: list[int] = field(default_factory=list)  # side ops the next compute op waits for
    consumers: list[int] = field(default_factory=list)  # compute ops that consumed each gather
    gathers_pending: int = 0
    outstanding: list[int] = field(default_factory=list)


class LayerOverlap:
    """Places a schedule's tasks on the compute stream or its side streams (module docstring)."""

    def __init__(self, overlap: Overlap) -> None:
        self.overlap = overlap
        self.active = overlap.fsdp_prefetch or overlap.tp_comm
        self._streams: dict[str, _StreamState] = {}

    def place(self, task: ComputeTask | CollectiveCall, deps: Iterable[int], stream: str, last_on_stream: int | None,
              add: AddOp) -> tuple[Op, bool]:
        """Add `task` through `add(deps, stream)` (the caller's own way of adding it); returns the op
        and whether it went on the compute stream."""
        deps = tuple(deps)
        side = side_stream(task, self.overlap) if self.active and isinstance(task, CollectiveCall) else None
        if side is None:
            if not self.active:
                return add(deps, stream), True
            state = self._streams.setdefault(stream, _StreamState())
            start = deps + ((last_on_stream,) if last_on_stream is not None else ())
            op = add(deps + tuple(state.waiting), stream)
            if isinstance(task, ComputeTask):
                state.compute_start = start + tuple(state.waiting)
                for _ in range(state.gathers_pending):
                    state.consumers.append(op.index)
                state.gathers_pending = 0
            state.waiting = []
            return op, True
        state = self._streams.setdefault(stream, _StreamState())
        side_name = f"{stream}_{side}"
        if side == "fsdp_gather":
            gate = (state.consumers[-2],) if len(state.consumers) >= 2 else ()
            op = add(deps + gate, side_name)
            state.waiting.append(op.index)
            state.gathers_pending += 1
        elif side == "fsdp_reduce":
            after = (last_on_stream,) if last_on_stream is not None else ()
            op = add(deps + after, side_name)
        else:
            op = add(deps + state.compute_start, side_name)
            state.waiting.append(op.index)
        state.outstanding.append(op.index)
        return op, False

    def outstanding(self, stream: str) -> tuple[int, ...]:
        """Side-stream ops of `stream` that the end of the iteration must wait for (and forgets them)."""
        state = self._streams.get(stream)
        if state is None:
            return ()
        pending = tuple(dict.fromkeys(state.outstanding + state.waiting))
        state.outstanding, state.waiting = [], []
        return pending
