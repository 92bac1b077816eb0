"""Bruck et al. (1997, RAMP [19]): ceil(log2 n) steps for all_gather, all_to_all and barrier.

- all_gather: in step b every rank i sends the blocks it holds, min(2^b, n - 2^b) of them, to
  rank i - 2^b; blocks land in their final place (slot = origin), so no rotation is needed.
- all_to_all: a local rotation (slot j holds the block for rank i + j), then in step b every rank
  sends the blocks whose index has bit b set to rank i + 2^b, then a final local permutation
  (slot o takes the block from origin o). Both local permutations are charged as copies.
- barrier: the dissemination barrier (step b: a token to rank i + 2^b).

Any group size works.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.patterns import shift_pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, ExplicitStep, Schedule

Op = CollectiveOp


def _rounds(n: int) -> int:
    return int(np.ceil(np.log2(n))) if n > 1 else 0


def _all_gather(builder: ScheduleBuilder) -> None:
    n = builder.n
    ranks = np.arange(n, dtype=np.int64)
    for b in range(_rounds(n)):
        distance = 1 << b
        count = min(distance, n - distance)
        step = CompactStep(shift_pairs(n, 1, n, -distance), builder.payload * count / n, label=f"bruck step {b}")

        def explicit(step=step, distance=distance, count=count):
            blocks = (ranks[:, None] + np.arange(count)[None, :]) % n
            dst = (ranks - distance) % n
            yield builder.rows(np.repeat(ranks, count), np.repeat(dst, count), blocks.ravel(), blocks.ravel(),
                               False, step)

        builder.add(step, explicit)


def _local(builder: ScheduleBuilder, perm: np.ndarray | None, copy_fraction: float, label: str) -> None:
    step = CompactStep(None, copy_fraction=builder.payload * copy_fraction, label=label)
    empty = np.zeros(0, dtype=np.int64)
    builder.add(step, lambda: [ExplicitStep(empty, empty, empty, empty, False, label=label, local_perm=perm)])


def _all_to_all(builder: ScheduleBuilder) -> None:
    n = builder.n
    ranks = np.arange(n, dtype=np.int64)
    slots = np.arange(n, dtype=np.int64)
    rotate = (ranks[:, None] + slots[None, :]) % n if builder.explicit else None
    _local(builder, rotate, 1.0, "bruck rotation")
    for b in range(_rounds(n)):
        distance = 1 << b
        moving = slots[(slots >> b) & 1 == 1]
        step = CompactStep(shift_pairs(n, 1, n, distance), builder.payload * moving.size / n, label=f"bruck step {b}")

        def explicit(step=step, distance=distance, moving=moving):
            src = np.repeat(ranks, moving.size)
            dst = np.repeat((ranks + distance) % n, moving.size)
            yield builder.rows(src, dst, np.tile(moving, n), np.tile(moving, n), False, step)

        builder.add(step, explicit)
    unrotate = (ranks[:, None] - slots[None, :]) % n if builder.explicit else None
    _local(builder, unrotate, (n - 1) / n if n % 2 else 1.0, "bruck inverse rotation")


def _barrier(builder: ScheduleBuilder) -> None:
    n = builder.n
    ranks = np.arange(n, dtype=np.int64)
    zero = np.zeros(n, dtype=np.int64)
    for b in range(_rounds(n)):
        distance = 1 << b
        step = CompactStep(shift_pairs(n, 1, n, distance), 0.0, label=f"dissemination step {b}")
        builder.add(step, lambda step=step, distance=distance: [
            builder.rows(ranks, (ranks + distance) % n, zero, zero, True, step)])


@dataclass
class BruckConfig:
    name: str = "bruck"


@ALGORITHMS.register("bruck", BruckConfig)
@dataclass(frozen=True)
class Bruck(CollectiveAlgorithm):
    """Bruck's log-step all_gather and all_to_all, and the dissemination barrier."""

    name: str = "bruck"
    ops = frozenset({Op.ALL_GATHER, Op.ALL_TO_ALL, Op.BARRIER})

    @classmethod
    def from_config(cls, config: BruckConfig) -> Bruck:
        return cls(config.name)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        chunks = 1 if request.op is Op.BARRIER else request.group_size
        builder = ScheduleBuilder(request, self.name, chunks, explicit=explicit)
        {Op.ALL_GATHER: _all_gather, Op.ALL_TO_ALL: _all_to_all, Op.BARRIER: _barrier}[request.op](builder)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, True).explicit_schedule()
