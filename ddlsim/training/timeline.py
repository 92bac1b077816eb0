"""Place an `IterationGraph` in time and sum up what the iteration was made of.

Placement is list scheduling over in-order streams: an op starts when the previous op of its
stream has ended and every op it depends on has ended. Because ops were added in a topological
order, one pass suffices, and the result is deterministic.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

from ddlsim.core.types import CollectiveCall, CollectiveEstimate, ComputeEstimate
from ddlsim.training.graph import IterationGraph, Op, OpKind

ROUNDING = 1e-12


@dataclass(frozen=True)
class Placement:
    """Start and end time of every op of a graph, by op index.

    `contended_s`, set by a placement where collectives shared the fabric
    (`ddlsim.training.contended`), is each op's time from start to end; None when every op took
    its own duration.
    """

    start_s: tuple[float, ...]
    end_s: tuple[float, ...]
    contended_s: tuple[float, ...] | None = None

    def time_of(self, op: Op) -> float:
        """How long `op` took in this placement."""
        return op.duration_s if self.contended_s is None else self.contended_s[op.index]

    @property
    def makespan_s(self) -> float:
        return max(self.end_s, default=0.0)


def place(graph: IterationGraph) -> Placement:
    """Start each op at max(end of its stream's previous op, end of its dependencies)."""
    start: list[float] = []
    end: list[float] = []
    stream_free: dict[str, float] = defaultdict(float)
    for op in graph.ops:
        begin = stream_free[op.stream]
        for dep in op.deps:
            begin = max(begin, end[dep])
        finish = begin + op.duration_s
        start.append(begin)
        end.append(finish)
        stream_free[op.stream] = finish
    return Placement(tuple(start), tuple(end))


def collective_key(call: CollectiveCall) -> str:
    """The column prefix of a collective in result rows: its name, or op and phase, snake_case."""
    text = call.name or f"{call.op.value}_{call.phase.value}"
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_") or call.op.value


@dataclass(frozen=True)
class CollectiveBreakdown:
    """All executions of one named collective in an iteration, with their time split."""

    key: str
    op: str
    algorithm: str
    calls: int
    size_bytes: int
    group_size: int
    time_s: float
    latency_s: float
    transfer_s: float
    compute_s: float
    alone_s: float | None = None
    # time its calls ran while the device computed nothing (`exposed_s`); NaN where the iteration
    # is summed up in closed form, not placed op by op
    exposed_s: float = math.nan

    @property
    def slowdown(self) -> float:
        """Time under contention over time alone (1 when nothing shared the fabric)."""
        if self.alone_s is None or self.alone_s <= 0:
            return 1.0
        return self.time_s / self.alone_s


@dataclass(frozen=True)
class IterationSummary:
    """What one iteration was made of, seen from the busiest device.

    The iteration splits into parts that add up to `iteration_time_s`:

    - `compute_time_s`: the busy time of the busiest compute stream (for a pipeline, the
      busiest stage's);
    - `exposed_comm_time_s`: time that device spends in its own collectives and not computing;
    - `bubble_time_s`: time it does neither, waiting for other pipeline stages (the 1F1B
      bubble). Always 0 for one stage, where every wait is for one of its own collectives;
    - `at_scale_time_s`: what running at scale adds (`ddlsim.training.at_scale`: interference,
      stragglers, framework work); 0 unless ``training.at_scale`` switches a cost on.

    `comm_time_s` sums that device's collectives, whether hidden behind compute or not;
    `hidden_comm_time_s` is the part that was. So exposed communication never exceeds it, and
    the communication share is `exposed_comm_time_s / iteration_time_s`.
    """

    iteration_time_s: float
    compute_time_s: float
    comm_time_s: float
    exposed_comm_time_s: float
    hidden_comm_time_s: float
    comm_latency_s: float
    comm_transfer_s: float
    comm_reduction_s: float
    collectives: tuple[CollectiveBreakdown, ...]
    compute_time_by_source_s: tuple[tuple[str, float], ...]
    compute_devices: tuple[str, ...]
    num_ops: int
    bubble_time_s: float = 0.0
    at_scale_time_s: float = 0.0

    @property
    def comm_fraction(self) -> float:
        """Share of the iteration spent in communication that was not overlapped."""
        return self.exposed_comm_time_s / self.iteration_time_s if self.iteration_time_s > 0 else 0.0

    @property
    def compute_source(self) -> str:
        """``measured``, ``scaled`` or ``roofline``; several sources are joined with ``+``."""
        return "+".join(source for source, _ in self.compute_time_by_source_s)


def _focus_stage(graph: IterationGraph) -> int | None:
    """For a pipelined graph (ops on several stages), the stage with the most compute time.

    Its collectives are the ones a GPU of that stage runs, so the breakdown counts them once
    rather than summing every stage's copy. None for a graph of one stage.
    """
    busy: dict[int, float] = defaultdict(float)
    for op in graph.ops:
        if op.kind is OpKind.COMPUTE:
            busy[op.stage] += op.duration_s
    stages = {op.stage for op in graph.ops}
    if len(stages) < 2:
        return None
    return max(sorted(busy), key=lambda stage: busy[stage]) if busy else min(stages)


def _idle_s(graph: IterationGraph, placement: Placement, stage: int) -> float:
    """Time in the iteration when `stage` runs no op at all (neither compute nor collective)."""
    intervals = sorted((placement.start_s[op.index], placement.end_s[op.index]) for op in graph.ops
                       if op.stage == stage and placement.end_s[op.index] > placement.start_s[op.index])
    busy, reach = 0.0, 0.0
    for start, end in intervals:
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    idle = placement.makespan_s - busy
    return idle if idle > ROUNDING * max(placement.makespan_s, 1e-300) else 0.0


def merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of `intervals` as sorted, disjoint intervals (empty ones left out)."""
    union: list[tuple[float, float]] = []
    for start, end in sorted(interval for interval in intervals if interval[1] > interval[0]):
        if union and start <= union[-1][1]:
            union[-1] = (union[-1][0], max(union[-1][1], end))
        else:
            union.append((start, end))
    return union


def uncovered_s(intervals: list[tuple[float, float]], cover: list[tuple[float, float]]) -> float:
    """The length of the union of `intervals` outside `cover` (sorted, disjoint: `merged`)."""
    total, position = 0.0, 0
    for start, end in merged(intervals):
        total += end - start
        while position < len(cover) and cover[position][1] <= start:
            position += 1
        index = position
        while index < len(cover) and cover[index][0] < end:
            total -= min(end, cover[index][1]) - max(start, cover[index][0])
            index += 1
    return max(total, 0.0)


def summarize(graph: IterationGraph, placement: Placement | None = None) -> IterationSummary:
    placement = placement or place(graph)
    focus = _focus_stage(graph)
    compute_by_stream: dict[str, float] = defaultdict(float)
    by_source: dict[str, float] = defaultdict(float)
    devices: dict[str, None] = {}
    groups: dict[str, list] = defaultdict(list)
    computing: list[tuple[float, float]] = []  # when the focus device computes
    for op in graph.ops:
        if op.kind is OpKind.COMPUTE:
            assert isinstance(op.estimate, ComputeEstimate)
            if focus is None or op.stage == focus:
                computing.append((placement.start_s[op.index], placement.end_s[op.index]))
            compute_by_stream[op.stream] += op.duration_s
            by_source[op.estimate.source.value] += op.duration_s
            devices[op.estimate.device] = None
        elif focus is None or op.stage == focus:
            assert isinstance(op.task, CollectiveCall)
            groups[collective_key(op.task)].append(op)
    breakdowns = []
    cover = merged(computing)
    for key, ops in groups.items():
        estimates = [op.estimate for op in ops]
        assert all(isinstance(estimate, CollectiveEstimate) for estimate in estimates)
        breakdowns.append(CollectiveBreakdown(
            key=key,
            op=ops[0].task.op.value,
            algorithm="+".join(dict.fromkeys(estimate.algorithm for estimate in estimates)),
            calls=sum(op.executions for op in ops),
            size_bytes=sum(op.task.size_bytes * op.executions for op in ops),
            group_size=ops[0].task.group.size,
            time_s=sum(placement.time_of(op) for op in ops),
            latency_s=sum(op.estimate.latency_s * op.executions for op in ops),
            transfer_s=sum(op.estimate.transfer_s * op.executions for op in ops),
            compute_s=sum(op.estimate.compute_s * op.executions for op in ops),
            alone_s=None if placement.contended_s is None else sum(op.duration_s for op in ops),
            exposed_s=uncovered_s([(placement.start_s[op.index], placement.end_s[op.index]) for op in ops], cover),
        ))
    iteration_s = placement.makespan_s
    compute_s = max(compute_by_stream.values(), default=0.0)
    comm_s = sum(item.time_s for item in breakdowns)
    bubble_s = 0.0 if focus is None else _idle_s(graph, placement, focus)
    exposed_s = max(iteration_s - compute_s - bubble_s, 0.0)
    if focus is not None and 0 < exposed_s - comm_s <= ROUNDING * iteration_s:
        exposed_s = comm_s  # the same durations summed in two orders
    hidden_s = comm_s - exposed_s
    if hidden_s < ROUNDING * max(iteration_s, 1e-300):
        hidden_s = 0.0  # the residue of summing the same durations in two orders, not hidden time
    return IterationSummary(
        iteration_time_s=iteration_s,
        compute_time_s=compute_s,
        comm_time_s=comm_s,
        exposed_comm_time_s=exposed_s,
        hidden_comm_time_s=hidden_s,
        comm_latency_s=sum(item.latency_s for item in breakdowns),
        comm_transfer_s=sum(item.transfer_s for item in breakdowns),
        comm_reduction_s=sum(item.compute_s for item in breakdowns),
        collectives=tuple(breakdowns),
        compute_time_by_source_s=tuple(sorted(by_source.items())),
        compute_devices=tuple(devices),
        num_ops=len(graph),
        bubble_time_s=bubble_s,
    )
