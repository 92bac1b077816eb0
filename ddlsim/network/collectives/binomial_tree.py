"""Binomial-tree reduce and broadcast with whole buffers: WRHT's "BT" baseline (Section 3.3, Fig. 2a).

Positions are counted from the root, q = (p - root) mod n. Reduce step i (i = 1 .. ceil(log2 n))
cuts the positions into blocks of 2^i; in each block, position 2^(i-1) sends its partial sum to
the block's first position, which adds it. Broadcast runs the same edges in reverse order,
copying. An all-reduce is the reduce then the broadcast: 2 ceil(log2 n) steps of the whole
buffer (Table 1: 20 on 1,024 ranks; Fig. 2a: 8 on 15).

The core's `binary_tree` has the same step count but heap edges (p -> 2p + 1, 2p + 2), which on
a ring are long, overlapping lightpaths: its deepest level alone needs n/2 wavelengths. The
binomial tree's edges of one step are disjoint stretches of the ring, one wavelength each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.patterns import Pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


def binomial_edges(n: int, level: int) -> tuple[np.ndarray, np.ndarray]:
    """(child, parent) root-relative positions of reduce step `level` (1-based)."""
    half = 1 << (level - 1)
    child = np.arange(half, n, 2 * half, dtype=np.int64)
    return child, child - half


@dataclass
class BinomialTreeConfig:
    name: str = "binomial_tree"


@ALGORITHMS.register("binomial_tree", BinomialTreeConfig)
@dataclass(frozen=True)
class BinomialTree(CollectiveAlgorithm):
    """Binomial-tree reduce then broadcast of whole buffers (WRHT's BT): 2 ceil(log2 n) steps."""

    name: str = "binomial_tree"
    ops: ClassVar[frozenset[CollectiveOp]] = frozenset({Op.ALL_REDUCE, Op.REDUCE, Op.BROADCAST})

    @classmethod
    def from_config(cls, config: BinomialTreeConfig) -> BinomialTree:
        return cls(config.name)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        n, root, op = request.group_size, request.root, request.op
        builder = ScheduleBuilder(request, self.name, 1, explicit=explicit)
        levels = (n - 1).bit_length()
        if op in (Op.ALL_REDUCE, Op.REDUCE):
            for level in range(1, levels + 1):
                self._step(builder, level, root, reduce=True)
        if op in (Op.ALL_REDUCE, Op.BROADCAST):
            for level in range(levels, 0, -1):
                self._step(builder, level, root, reduce=False)
        return builder

    @staticmethod
    def _step(builder: ScheduleBuilder, level: int, root: int, reduce: bool) -> None:
        n = builder.n
        child, parent = binomial_edges(n, level)
        child, parent = (child + root) % n, (parent + root) % n
        src, dst = (child, parent) if reduce else (parent, child)
        kind = "reduce" if reduce else "broadcast"
        pattern = Pairs(n, src, dst, key=("binomial", kind, n, root, level), one_to_one=True, validate=False)
        reductions = (Reduction(2, builder.payload),) if reduce else ()
        step = CompactStep(pattern, builder.payload, reductions=reductions, label=f"{kind} level {level}")
        zeros = np.zeros(src.size, dtype=np.int64)
        builder.add(step, lambda: [builder.rows(src, dst, zeros, zeros, reduce, step)])

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()
