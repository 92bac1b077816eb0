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

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ddlsim.core.caches import Memo
from ddlsim.core.types import CollectiveCall, CollectiveEstimate, ComputeEstimate
from ddlsim.core.work import ComputeTask

CollectiveTimer = Callable[[CollectiveCall], CollectiveEstimate]
ComputeTimer = Callable[[ComputeTask], ComputeEstimate]


# Fields that do not change the price of one call or task; every other field, present or future,
# is part of the cache key (read from the dataclass, never listed by hand).
PRICE_NEUTRAL_CALL_FIELDS = frozenset({"phase", "name", "count"})
PRICE_NEUTRAL_TASK_FIELDS = frozenset({"count"})


def _key_of(record_type: type, neutral: frozenset[str]) -> Callable[[Any], tuple[Any, ...]]:
    names = [item.name for item in dataclasses.fields(record_type) if item.name not in neutral]
    getter = operator.attrgetter(*names)
    return getter if len(names) > 1 else (lambda record: (getter(record),))  # attrgetter of 2+ names: a tuple


_call_key = _key_of(CollectiveCall, PRICE_NEUTRAL_CALL_FIELDS)
_task_key = _key_of(ComputeTask, PRICE_NEUTRAL_TASK_FIELDS)


@dataclass
class Pricer:
    """Memoised prices of single collective calls and single compute tasks (its own two caches)."""

    collective_timer: CollectiveTimer
    compute_timer: ComputeTimer
    _collectives: Memo = field(default_factory=lambda: Memo("pricer.collectives"), repr=False)
    _computes: Memo = field(default_factory=lambda: Memo("pricer.computes"), repr=False)

    def collective(self, call: CollectiveCall) -> CollectiveEstimate:
        key = _call_key(call)
        estimate = self._collectives.get(key)
        if estimate is None:
            estimate = self._collectives.put(key, self.collective_timer(call))
        return estimate

    def compute(self, task: ComputeTask) -> ComputeEstimate:
        key = _task_key(task)
        estimate = self._computes.get(key)
        if estimate is None:
            estimate = self._computes.put(key, self.compute_timer(task))
        return estimate
