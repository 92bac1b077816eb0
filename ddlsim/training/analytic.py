"""A pipelined iteration summed up without building its graph: the fast path of `simulate_training`.

`analytic_iteration(workload, pricer, settings)` returns the `IterationSummary` that
`summarize(build_graph(...))` would return for the 1F1B and interleaved schedules, equal within
floating rounding (tests/training/test_analytic.py checks every field on random workloads):

1. each chunk's forward and backward step is priced once (`steps.py`);
2. every stage's end of pipeline comes from the closed form of 1F1B (`closed_form.py`) or from
   the interleaved round engines (`rounds.py`; `overlapped.py` with ``overlap_p2p_comm``, which
   also gives the busiest stage's busy time, its sends overlapping its steps), none of which
   depends on the number of micro-batches;
3. the per-iteration tail (gradient reductions, cross-stage all-reduces, optimizer) follows
   `stages.add_tail` stage by stage, buckets included (`tail.py`);
4. the summary adds up each step's ops times its number of runs.

It returns None where those assumptions do not hold (a schedule other than 1F1B/interleaved,
``overlap_p2p_comm`` with a last send of the busiest stage that may overlap its tail, a warm-up
clipped by few micro-batches, an empty step handing over to a neighbour in 1F1B, a step whose
hand-over moves when its repeats are expanded), and `simulate_training` then lays the graph out
op by op.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from operator import attrgetter, mul

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.types import CollectiveCall
from ddlsim.core.work import Workload
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.closed_form import one_f_one_b_ends
from ddlsim.training.schedules.dispatch import interleaved_schedule, one_f_one_b_schedule, select_schedule
from ddlsim.training.schedules.overlapped import overlapped_ends
from ddlsim.training.schedules.plan import micro_batches, pipeline_stages, virtual_stages
from ddlsim.training.schedules.rounds import interleaved_ends
from ddlsim.training.schedules.stages import split_steps
from ddlsim.training.schedules.steps import ChunkSteps, StepCost, chunk_steps
from ddlsim.training.schedules.tail import TailResult, run_tail, tail_compute, tail_masks
from ddlsim.training.settings import Overlap, TrainingSettings
from ddlsim.training.timeline import ROUNDING, CollectiveBreakdown, IterationSummary, collective_key


class _Pipeline:
    """Stage ends and last-backward starts of one pipelined workload, or why there are none."""

    def __init__(self, workload: Workload, pricer: Pricer, settings: TrainingSettings) -> None:
        self.stages, self.virtual, self.micro = pipeline_stages(workload), virtual_stages(workload), \
            micro_batches(workload)
        self.chunks = self.stages * self.virtual
        self.p2p_overlap = settings.overlap_p2p_comm
        self.steps = split_steps(workload)
        self.costs: ChunkSteps = chunk_steps(self.steps, self.chunks, pricer)
        self.overlap = settings.overlap is Overlap.DP_BACKWARD
        self.bucket_size_bytes = settings.bucket_size_bytes
        self.expanded: dict[int, tuple] = {}  # id(StepCost) -> StepCost.expanded(pricer)
        self.focus_busy_s: float | None = None  # overlap_p2p_comm: the focus stage's busy pipeline time
        if self.overlap:
            for cost in self.costs.backward:
                if id(cost) not in self.expanded:
                    self.expanded[id(cost)] = cost.expanded(pricer, body=self.virtual > 1)

    def chunk(self, group: int, stage: int) -> int:
        return group * self.stages + stage

    def supported(self) -> bool:
        p, v, m = self.stages, self.virtual, self.micro
        if m < 1 or (v > 1 and m % p):
            return False
        if v > 1:  # the schedule sends nothing from the last chunk's forward or chunk 0's backward
            return not (self.costs.forward[-1].send_ops or self.costs.backward[0].send_ops)
        lags = [cost.lag_s for cost in self.costs.forward[:-1]] + [cost.lag_s for cost in self.costs.backward[1:]]
        if not all(map(math.isfinite, lags)):
            return False
        if self.overlap:  # the last micro-batch's backward is expanded; its hand-over must not move
            for chunk, cost in enumerate(self.costs.backward):
                lag = self.expanded[id(cost)][3]
                if chunk > 0 and not (lag == cost.lag_s or (math.isfinite(lag) and
                                                             abs(lag - cost.lag_s) <= 1e-12 * cost.duration_s)):
                    return False
        return True

    def ends(self, trace: int) -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]]]:
        """(end of every stage's pipeline, start of the last micro-batch's backward of every chunk
        indexed [stage, group], and with overlap the `trace` stage's steps from its last micro-batch's
        first backward on)."""
        p, v = self.stages, self.virtual

        def table(costs: tuple[StepCost, ...], field: str) -> np.ndarray:
            return np.array(list(map(attrgetter(field), costs)), dtype=float).reshape(v, p)

        forward, backward = self.costs.forward, self.costs.backward
        if v == 1:
            durations = table(backward, "duration_s")[0]
            end = one_f_one_b_ends(table(forward, "duration_s")[0], durations, table(forward, "lag_s")[0],
                                   table(backward, "lag_s")[0], self.micro)
            starts = end - durations
            return end, starts[:, None], [(float(starts[trace]), float(end[trace]))] if self.overlap else []
        if self.p2p_overlap:
            ends = overlapped_ends(table(forward, "body_s"), table(backward, "body_s"), table(forward, "send_s"),
                                   table(backward, "send_s"), table(forward, "send_ops") > 0,
                                   table(backward, "send_ops") > 0, self.micro, trace)
            self.focus_busy_s = ends.busy_s if ends.last_op_end_s <= ends.end_s[trace] else None
            return ends.end_s, ends.last_backward_start_s, ends.intervals if self.overlap else []
        result = interleaved_ends(table(forward, "body_s"), table(backward, "body_s"), table(forward, "send_s"),
                                  table(backward, "send_s"), self.micro, trace if self.overlap else None,
                                  record_starts=self.overlap)
        return result.end_s, result.last_backward_start_s, result.intervals

    def stage_chunks(self, stage: int) -> list[int]:
        return [self.chunk(group, stage) for group in range(self.virtual)]

    def first_seen(self, stage: int) -> list[StepCost]:
        """The stage's steps in the order their ops first appear: forwards by group, backwards from
        the last group (warm-up runs every forward group before the first backward)."""
        chunks = self.stage_chunks(stage)
        return [self.costs.forward[c] for c in chunks] + [self.costs.backward[c] for c in reversed(chunks)]


def analytic_iteration(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationSummary | None:
    """The pipelined iteration's summary in closed form, or None where the event simulation is needed."""
    if settings.overlap.fsdp_prefetch or settings.overlap.tp_comm:  # side streams inside the steps
        return None
    schedule = select_schedule(settings, workload)
    if schedule is not one_f_one_b_schedule and schedule is not interleaved_schedule:
        return None
    pipeline = _Pipeline(workload, pricer, settings)
    if not pipeline.supported():
        return None
    p, m = pipeline.stages, pipeline.micro
    pairs = tuple(zip(pipeline.costs.forward, pipeline.costs.backward, strict=True))  # chunk g p + s: row g
    # m x the per-stage sum over chunk rows: ndarray.sum(axis=0) is np.add.reduce(axis=0) behind a Python wrapper
    stream = m * _SUM(np.array([f.duration_s + b.duration_s for f, b in pairs]).reshape(pipeline.virtual, p), axis=0)
    compute = m * _SUM(np.array([f.compute_s + b.compute_s for f, b in pairs]).reshape(pipeline.virtual, p), axis=0)
    masks = tail_masks(pipeline.steps.tail, p)
    busy = compute + tail_compute(pipeline.steps.tail, pricer, p, masks)
    focus = int(np.argmax(busy))  # the first of equals, as timeline._focus_stage picks
    end, last_backward, intervals = pipeline.ends(focus)
    if pipeline.p2p_overlap and pipeline.virtual > 1:
        if pipeline.focus_busy_s is None:  # a send of the focus stage may overlap its tail
            return None
        stream[focus] = pipeline.focus_busy_s  # its sends overlap its steps
    tail = run_tail(workload, pricer, pipeline, end, last_backward, focus, intervals, masks)
    return _summary(pipeline, tail, busy, stream, focus if p > 1 else None)


def _summary(pipeline: _Pipeline, tail: TailResult, busy: np.ndarray, stream: np.ndarray,
             focus: int | None) -> IterationSummary:
    m = pipeline.micro
    iteration_s = float(_MAX(tail.end_s, axis=None))
    groups: dict[str, list] = {}
    stage = 0 if focus is None else focus
    keyed: dict[int, list] = {}  # id(step) -> its collective ops with their column keys
    for cost in pipeline.first_seen(stage):
        ops = keyed.get(id(cost))
        if ops is None:
            ops = keyed[id(cost)] = _keyed(cost.ops)
        _count(groups, ops, m)
    _count(groups, _keyed(tail.focus_ops), 1)
    sums = [_sums(key, items) for key, items in groups.items()]
    every_cost = (*pipeline.costs.forward, *pipeline.costs.backward)
    every_id = list(map(id, every_cost))
    steps = dict(zip(every_id, every_cost))
    runs = Counter(every_id)  # id -> how many chunks run the step, in the order first seen
    by_source: dict[str, float] = defaultdict(float)
    devices: dict[str, None] = {}
    num_ops = tail.num_ops
    backward_ids = set(map(id, pipeline.costs.backward))
    for ident, count in runs.items():
        cost = steps[ident]
        devices.update(dict.fromkeys(cost.devices))
        num_ops += m * count * len(cost.ops)
        for source, time_s in cost.compute_by_source_s:
            by_source[source] += m * count * time_s
        if pipeline.overlap and ident in backward_ids:
            expanded_ops = len(pipeline.expanded[ident][0]) + (cost.send_ops if pipeline.virtual > 1 else 0)
            num_ops += count * (expanded_ops - len(cost.ops))
    for source, time_s in tail.by_source.items():
        by_source[source] += time_s
    devices.update(tail.devices)
    compute_s = float(_MAX(busy, axis=None))
    comm_s = sum([item[6] for item in sums])
    bubble_s = 0.0
    if focus is not None:
        idle = iteration_s - (float(stream[focus]) + tail.focus_stream_s + tail.focus_bucket_extra_s)
        bubble_s = idle if idle > ROUNDING * max(iteration_s, 1e-300) else 0.0
    exposed_s = max(iteration_s - compute_s - bubble_s, 0.0)
    if focus is not None and 0 < exposed_s - comm_s <= ROUNDING * iteration_s:
        exposed_s = comm_s  # the same durations summed in two orders
    hidden_s = comm_s - exposed_s
    nothing_hidden = hidden_s < ROUNDING * max(iteration_s, 1e-300)
    if nothing_hidden:
        hidden_s = 0.0
    # nothing hidden: no collective ran beside compute or another collective, so each was exposed for its
    # whole time; otherwise the closed form does not say which was (exposed_s stays NaN)
    breakdowns = tuple(CollectiveBreakdown(*item, exposed_s=item[6]) if nothing_hidden else CollectiveBreakdown(*item)
                       for item in sums)
    return IterationSummary(
        iteration_time_s=iteration_s, compute_time_s=compute_s, comm_time_s=comm_s, exposed_comm_time_s=exposed_s,
        hidden_comm_time_s=hidden_s, comm_latency_s=sum([item[7] for item in sums]),
        comm_transfer_s=sum([item[8] for item in sums]), comm_reduction_s=sum([item[9] for item in sums]),
        collectives=breakdowns, compute_time_by_source_s=tuple(sorted(by_source.items())),
        compute_devices=tuple(devices), num_ops=num_ops, bubble_time_s=bubble_s)


def _key(task: CollectiveCall) -> str:
    """`collective_key`, which depends on the call's name, op and phase alone, memoised per process."""
    signature = (task.name, task.op, task.phase)
    key = _KEYS.get(signature)
    return _KEYS.put(signature, collective_key(task)) if key is None else key


_KEYS = PROCESS_CACHES.memo("collective column key", maxsize=4096)


def _keyed(ops) -> list[tuple]:
    """The collective ops of `ops` as (column key, call, estimate, executions)."""
    return [(_key(task), task, estimate, executions) for task, estimate, executions in ops
            if isinstance(task, CollectiveCall)]


def _count(groups: dict[str, list], ops: list[tuple], runs: int) -> None:
    for key, task, estimate, executions in ops:
        items = groups.get(key)
        if items is None:
            items = groups[key] = []
        items.append((task, estimate, executions * runs))


def _sums(key: str, items: list) -> tuple:
    """`CollectiveBreakdown`'s fields up to `compute_s`, each sum taken over the items in order."""
    tasks, estimates, runs = zip(*items)  # map and zip rather than comprehensions: no Python frame per sum
    return (key, tasks[0].op._value_, "+".join(dict.fromkeys(map(_ALGORITHM, estimates))), sum(runs),
            sum(map(mul, map(_SIZE, tasks), runs)), tasks[0].group.size,
            sum(map(mul, map(_TIME, estimates), runs)), sum(map(mul, map(_LATENCY, estimates), runs)),
            sum(map(mul, map(_TRANSFER, estimates), runs)), sum(map(mul, map(_COMPUTE, estimates), runs)))


_SUM, _MAX = np.add.reduce, np.maximum.reduce  # what ndarray.sum and ndarray.max call, without their wrappers
_ALGORITHM, _SIZE, _TIME = attrgetter("algorithm"), attrgetter("size_bytes"), attrgetter("time_s")
_LATENCY, _TRANSFER, _COMPUTE = attrgetter("latency_s"), attrgetter("transfer_s"), attrgetter("compute_s")


__all__ = ["analytic_iteration"]
