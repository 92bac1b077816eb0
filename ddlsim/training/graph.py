"""One iteration as a dependency graph of timed operations on in-order streams.

An `Op` is a piece of work with a known duration: a compute task (possibly standing for several
identical tasks run back to back) or a collective (possibly a bucket of a larger one). It runs
on a *stream*, like a CUDA stream: ops of one stream run in the order they were added, one at
a time. It may also wait for ops of other streams (`deps`). Schedules (`schedules/`, chosen by
`schedules/dispatch.py`) build the graph; `timeline.py` places it in time.

Ops are added in a topological order (every dependency is added before the op that needs it),
so placing them is a single pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveEstimate, ComputeEstimate, Phase
from ddlsim.core.work import ComputeTask

COMPUTE_STREAM = "compute"
DP_STREAM = "dp_comm"


class OpKind(StrEnum):
    COMPUTE = "compute"
    COLLECTIVE = "collective"


@dataclass(frozen=True)
class Op:
    """One timed piece of an iteration.

    `executions` is how many single tasks or calls the op stands for (count x collapsed
    repeats, or 1 for a bucket); `duration_s` is their total time. `estimate` is the price of
    one of them.
    """

    index: int
    label: str
    kind: OpKind
    stream: str
    phase: Phase
    duration_s: float
    executions: int
    deps: tuple[int, ...]
    task: ComputeTask | CollectiveCall
    estimate: ComputeEstimate | CollectiveEstimate
    stage: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.duration_s) and self.duration_s >= 0):
            raise ConfigError(f"op[{self.label}].duration_s", self.duration_s, "must be finite and >= 0")
        for dep in self.deps:
            if not 0 <= dep < self.index:
                raise ConfigError(f"op[{self.label}].deps", dep, f"must name an op added before op {self.index}")


@dataclass
class IterationGraph:
    """The ops of one iteration, in the order they were added (a topological order)."""

    ops: list[Op] = field(default_factory=list)

    def _add(self, kind: OpKind, label: str, stream: str, task: ComputeTask | CollectiveCall,
             estimate: ComputeEstimate | CollectiveEstimate, executions: int, deps: Iterable[int],
             stage: int) -> Op:
        op = Op(index=len(self.ops), label=label, kind=kind, stream=stream, phase=task.phase,
                duration_s=estimate.time_s * executions, executions=executions,
                deps=tuple(sorted(set(deps))), task=task, estimate=estimate, stage=stage)
        self.ops.append(op)
        return op

    def add_compute(self, task: ComputeTask, estimate: ComputeEstimate, *, executions: int = 1,
                    stream: str = COMPUTE_STREAM, deps: Iterable[int] = (), label: str = "", stage: int = 0) -> Op:
        return self._add(OpKind.COMPUTE, label or task.name, stream, task, estimate, executions, deps, stage)

    def add_collective(self, call: CollectiveCall, estimate: CollectiveEstimate, *, executions: int = 1,
                       stream: str = COMPUTE_STREAM, deps: Iterable[int] = (), label: str = "",
                       stage: int = 0) -> Op:
        return self._add(OpKind.COLLECTIVE, label or call.name or call.op.value, stream, call, estimate,
                         executions, deps, stage)

    def __len__(self) -> int:
        return len(self.ops)

    def streams(self) -> list[str]:
        return list(dict.fromkeys(op.stream for op in self.ops))
