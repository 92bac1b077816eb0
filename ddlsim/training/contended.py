"""Place an iteration in time with concurrent collectives sharing the fabric (network.contention=on).

`timeline.place` gives every collective its isolated price. Here the collectives that are in
flight at the same time share the fabric's declared resources
(`ddlsim.network.contention.resources`) by max-min fairness
(`ddlsim.network.contention.fluid`): each collective is one activity whose work is its isolated
time and which puts its bytes on each resource evenly over that time; the shares are re-solved
whenever a collective starts or ends. Compute ops keep their durations. Dependencies and
in-order streams are those of `timeline.place`.

On a fabric that routes flows (`ddlsim.network.contention.link_demand.LinkDemand`) a collective is
not one activity but its compact schedule's steps, each a delay (latency, setup) and then a
transfer on the fabric's own links, shared flow by flow (`ddlsim.network.contention.step_loads`);
its local work (reductions) follows the last step. All pipeline stages share the fabric: stage s's
calls run on the job ranks of stage s, and stage-to-stage sends contend with everything else.
An op that nothing slowed keeps its isolated duration bit for bit. On other fabrics (the
declared-resource coflow model) each stage gets its own copy of the resources.

When no two collectives overlap in the isolated placement nothing can contend, and that
placement is returned unchanged (bit for bit).

Several jobs on one fabric (`place_jobs`) run the same way, every job on its own nodes, all of
them in one engine, so they share whatever resources their placements have in common. Jobs start
together, or each at its own offset (``start_s``); with ``steady`` every job keeps iterating until
the last one has run its iterations, so that none runs its last iterations alone.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout
from ddlsim.network.contention.fluid import FluidNetwork
from ddlsim.network.contention.link_demand import LinkDemand
from ddlsim.network.contention.model import ContentionModel, DemandOf
from ddlsim.network.contention.step_loads import CallPhases, submit_transfer
from ddlsim.training.graph import IterationGraph, OpKind
from ddlsim.training.timeline import Placement, place


def collectives_overlap(graph: IterationGraph, placement: Placement, *, across_stages: bool = False) -> bool:
    """True when two collectives of the same stage (of any stages, `across_stages`) are in flight
    at the same time."""
    spans = sorted((0 if across_stages else op.stage, placement.start_s[op.index], placement.end_s[op.index])
                   for op in graph.ops if op.kind is OpKind.COLLECTIVE and op.duration_s > 0)
    for (stage, _, end), (next_stage, next_start, _) in zip(spans, spans[1:]):
        if stage == next_stage and next_start < end:
            return True
    return False


def place_contended(graph: IterationGraph, model: ContentionModel) -> Placement:
    """The placement of `graph` with concurrent collectives sharing the fabric (module docstring)."""
    isolated = place(graph)
    if not collectives_overlap(graph, isolated, across_stages=isinstance(model.demand_of, LinkDemand)):
        return isolated
    return place_jobs([graph], model, iterations=1)[0][0]


def place_jobs(graphs: Sequence[IterationGraph], model: ContentionModel, *, iterations: int = 1,
               demand_of: Sequence[DemandOf] | None = None, start_s: Sequence[float] | None = None,
               steady: bool = False) -> list[list[Placement]]:
    """Run every graph for `iterations` back-to-back iterations at once on one fabric; the
    placement of each job's each iteration, in its own time origin (the iteration's start).
    `demand_of[j]` prices job j's calls (its own placement on the fabric); default: the model's.
    `start_s[j]` is when job j's first iteration starts (default: all at 0). With `steady`, a
    job that has run its iterations keeps iterating (unrecorded) while any other job still runs.
    Demands and `model.capacity_bps` must number resources alike: one job's collapsed model
    (`contention_model(fabric)`) does not fit per-placement demands."""
    collapsed = model.resources is not None and model.capacity_bps.size != model.resources.size
    if demand_of is not None and collapsed and any(own is not model.demand_of for own in demand_of):
        raise ValueError("place_jobs: per-job demands index every resource; pass a model with the full "
                         "capacities (contention_model(fabric, placement) or ddlsim.training.jobs.shared_model)")
    resources_per_copy = model.capacity_bps.size
    demand_fns = list(demand_of) if demand_of is not None else [model.demand_of] * len(graphs)
    shared_stages = all(isinstance(demand, LinkDemand) for demand in demand_fns)
    stages = [sorted({op.stage for op in graph.ops}) for graph in graphs]
    copies = 1 if shared_stages else max((len(stage_list) for stage_list in stages), default=1)
    engine = FluidNetwork(np.tile(model.capacity_bps, copies))
    runs = [_JobRun(graph, stage_list, demand, resources_per_copy, iterations, steady)
            for graph, stage_list, demand in zip(graphs, stages, demand_fns)]
    compute_heap: list[tuple[float, int, int]] = []
    now = 0.0
    offsets = [0.0] * len(runs) if start_s is None else [float(value) for value in start_s]
    if len(offsets) != len(runs) or any(not value >= 0 for value in offsets):
        raise ValueError(f"place_jobs: start_s needs one offset >= 0 per job, got {list(offsets)}")
    for job, (run, offset) in enumerate(zip(runs, offsets)):
        if offset > 0:
            run.hold(job, offset, compute_heap)
    for job, run in enumerate(runs):
        run.start_ready(job, now, engine, compute_heap)
    while compute_heap or engine.busy():
        if steady and all(run.recorded_all for run in runs):
            break
        next_compute = compute_heap[0][0] if compute_heap else np.inf
        finished = engine.advance(until_s=next_compute)
        if finished:
            now = engine.now_s
            ended = [(key[0], key[1], time) for key, time in finished
                     if runs[key[0]].transfer_done(key, time, engine, compute_heap)]
        else:
            now = next_compute
            ended = []
            while compute_heap and compute_heap[0][0] <= now:
                time, job, index = heapq.heappop(compute_heap)
                ended.append((job, index, time))
        for job, index, time in ended:
            if index == _RELEASE:
                runs[job].release(time)
            else:
                runs[job].finish(index, time)
        for job, run in enumerate(runs):
            run.start_ready(job, now, engine, compute_heap)
    return [run.placements() for run in runs]


_RELEASE = -1  # the op index of a job's start event in the compute heap


class _JobRun:
    """One job's ops over its iterations: what is ready, when each op started and ended."""

    def __init__(self, graph: IterationGraph, stages: list[int], demand_of: DemandOf, copy_size: int,
                 iterations: int, steady: bool = False) -> None:
        self.graph, self.demand_of, self.iterations, self.steady = graph, demand_of, iterations, steady
        self.stage_copy = {stage: position for position, stage in enumerate(stages)}
        self.copy_size = copy_size
        count = len(graph.ops)
        self.count = count
        predecessors: list[set[int]] = [set(op.deps) for op in graph.ops]
        last_on_stream: dict[str, int] = {}
        for op in graph.ops:
            previous = last_on_stream.get(op.stream)
            if previous is not None:
                predecessors[op.index].add(previous)
            last_on_stream[op.stream] = op.index
        self.successors: list[list[int]] = [[] for _ in range(count)]
        for index, preds in enumerate(predecessors):
            for pred in preds:
                self.successors[pred].append(index)
        self.needed = [len(preds) for preds in predecessors]
        self.waiting = list(self.needed)
        self.iteration = 0
        self.remaining = count
        self.iteration_start = 0.0
        self.start = [0.0] * count
        self.end = [0.0] * count
        self.ready = [index for index in range(count) if self.needed[index] == 0]
        self.done: list[Placement] = []
        self.walks: dict[int, _Walk] = {}
        self.stage_ranks, self.job_ranks = _stage_ranks(graph, len(stages))

    @property
    def recorded_all(self) -> bool:
        return len(self.done) >= self.iterations

    def hold(self, job: int, start_s: float, compute_heap: list) -> None:
        """Start the job at `start_s` instead of 0: nothing of it is ready before then."""
        self.held, self.ready = self.ready, []
        heapq.heappush(compute_heap, (start_s, job, _RELEASE))

    def release(self, time: float) -> None:
        self.ready, self.iteration_start = self.held, time

    def start_ready(self, job: int, now: float, engine: FluidNetwork, compute_heap: list) -> None:
        ready, self.ready = self.ready, []
        for index in ready:
            op = self.graph.ops[index]
            self.start[index] = now
            demand = None
            if op.kind is OpKind.COLLECTIVE and op.duration_s > 0:
                assert isinstance(op.task, CollectiveCall)
                if isinstance(self.demand_of, LinkDemand):
                    self._start_phases(job, index, now, engine, compute_heap)
                    continue
                demand = self.demand_of(op.task)
            if demand is None or demand.resources.size == 0:
                heapq.heappush(compute_heap, (now + op.duration_s, job, index))
                continue
            offset = self.stage_copy[op.stage] * self.copy_size
            engine.submit((job, index), op.duration_s, demand.resources + offset,
                          demand.bits * op.executions / op.duration_s, max_fill=1.0,
                          share_key=(demand, op.executions, op.duration_s, offset))

    def _shift(self, call: CollectiveCall, stage: int) -> tuple[int, int | None]:
        """(first job rank, job ranks) of a pipeline stage's call: its stage's ranks, or the whole job's."""
        if self.stage_ranks is None or call.group.job_ranks >= self.job_ranks:
            return 0, self.job_ranks
        return self.stage_copy[stage] * self.stage_ranks, self.job_ranks

    def _start_phases(self, job: int, index: int, now: float, engine: FluidNetwork, compute_heap: list) -> None:
        op = self.graph.ops[index]
        assert isinstance(self.demand_of, LinkDemand) and isinstance(op.task, CollectiveCall)
        phases = self.demand_of.phases(op.task, op.estimate.algorithm, *self._shift(op.task, op.stage))
        tail_s = op.estimate.compute_s * op.executions
        own_s = phases.time_s
        if own_s <= 0 or not any(phase.loads_links for phase in phases.phases) or op.duration_s <= tail_s:
            heapq.heappush(compute_heap, (now + op.duration_s, job, index))
            return
        self.walks[index] = _Walk(phases, (op.duration_s - tail_s) / own_s, tail_s)
        self._next_phase(job, index, now, engine, compute_heap)

    def _next_phase(self, job: int, index: int, now: float, engine: FluidNetwork, compute_heap: list) -> None:
        """Submit the op's next phase that loads links, after the delays before it; or end the op."""
        walk = self.walks[index]
        phases = walk.phases.phases
        delay_s = 0.0
        while walk.next < len(phases):
            phase = phases[walk.next]
            walk.next += 1
            delay_s += phase.delay_s * walk.scale
            if phase.loads_links:
                submit_transfer(engine, (job, index, walk.next - 1), phase, walk.scale, now + delay_s)
                return
            delay_s += phase.transfer_s * walk.scale
        del self.walks[index]
        op = self.graph.ops[index]
        end = now + delay_s + walk.tail_s if walk.slowed else self.start[index] + op.duration_s
        heapq.heappush(compute_heap, (end, job, index))

    def transfer_done(self, key: tuple, time: float, engine: FluidNetwork, compute_heap: list) -> bool:
        """A transfer ended: True when it was a whole op (a coflow), else its next phase is started."""
        if len(key) == 2:
            return True
        walk = self.walks[key[1]]
        walk.slowed = walk.slowed or key in engine.last_slowed
        self._next_phase(key[0], key[1], time, engine, compute_heap)
        return False

    def finish(self, index: int, time: float) -> None:
        self.end[index] = time
        self.remaining -= 1
        for successor in self.successors[index]:
            self.waiting[successor] -= 1
            if self.waiting[successor] == 0:
                self.ready.append(successor)
        if self.remaining == 0:
            self._next_iteration(time)

    def _next_iteration(self, time: float) -> None:
        origin = self.iteration_start
        starts = tuple(value - origin for value in self.start)
        ends = tuple(value - origin for value in self.end)
        stretched = tuple(end - start for start, end in zip(starts, ends))
        if not self.recorded_all:
            self.done.append(Placement(starts, ends, stretched))
        self.iteration += 1
        if self.iteration < self.iterations or self.steady:
            self.iteration_start = time
            self.remaining = self.count
            self.waiting = list(self.needed)
            self.ready = [index for index in range(self.count) if self.needed[index] == 0]

    def placements(self) -> list[Placement]:
        return self.done


@dataclass
class _Walk:
    """An op going through its phases: the next one, the scale to its priced duration, its local
    work after the last, and whether sharing slowed any phase."""

    phases: CallPhases
    scale: float
    tail_s: float
    next: int = 0
    slowed: bool = False


def _stage_ranks(graph: IterationGraph, stages: int) -> tuple[int | None, int | None]:
    """(ranks per stage, ranks of the job) of an analytic pipelined graph, whose in-stage calls are
    laid out over one stage's ranks and whose sends over the pipeline pair ``GroupLayout(2, stage
    ranks, 2 x stage ranks)``; (None, None) otherwise (one stage, or a capture, whose calls are laid
    out over the whole job)."""
    calls = [op.task for op in graph.ops if op.kind is OpKind.COLLECTIVE]
    if stages < 2 or not calls:
        return None, None
    stage_ranks = min(call.group.job_ranks for call in calls)
    pair = GroupLayout(2, stage_ranks, 2 * stage_ranks)
    if not any(call.op is CollectiveOp.SEND_RECV and call.group == pair for call in calls):
        return None, None
    return stage_ranks, stage_ranks * stages
