"""Recursive doubling all-reduce: log2 n exchanges of the whole buffer (WRHT's RD baseline).

Every rank swaps its full buffer with the rank 2^k away (in virtual ranks) and adds what it
receives, for k = 0, 1, ...: after log2 n steps every rank holds the sum. It sends n/2 times
more bytes than recursive halving and doubling (`rhd`, Rabenseifner) but in half the steps,
the choice MPICH makes for short messages; WRHT (Section 5.6) runs it on its electrical
fat-tree. Non-power-of-two groups fold as MPICH does: with p = 2^floor(log2 n) and r = n - p,
rank 2i sends to 2i + 1 (i < r), which stands for both in the exchanges, and hands the result
back at the end (two more steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.patterns import Pairs, xor_pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule


def fold_sizes(n: int) -> tuple[int, int]:
    """(p, r): the power of two taking part in the exchanges and the ranks folded into it."""
    p = 1 << (n.bit_length() - 1)
    return p, n - p


def physical(virtual: np.ndarray, folded: int) -> np.ndarray:
    """Position standing for each virtual rank: 2v + 1 for the first `folded`, then v + folded."""
    virtual = np.asarray(virtual, dtype=np.int64)
    return np.where(virtual < folded, 2 * virtual + 1, virtual + folded)


@dataclass
class RecursiveDoublingConfig:
    name: str = "recursive_doubling"


@ALGORITHMS.register("recursive_doubling", RecursiveDoublingConfig)
@dataclass(frozen=True)
class RecursiveDoubling(CollectiveAlgorithm):
    """All-reduce by log2 n pairwise exchanges of the whole buffer (MPICH's short-message choice)."""

    name: str = "recursive_doubling"
    ops: ClassVar[frozenset[CollectiveOp]] = frozenset({CollectiveOp.ALL_REDUCE})

    @classmethod
    def from_config(cls, config: RecursiveDoublingConfig) -> RecursiveDoubling:
        return cls(config.name)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        n = request.group_size
        p, r = fold_sizes(n)
        builder = ScheduleBuilder(request, self.name, 1, explicit=explicit)
        evens = 2 * np.arange(r, dtype=np.int64)
        if r:
            self._step(builder, evens, evens + 1, True, f"fold {r} ranks", ("rd-fold", n))
        virtual = np.arange(p, dtype=np.int64)
        for k in range((p - 1).bit_length()):
            label = f"exchange distance {1 << k}"
            if r == 0:  # a power of two: every position swaps with p XOR 2^k (fabrics' closed form)
                self._add(builder, xor_pairs(n, 1 << k), True, label)
                continue
            partner = virtual ^ (1 << k)
            self._step(builder, physical(virtual, r), physical(partner, r), True, label, ("rd-exchange", n, k))
        if r:
            self._step(builder, evens + 1, evens, False, f"unfold {r} ranks", ("rd-unfold", n))
        return builder

    @classmethod
    def _step(cls, builder: ScheduleBuilder, src: np.ndarray, dst: np.ndarray, reduce: bool, label: str,
              key: tuple) -> None:
        cls._add(builder, Pairs(builder.n, src, dst, key=key, one_to_one=True, validate=False), reduce, label)

    @staticmethod
    def _add(builder: ScheduleBuilder, pattern: Pairs, reduce: bool, label: str) -> None:
        reductions = (Reduction(2, builder.payload),) if reduce else ()
        step = CompactStep(pattern, builder.payload, reductions=reductions, label=label)
        zeros = np.zeros(pattern.src.size, dtype=np.int64)
        builder.add(step, lambda: [builder.rows(pattern.src, pattern.dst, zeros, zeros, reduce, step)])

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()
