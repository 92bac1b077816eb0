"""A pipelined workload's steps, priced once: what the closed-form iteration needs to know.

The 1F1B and interleaved schedules (`one_f_one_b.py`, `exchanges.py`) lay out, for every model
chunk, a forward step F and a backward step B per micro-batch: the per-micro-batch blocks that
run on the chunk, in order, back to back on the stage's stream. This module prices each step once
(`StepCost`: its duration, when it hands over to the next chunk, its compute time and its ops)
so that the closed forms of `closed_form.py` and `rounds.py` never look at single ops.

A step hands over at the end of its last send/recv (the stage-to-stage send), or of its last op
when it has none; `lag_s` is the time from that hand-over to the end of the step (0 when the send
is the step's last op) and is infinite for an empty step, whose neighbour then waits for nothing,
as in `stages.py`. `send_s` is the time of its hand-over blocks (`stages.is_handover`), which
the interleaved schedule issues in its exchange after the step's other ops, the body. Chunks
whose blocks are the same share one `StepCost` object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.types import CollectiveCall, CollectiveEstimate, CollectiveOp, ComputeEstimate, Phase
from ddlsim.core.work import TaskBlock
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.stages import PipelineSteps, is_handover

# Stage layouts whose chunk membership is kept (a few kB each).
MEMBERS_KEPT = 64

Priced = tuple[object, object, int]  # (task, estimate, executions) of one collapsed op


@dataclass(frozen=True)
class StepCost:
    """One forward or backward step of one chunk, its ops collapsed as the schedule adds them
    (one op per task and block, `executions` = repeat x count)."""

    ops: tuple[Priced, ...]
    duration_s: float
    lag_s: float
    compute_s: float
    blocks: tuple[TaskBlock, ...]
    compute_by_source_s: tuple[tuple[str, float], ...] = ()
    devices: tuple[str, ...] = ()
    send_s: float = 0.0
    send_ops: int = 0

    @property
    def body_s(self) -> float:
        return self.duration_s - self.send_s

    @property
    def empty(self) -> bool:
        return not self.ops

    def expanded(self, pricer: Pricer, body: bool = False) -> tuple[list[float], list[float], list[float], float]:
        """The step as the schedule writes it when it expands repeats (the last micro-batch's
        backward with ``dp_backward`` overlap): (end offset of every op, durations of its backward
        compute ops, their end offsets, lag of its hand-over). `body`: without its hand-over blocks."""
        ends, backward, backward_ends = [], [], []
        clock, handoff = 0.0, None
        for block in self.blocks:
            if body and is_handover(block):
                continue
            for _ in range(block.repeat):
                for task in block.tasks:
                    estimate = _price(pricer, task)
                    duration = estimate.time_s * task.count
                    clock += duration
                    ends.append(clock)
                    if isinstance(task, CollectiveCall):
                        if task.op is CollectiveOp.SEND_RECV:
                            handoff = clock
                    elif task.phase is Phase.BACKWARD:
                        backward.append(duration)
                        backward_ends.append(clock)
        handoff = clock if handoff is None else handoff
        return ends, backward, backward_ends, (clock - handoff) if ends else math.inf


def _price(pricer: Pricer, task) -> CollectiveEstimate | ComputeEstimate:
    return pricer.collective(task) if isinstance(task, CollectiveCall) else pricer.compute(task)


_COMPUTE, _COLLECTIVE, _SEND = 0, 1, 2  # what an op is, for `step_cost`


def _block_ops(block: TaskBlock, pricer: Pricer) -> tuple[bool, tuple[Priced, ...], tuple[tuple, ...]]:
    """A block's ops as the steps add them: (whether it is a hand-over, its collapsed ops, and per
    op its duration, kind, compute source and device)."""
    ops, entries = [], []
    repeat = block.repeat
    for task in block.tasks:
        collective = isinstance(task, CollectiveCall)
        estimate = pricer.collective(task) if collective else pricer.compute(task)
        executions = repeat * task.count
        ops.append((task, estimate, executions))
        if collective:
            entries.append((estimate.time_s * executions, _SEND if task.op is CollectiveOp.SEND_RECV else _COLLECTIVE,
                            None, None))
        else:
            entries.append((estimate.time_s * executions, _COMPUTE, estimate.source.value, estimate.device))
    return is_handover(block), tuple(ops), tuple(entries)


def step_cost(blocks: tuple[TaskBlock, ...], pricer: Pricer, seen: dict[int, tuple] | None = None) -> StepCost:
    """`seen`: `_block_ops` of blocks already priced, by id of the block (the steps of one pipeline share blocks)."""
    ops: list[Priced] = []
    clock, handoff, compute, send, send_ops = 0.0, None, 0.0, 0.0, 0
    by_source: dict[str, float] = {}
    devices: dict[str, None] = {}
    seen = {} if seen is None else seen
    for block in blocks:
        priced = seen.get(id(block))
        if priced is None:
            priced = seen[id(block)] = _block_ops(block, pricer)
        handover, block_ops, entries = priced
        ops.extend(block_ops)
        for duration, kind, source, device in entries:
            clock += duration
            if handover:
                send, send_ops = send + duration, send_ops + 1
            if kind == _SEND:
                handoff = clock
            elif kind == _COMPUTE:
                compute += duration
                by_source[source] = by_source.get(source, 0.0) + duration
                devices[device] = None
    if not ops:
        return StepCost((), 0.0, math.inf, 0.0, blocks)
    handoff = clock if handoff is None else handoff
    return StepCost(tuple(ops), clock, clock - handoff, compute, blocks, tuple(by_source.items()), tuple(devices),
                    send, send_ops)


def _members(blocks: tuple[TaskBlock, ...], chunks: int) -> tuple[tuple[int, ...], ...]:
    """For every chunk, the indices of the blocks that run on it (memoised per process by the
    blocks' stage lists: the pipelines of a sweep share them)."""
    key = (tuple(block.stages for block in blocks), chunks)
    return PROCESS_CACHES.memo("chunk members", MEMBERS_KEPT).get_or_make(key, lambda: _chunk_members(*key))


def _chunk_members(stage_lists: tuple[tuple[int, ...], ...], chunks: int) -> tuple[tuple[int, ...], ...]:
    everywhere: list[int] = []  # blocks that run on every chunk
    some: dict[int, list[int]] = {}  # chunk -> the other blocks that run on it
    for index, stages in enumerate(stage_lists):
        if not stages:
            everywhere.append(index)
            continue
        for chunk in stages:
            if chunk < chunks:
                some.setdefault(chunk, []).append(index)
    common = tuple(everywhere)
    return tuple(tuple(sorted(everywhere + some[chunk])) if chunk in some else common for chunk in range(chunks))


@dataclass(frozen=True)
class ChunkSteps:
    """The forward and backward `StepCost` of every model chunk (chunk c runs on stage c mod p)."""

    forward: tuple[StepCost, ...]
    backward: tuple[StepCost, ...]


def chunk_steps(steps: PipelineSteps, chunks: int, pricer: Pricer) -> ChunkSteps:
    seen: dict[int, tuple] = {}  # the blocks' priced ops by id, while `steps` holds them

    def costs(blocks: tuple[TaskBlock, ...]) -> tuple[StepCost, ...]:
        every_members = _members(blocks, chunks)
        cache = {members: step_cost(tuple(map(blocks.__getitem__, members)), pricer, seen)
                 for members in dict.fromkeys(every_members)}  # priced in the order first met
        return tuple(map(cache.__getitem__, every_members))

    return ChunkSteps(costs(steps.forward), costs(steps.backward))
