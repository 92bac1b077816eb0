"""Data-parallel gradient synchronisation split into buckets that overlap with backward.

Which collectives are the gradient synchronisation? The reducing collectives (all-reduce,
reduce-scatter, reduce) found in the blocks that follow the last block holding backward compute,
before the next compute task (normally the optimizer step). This is where every partitioner
puts the DP all-reduce; a collective inside a backward block (a tensor-parallel all-reduce, a
DLRM backward all-to-all) keeps blocking the computation that follows it.

Gradients are assumed to be produced in proportion to backward compute time: a bucket covering
the bytes up to fraction f of a gradient buffer becomes ready when the backward ops that make
up fraction f of the backward time have finished (per layer, since backward blocks are expanded
repeat by repeat). Buckets are reduced one after another on their own stream; the compute
stream's next op after the synchronisation point (the optimizer step) waits for the last one.
With ``network.contention=on`` concurrent TP and DP traffic shares the fabric (`training/contended.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, Phase
from ddlsim.core.work import ComputeTask, Workload
from ddlsim.training.graph import DP_STREAM, IterationGraph
from ddlsim.training.pricing import Pricer

MAX_BUCKETS = 100_000


@dataclass(frozen=True)
class GradientSync:
    """The gradient-synchronisation collectives of a workload, and where they sit.

    `positions` are (block index, task index) pairs; `total_bytes[i]` is the whole buffer of
    `calls[i]` over its count and its block's repeats.
    """

    positions: tuple[tuple[int, int], ...]
    calls: tuple[CollectiveCall, ...]
    total_bytes: tuple[int, ...]

    @property
    def first(self) -> tuple[int, int]:
        return self.positions[0]


def find_gradient_sync(workload: Workload) -> GradientSync | None:
    """The gradient-synchronisation collectives, or None when there are none to overlap."""
    last_backward = None
    for index, block in enumerate(workload.blocks):
        if any(isinstance(task, ComputeTask) and task.phase is Phase.BACKWARD for task in block.tasks):
            last_backward = index
    if last_backward is None:
        return None
    positions, calls, totals = [], [], []
    for block_index in range(last_backward + 1, len(workload.blocks)):
        block = workload.blocks[block_index]
        for task_index, task in enumerate(block.tasks):
            if isinstance(task, ComputeTask):
                return GradientSync(tuple(positions), tuple(calls), tuple(totals)) if positions else None
            if task.op.reduces:
                positions.append((block_index, task_index))
                calls.append(task)
                totals.append(task.size_bytes * task.count * block.repeat)
    return GradientSync(tuple(positions), tuple(calls), tuple(totals)) if positions else None


def _bucket_sizes(total_bytes: int, bucket_bytes: int) -> list[int]:
    if total_bytes == 0:
        return [0]
    count = math.ceil(total_bytes / bucket_bytes)
    return [bucket_bytes] * (count - 1) + [total_bytes - bucket_bytes * (count - 1)]


def add_gradient_buckets(graph: IterationGraph, sync: GradientSync, backward_ops: list[int], pricer: Pricer,
                         bucket_bytes: int) -> tuple[int, ...]:
    """Add the bucket ops on the DP stream; return the op the next compute op must wait for."""
    planned = sum(math.ceil(total / bucket_bytes) for total in sync.total_bytes)
    if planned > MAX_BUCKETS:
        raise ConfigError("training.bucket_size", bucket_bytes,
                          f"splits the gradients into {planned} buckets; at most {MAX_BUCKETS} are allowed")
    weights = np.array([graph.ops[index].duration_s for index in backward_ops], dtype=float)
    if not weights.sum() > 0:
        weights = np.array([graph.ops[index].executions for index in backward_ops], dtype=float)
    produced = np.cumsum(weights) / weights.sum()
    produced[-1] = 1.0
    buckets = []
    for call_index, (call, total) in enumerate(zip(sync.calls, sync.total_bytes, strict=True)):
        offset = 0
        for bucket_index, size in enumerate(_bucket_sizes(total, bucket_bytes)):
            offset += size
            needed = offset / total if total else 1.0
            ready = int(np.searchsorted(produced, needed - 1e-12, side="left"))
            buckets.append((ready, call_index, bucket_index, call, size))
    buckets.sort(key=lambda item: item[:3])
    last = None
    for ready, _, bucket_index, call, size in buckets:
        bucket = CollectiveCall(op=call.op, size_bytes=size, group=call.group, phase=call.phase, name=call.name,
                                root=call.root)
        last = graph.add_collective(bucket, pricer.collective(bucket), stream=DP_STREAM,
                                    deps=(backward_ops[ready],),
                                    label=f"{call.name or call.op.value}.bucket[{bucket_index}]")
    return (last.index,) if last is not None else ()
