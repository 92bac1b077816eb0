"""Pipelined tree broadcast (and reduce, and their all_reduce) over a k-ary heap tree.

The buffer is cut into k chunks that stream down the tree: in step t a node at depth d receives
chunk t - d + 1 from its parent, so a broadcast takes k + h - 1 steps of size / k for a tree of
height h (RAMP Eq. 1 with diameter s = h + 1: k + s - 2 steps). Reduce streams chunks up the
tree the same way (a parent adds its children's chunk to its own), and all_reduce is a pipelined
reduce followed by a pipelined broadcast.

Unless `chunks` fixes k, it is the alpha-beta optimum of (k + h - 1)(alpha + size f beta / k),
k = sqrt((h - 1) size f beta / alpha), rounded and bounded by `max_chunks`, with alpha and beta
the fabric's nominal values and f the fanout (1 where the fabric can multicast).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.tree_shapes import Tree, heap_tree, runs
from ddlsim.network.patterns import Pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


def pipelined_phase(builder: ScheduleBuilder, tree: Tree, chunks: int, up: bool) -> None:
    n, height = builder.n, tree.height
    child, parent = tree.edges()
    classes = height - tree.depth[child] if up else tree.depth[child] - 1
    src, dst = (child, parent) if up else (parent, child)
    pattern = Pairs(n, src, dst, classes=classes, multicast=not up,
                    key=("pipelined tree", "up" if up else "down", tree.key))
    steps = np.arange(chunks + height - 1)
    low, high = np.maximum(0, steps - chunks + 1), np.minimum(height - 1, steps)
    fraction = builder.payload / chunks
    fan_in = tree.children_count + 1
    most = np.zeros(steps.size, dtype=np.int64)
    if up:  # the largest fan-in of the levels a step adds into, from its few distinct windows
        level_fan_in = np.zeros(height, dtype=np.int64)
        np.maximum.at(level_fan_in, classes, fan_in[dst])
        windows, inverse = np.unique(np.stack([low, high], axis=1), axis=0, return_inverse=True)
        most = np.array([level_fan_in[first:last + 1].max() for first, last in windows])[inverse.ravel()]
        most[most < 2] = 0
    fan_ins = most.tolist()
    label = f"pipelined tree {'up' if up else 'down'}"
    for start, stop in runs(fan_ins):
        step = CompactStep(pattern, fraction, stop - start, windows=(low[start:stop], high[start:stop]),
                           reductions=(Reduction(fan_ins[start], fraction),) if fan_ins[start] else (),
                           label=label)

        def explicit(step=step, start=start, stop=stop):
            for t in range(start, stop):
                active = (classes >= low[t]) & (classes <= high[t])
                chunk = t - classes[active]
                yield builder.rows(src[active], dst[active], chunk, chunk, up, step, not up)

        builder.add(step, explicit)


def heap_height(n: int, fanout: int) -> int:
    """Height of a k-ary heap of n nodes (levels below the root)."""
    height, covered, level = 0, 1, 1
    while covered < n:
        level *= fanout
        covered += level
        height += 1
    return height


@dataclass
class PipelinedTreeConfig:
    name: str = "pipelined_tree"
    fanout: int = 2
    chunks: int = 0
    max_chunks: int = 1024


@ALGORITHMS.register("pipelined_tree", PipelinedTreeConfig)
@dataclass(frozen=True)
class PipelinedTree(CollectiveAlgorithm):
    """Chunks streamed down (broadcast) or up (reduce) a k-ary tree; k + h - 1 steps per pass."""

    fanout: int = 2
    chunks: int = 0
    max_chunks: int = 1024
    name: str = "pipelined_tree"
    ops = frozenset({Op.BROADCAST, Op.REDUCE, Op.ALL_REDUCE})

    @classmethod
    def from_config(cls, config: PipelinedTreeConfig) -> PipelinedTree:
        if config.fanout < 1:
            raise ConfigError("fanout", config.fanout, "must be >= 1 (1 is a chain)")
        if config.chunks < 0:
            raise ConfigError("chunks", config.chunks, "must be >= 0 (0 chooses the alpha-beta optimum)")
        if config.max_chunks < 1:
            raise ConfigError("max_chunks", config.max_chunks, "must be >= 1")
        return cls(config.fanout, config.chunks, config.max_chunks, config.name)

    def chunk_count(self, request: ScheduleRequest) -> int:
        if self.chunks:
            return self.chunks
        height = heap_height(request.group_size, self.fanout)
        if height <= 1 or request.size_bytes == 0:
            return 1
        alpha, beta = request.fabric.nominal_alpha_beta()
        spread = 1 if request.fabric.supports_multicast() else self.fanout
        best = math.sqrt((height - 1) * request.size_bytes * spread * beta / alpha) if alpha > 0 else self.max_chunks
        return int(min(max(round(best), 1), self.max_chunks))

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        return self.chunk_count(request)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        chunks = self.chunk_count(request)
        builder = ScheduleBuilder(request, self.name, chunks, explicit=explicit)
        tree = heap_tree(request.group_size, request.root, self.fanout)
        if request.op in (Op.REDUCE, Op.ALL_REDUCE):
            pipelined_phase(builder, tree, chunks, up=True)
        if request.op in (Op.BROADCAST, Op.ALL_REDUCE):
            pipelined_phase(builder, tree, chunks, up=False)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, True).explicit_schedule()
