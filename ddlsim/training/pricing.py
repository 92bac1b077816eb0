"""Prices for the tasks of a workload: one collective call, one compute task, each cached.

`training/` does not care where a price comes from. It receives two callables:

- a collective timer, ``CollectiveCall -> CollectiveEstimate`` for ONE call (count 1), usually
  `ddlsim.network` on a fabric with an algorithm (see `network_timer`);
- a compute timer, ``ComputeTask -> ComputeEstimate`` for ONE task (count 1), usually a
  `ddlsim.compute` ComputeModel.

Tests pass small fakes. `Pricer` memoises both, because a workload repeats the same call and
the same task many times (every layer, every bucket of the same size).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ddlsim.types import CollectiveCall, CollectiveEstimate, ComputeEstimate, ComputeTask

CollectiveTimer = Callable[[CollectiveCall], CollectiveEstimate]
ComputeTimer = Callable[[ComputeTask], ComputeEstimate]


def _call_key(call: CollectiveCall) -> tuple[Any, ...]:
    # Phase, name and count do not change the price of one call.
    return (call.op, call.size_bytes, call.group, call.root)


def _task_key(task: ComputeTask) -> tuple[Any, ...]:
    return (task.signature, task.phase, task.flop, task.memory_bytes, task.name)


@dataclass
class Pricer:
    """Memoised prices of single collective calls and single compute tasks."""

    collective_timer: CollectiveTimer
    compute_timer: ComputeTimer
    _collectives: dict[tuple[Any, ...], CollectiveEstimate] = field(default_factory=dict, repr=False)
    _computes: dict[tuple[Any, ...], ComputeEstimate] = field(default_factory=dict, repr=False)

    def collective(self, call: CollectiveCall) -> CollectiveEstimate:
        key = _call_key(call)
        estimate = self._collectives.get(key)
        if estimate is None:
            estimate = self.collective_timer(call)
            self._collectives[key] = estimate
        return estimate

    def compute(self, task: ComputeTask) -> ComputeEstimate:
        key = _task_key(task)
        estimate = self._computes.get(key)
        if estimate is None:
            estimate = self.compute_timer(task)
            self._computes[key] = estimate
        return estimate
