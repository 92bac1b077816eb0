"""The per-iteration tail of a pipelined iteration, all stages at once (`stages.add_tail` in
closed form).

After its last pipeline step each stage runs the per-iteration blocks it takes part in, in
order, on its stream. A collective whose group spans stages starts on all of them together, when
the last of them is ready; others start when their own stage is free. With ``dp_backward``
overlap a gradient reduction becomes buckets on the stage's gradient stream, each released when
the last micro-batch's backward has produced its bytes, and the next op of the stage waits for
the last bucket. A stage's bucket chain ends at max(free + all buckets, max_k release_k + the
buckets from k on), so stages that share their steps share one table of releases.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.types import CollectiveCall, Phase
from ddlsim.core.work import Workload
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.stages import is_cross_stage
from ddlsim.training.timeline import ROUNDING

# Stage masks kept (a block's stages and the pipeline depth).
MASKS_KEPT = 256
_MAX = np.maximum.reduce  # what ndarray.max and np.max call, without their Python wrappers


@dataclass
class TailResult:
    """What the tail adds: every stage's end, the focus stage's ops and busy time, counts."""

    end_s: np.ndarray
    focus_ops: list = field(default_factory=list)  # (task, estimate, executions) in the order added
    focus_stream_s: float = 0.0  # the focus stage's tail ops on its own stream
    focus_bucket_extra_s: float = 0.0  # its bucket time that overlaps nothing on its stream
    num_ops: int = 0
    by_source: dict = field(default_factory=lambda: defaultdict(float))
    devices: dict = field(default_factory=dict)


def tail_masks(workload_tail, stages: int) -> list[np.ndarray | None]:
    """Per tail block, the stages it runs on (`_mask`), for `tail_compute` and `run_tail`."""
    return [_mask(block, stages) for block in workload_tail]


def tail_compute(workload_tail, pricer: Pricer, stages: int, masks: list | None = None) -> np.ndarray:
    """Compute time of the tail on each stage (known before any timing: it sets the focus stage)."""
    compute = np.zeros(stages)
    masks = tail_masks(workload_tail, stages) if masks is None else masks
    for block, mask in zip(workload_tail, masks, strict=True):
        for task in block.tasks:
            if not isinstance(task, CollectiveCall):
                time_s = pricer.compute(task).time_s * block.repeat * task.count
                if mask is None:
                    compute += time_s
                else:
                    compute[mask] += time_s
    return compute


def _mask(block, stages: int) -> np.ndarray | None:
    """The stages `block` runs on as a read-only boolean mask; None where it runs on every stage."""
    if not block.stages:
        return None
    key = (block.stages, stages)
    return PROCESS_CACHES.memo("tail stage masks", MASKS_KEPT).get_or_make(key, lambda: _stage_mask(*key))


def _stage_mask(members: tuple[int, ...], stages: int) -> np.ndarray | None:
    mask = np.zeros(stages, dtype=bool)
    mask[[stage for stage in members if stage < stages]] = True
    mask.flags.writeable = False
    return None if mask.all() else mask


def run_tail(workload: Workload, pricer: Pricer, pipeline, end: np.ndarray, last_backward: np.ndarray,
             focus: int, focus_intervals: list[tuple[float, float]], masks: list | None = None) -> TailResult:
    """`focus_intervals`: the focus stage's stream intervals from its last micro-batch's first
    backward step on (what buckets may overlap); `masks`: `tail_masks` of the pipeline's tail."""
    p = pipeline.stages
    masks = tail_masks(pipeline.steps.tail, p) if masks is None else masks
    free = np.array(end, dtype=float)
    dp_free = np.zeros(p)
    waiting = np.full(p, -np.inf)
    result = TailResult(end_s=free)
    stage_ranks = workload.num_ranks // p
    bucket_bytes = pipeline.bucket_size_bytes
    focus_buckets: list[tuple[float, float]] = []
    focus_stream = list(focus_intervals)
    every = np.ones(p, dtype=bool)
    pending = False  # some stage waits for its gradient buckets (`waiting` above -inf somewhere)
    for block, mask in zip(pipeline.steps.tail, masks, strict=True):
        members = p if mask is None else np.count_nonzero(mask)  # the count mask.sum() gives, without its Python
        if not members:
            continue
        for task in block.tasks:
            executions = block.repeat * task.count
            collective = isinstance(task, CollectiveCall)
            if pipeline.overlap and collective and task.op.reduces and task.phase is Phase.BACKWARD \
                    and not is_cross_stage(task, stage_ranks):
                _buckets(result, pipeline, pricer, task, executions, every if mask is None else mask, free, dp_free,
                         waiting, last_backward, bucket_bytes, focus, focus_buckets)
                pending = True
                continue
            start = free if mask is None else free[mask]  # the member stages' free times (whole array: all)
            if collective and is_cross_stage(task, stage_ranks):
                estimate = pricer.collective(task)
                ready = float(_MAX(start, axis=None))
                if pending:
                    ready = max(ready, float(_MAX(waiting if mask is None else waiting[mask], axis=None)))
                    pending = _consume(waiting, mask)
                start = np.maximum(start, ready)
            else:
                estimate = pricer.collective(task) if collective else pricer.compute(task)
                if pending:
                    start = np.maximum(start, waiting if mask is None else waiting[mask])
                    pending = _consume(waiting, mask)
            duration = estimate.time_s * executions
            _record(result, focus, every if mask is None else mask, task, estimate, executions, members, start,
                    duration, focus_stream)
            if mask is None:
                np.add(start, duration, out=free)
            else:
                free[mask] = start + duration
    result.end_s = np.maximum(free, dp_free)
    result.focus_stream_s = sum(end_s - start_s for start_s, end_s in focus_stream[len(focus_intervals):])
    if focus_buckets:
        result.focus_bucket_extra_s = _union(focus_stream + focus_buckets) - _union(focus_stream)
    return result


def _consume(waiting: np.ndarray, mask: np.ndarray | None) -> bool:
    """The member stages stop waiting; whether other stages may still wait."""
    if mask is None:
        waiting.fill(-np.inf)
        return False
    waiting[mask] = -np.inf
    return True


def _record(result: TailResult, focus: int, mask: np.ndarray, task, estimate, executions: int, members: int,
            start: np.ndarray, duration: float, focus_stream: list) -> None:
    result.num_ops += members
    if not isinstance(task, CollectiveCall):
        result.by_source[estimate.source.value] += estimate.time_s * executions * members
        result.devices[estimate.device] = None
    if mask[focus]:
        result.focus_ops.append((task, estimate, executions))
        position = focus if members == len(mask) else int(np.count_nonzero(mask[:focus]))
        begin = float(start[position])
        focus_stream.append((begin, begin + duration))


def _buckets(result: TailResult, pipeline, pricer: Pricer, call: CollectiveCall, executions: int, mask: np.ndarray,
             free: np.ndarray, dp_free: np.ndarray, waiting: np.ndarray, last_backward: np.ndarray,
             bucket_bytes: int, focus: int, focus_buckets: list) -> None:
    """`stages._buckets` for every stage of `mask`: the chain of buckets on each stage's gradient stream."""
    total = call.size_bytes * executions
    count = max(1, math.ceil(total / bucket_bytes))
    sizes = [min(bucket_bytes, total - index * bucket_bytes) if total else 0 for index in range(count)]
    priced = [pricer.collective(CollectiveCall(call.op, size, call.group, call.phase, call.name, root=call.root))
              for size in sizes]
    durations = np.array([estimate.time_s for estimate in priced])
    after = np.concatenate((np.cumsum(durations[::-1])[::-1], [0.0]))  # buckets from k on
    stages = np.nonzero(mask)[0]
    classes: dict[tuple, list[int]] = defaultdict(list)
    for stage in stages:
        classes[tuple(id(pipeline.costs.backward[c]) for c in pipeline.stage_chunks(int(stage)))].append(int(stage))
    for members in classes.values():
        release = _releases(pipeline, members[0], sizes, total)  # (group, offset) per bucket, or None
        rows = np.array(members)
        if release is None:  # no backward op: every bucket waits for the stage's last op
            ready = free[rows][:, None] + np.zeros(count)
        else:
            groups, offsets = release
            ready = last_backward[rows][:, groups] + offsets
        chain_end = np.maximum(dp_free[rows] + after[0], _MAX(ready + after[:-1], axis=1))
        if focus in members:
            clock = float(dp_free[focus])
            row = members.index(focus)
            for index in range(count):
                begin = max(clock, float(ready[row, index]))
                clock = begin + float(durations[index])
                focus_buckets.append((begin, clock))
        dp_free[rows] = chain_end
        waiting[rows] = np.maximum(waiting[rows], chain_end)
    result.num_ops += count * len(stages)
    if mask[focus]:
        result.focus_ops.extend((CollectiveCall(call.op, size, call.group, call.phase, call.name, root=call.root),
                                 estimate, 1) for size, estimate in zip(sizes, priced, strict=True))


def _releases(pipeline, stage: int, sizes: list[int], total: int) -> tuple[np.ndarray, np.ndarray] | None:
    """For each bucket of `stage`, the chunk group and end offset of the backward op that releases it
    (the last micro-batch's backward ops of the stage's chunks, in the order they run)."""
    durations, groups, offsets = [], [], []
    for group in reversed(range(pipeline.virtual)):
        _, backward, backward_ends, _ = pipeline.expanded[id(pipeline.costs.backward[pipeline.chunk(group, stage)])]
        durations.extend(backward)
        groups.extend([group] * len(backward))
        offsets.extend(backward_ends)
    if not durations:
        return None
    if not sum(durations) > 0:
        durations = [1.0] * len(durations)
    produced = np.cumsum(durations)
    ends = np.cumsum(sizes)
    needed = ends / total if total else np.ones(len(sizes))
    index = np.minimum(np.searchsorted(produced, needed * produced[-1] * (1 - 1e-12), side="left"), len(produced) - 1)
    return np.array(groups)[index], np.array(offsets)[index]


def _union(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of intervals (as `timeline._idle_s` measures busy time)."""
    busy, reach = 0.0, -math.inf
    for start, end in sorted(interval for interval in intervals if interval[1] > interval[0]):
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    return busy


__all__ = ["ROUNDING", "TailResult", "run_tail", "tail_compute", "tail_masks"]
