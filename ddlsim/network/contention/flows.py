"""Several collectives' explicit schedules run at once on one fabric, flow by flow.

A `FlowJob` is one collective: its explicit schedule, its message size, where its positions sit
(every group of a `GroupLayout` through a placement, or explicit fabric nodes per position, one
row per group) and when it starts. `compile_jobs` turns every communication step into flows:
one per (source node, destination node) pair of the step, carrying the bytes of all the step's
rows between those nodes (``chunk_fraction x size_bytes`` per row, summed over every group of
the job). A multicast step is modelled as one flow per copy (no sharing of the source's
egress between copies), so a multicast-capable fabric is priced conservatively here.

`run_flows` then simulates (`FluidNetwork`, max-min fair sharing, re-solved at every start and
finish): a step begins when the previous step of the same job has ended (lockstep, all groups
of the job together); every flow of it starts ``setup + latency`` after the step begins (the
circuit setup `Fabric.setup_time_s` of the job's own previous circuit, then the flow's
head-to-head latency from `Fabric.route`), and then drains its bytes at its max-min fair rate
(weight 1, no rate cap), each byte putting 8 bits on every resource of its path against
`Fabric.capacity_bps()`. The step ends when its last flow has drained. Paths are those
`Fabric.route` gives on the whole fabric (on TopoOpt: the topology of all its servers, where
pricing one job alone uses that job's own shard). Local reductions and
copies, slotted rounding (`transfer_time_s`) and circuit switching between jobs are not modelled.

The result gives every job's end and the start and end of each of its communication steps,
together with the same job run alone on the empty fabric (same engine, same start), so that
callers can report slowdowns. `ddlsim.validation.simgrid_reference` runs the same compiled flows
on SimGrid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import GroupLayout
from ddlsim.network.contention.flow_routes import PairRoutes, require_flow_routes, route_pairs
from ddlsim.network.contention.fluid import FluidNetwork
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.int_arrays import sorted_distinct
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.placing import place_ranks
from ddlsim.network.schedule import ExplicitSchedule


@dataclass(frozen=True, eq=False)
class FlowJob:
    """One collective to run: `schedule` for `size_bytes`, on `nodes` (a `GroupLayout`, placed by
    `placement` or the fabric's own placement, or fabric node ids: one row of ``group_size`` per
    group), starting at `start_s`."""

    schedule: ExplicitSchedule
    size_bytes: int
    nodes: GroupLayout | np.ndarray | Sequence[int] | Sequence[Sequence[int]]
    start_s: float = 0.0
    label: str = ""
    placement: Placement | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.size_bytes, int | np.integer) and self.size_bytes >= 0):
            raise ConfigError("size_bytes", self.size_bytes, "must be an integer >= 0")
        if not (np.isfinite(self.start_s) and self.start_s >= 0):
            raise ConfigError("start_s", self.start_s, "must be a finite time >= 0")
        if isinstance(self.nodes, GroupLayout) and self.nodes.size != self.schedule.group_size:
            raise ConfigError("nodes.size", self.nodes.size,
                              f"must equal the schedule's group size {self.schedule.group_size}")

    def group_nodes(self, fabric: Fabric) -> np.ndarray:
        """Fabric node of every position of every group: shape (groups, group_size)."""
        n = self.schedule.group_size
        if isinstance(self.nodes, GroupLayout):
            placement = self.placement if self.placement is not None else place_ranks(fabric, self.nodes.job_ranks)
            return placement.node_of(job_ranks(self.nodes, np.arange(n)))
        nodes = np.atleast_2d(np.asarray(self.nodes, dtype=np.int64))
        if nodes.ndim != 2 or nodes.shape[1] != n:
            raise ConfigError("nodes", nodes.shape, f"needs one fabric node per position ({n}) in each group row")
        if nodes.size and (nodes.min() < 0 or nodes.max() >= fabric.num_nodes):
            raise ConfigError("nodes", f"[{nodes.min()}, {nodes.max()}]",
                              f"must be node ids of {fabric.name}, in [0, {fabric.num_nodes})")
        return nodes


@dataclass(frozen=True, eq=False)
class StepFlows:
    """The flows of one communication step: pair index into `PairRoutes`, and bytes each."""

    pair: np.ndarray
    size_bytes: np.ndarray
    setup_s: float
    schedule_step: int


@dataclass(frozen=True, eq=False)
class CompiledJob:
    label: str
    start_s: float
    steps: tuple[StepFlows, ...]


@dataclass(frozen=True, eq=False)
class FlowProblem:
    """Everything the engines need: the routes of every node pair used, and each job's steps."""

    routes: PairRoutes
    jobs: tuple[CompiledJob, ...]

    @property
    def num_flows(self) -> int:
        return sum(step.pair.size for job in self.jobs for step in job.steps)


def compile_jobs(fabric: Fabric, jobs: Sequence[FlowJob]) -> FlowProblem:
    """The flows of every communication step of every job, routed on `fabric`."""
    require_flow_routes(fabric)
    if not jobs:
        raise ConfigError("jobs", [], "needs at least one collective")
    width = fabric.num_nodes
    per_job = []
    for job in jobs:
        nodes = job.group_nodes(fabric)
        chunk_bytes = job.schedule.chunk_fraction * job.size_bytes
        steps, previous = [], None
        for index, step in enumerate(job.schedule.steps):
            if not step.is_communication:
                continue
            if max(step.src.max(), step.dst.max()) >= nodes.shape[1] or min(step.src.min(), step.dst.min()) < 0:
                raise ConfigError("schedule", f"step {index}", f"moves data outside positions [0, {nodes.shape[1]})")
            keys = (nodes[:, step.src] * width + nodes[:, step.dst]).ravel()
            unique, counts = np.unique(keys, return_counts=True)
            setup_s = float(fabric.setup_time_s(previous, step.circuit))
            previous = step.circuit
            steps.append((unique, counts * chunk_bytes, setup_s, index))
        per_job.append(steps)
    every = [keys for steps in per_job for keys, *_ in steps]
    pairs = sorted_distinct(np.concatenate(every)) if every else np.zeros(0, dtype=np.int64)
    routes = route_pairs(fabric, pairs // width, pairs % width)
    compiled = []
    for job, steps in zip(jobs, per_job):
        flows = tuple(StepFlows(np.searchsorted(pairs, keys), np.asarray(size, dtype=np.float64), setup_s, index)
                      for keys, size, setup_s, index in steps)
        compiled.append(CompiledJob(job.label, float(job.start_s), flows))
    return FlowProblem(routes, tuple(compiled))


@dataclass(frozen=True, eq=False)
class JobTiming:
    """One job's times: concurrent (`end_s`, per communication step) and alone (`isolated_end_s`)."""

    label: str
    start_s: float
    end_s: float
    step_start_s: np.ndarray
    step_end_s: np.ndarray
    isolated_end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def isolated_s(self) -> float:
        return self.isolated_end_s - self.start_s

    @property
    def slowdown(self) -> float:
        """Duration under contention over duration alone (1 when nothing shares; nan for an empty job)."""
        return self.duration_s / self.isolated_s if self.isolated_s > 0 else float("nan")


@dataclass(frozen=True, eq=False)
class FlowRun:
    jobs: tuple[JobTiming, ...]
    num_flows: int
    num_resources: int

    @property
    def end_s(self) -> np.ndarray:
        return np.array([job.end_s for job in self.jobs])


def run_flows(fabric: Fabric, jobs: Sequence[FlowJob], *, isolated: bool = True) -> FlowRun:
    """Run `jobs` concurrently at flow level (module docstring); also each alone when `isolated`."""
    problem = compile_jobs(fabric, jobs)
    together = simulate(problem)
    alone = [simulate(problem, [index])[0][1] if isolated else np.full(1, np.nan)
             for index in range(len(problem.jobs))]
    timings = []
    for job, (starts, ends), solo in zip(problem.jobs, together, alone):
        end = float(ends.max()) if ends.size else job.start_s
        solo_end = float(solo.max()) if solo.size else job.start_s
        timings.append(JobTiming(job.label, job.start_s, end, starts, ends, solo_end))
    return FlowRun(tuple(timings), problem.num_flows, int(problem.routes.capacity_bps.size))


def simulate(problem: FlowProblem, which: Sequence[int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(step start times, step end times) of each job in `which` (default: all), run together."""
    indices = list(range(len(problem.jobs))) if which is None else list(which)
    routes = problem.routes
    network = FluidNetwork(np.array(routes.capacity_bps, dtype=np.float64))
    starts = {j: np.full(len(problem.jobs[j].steps), np.nan) for j in indices}
    ends = {j: np.full(len(problem.jobs[j].steps), np.nan) for j in indices}
    remaining: dict[tuple[int, int], int] = {}
    latest: dict[tuple[int, int], float] = {}

    def begin(j: int, k: int, time_s: float) -> None:
        steps = problem.jobs[j].steps
        while k < len(steps):
            step = steps[k]
            starts[j][k] = time_s
            if step.pair.size:
                first = time_s + step.setup_s
                for f, (pair, size) in enumerate(zip(step.pair.tolist(), step.size_bytes.tolist())):
                    resources, amounts = routes.of(pair)
                    network.submit((j, k, f), size, resources, amounts, start_s=first + routes.latency_s[pair])
                remaining[(j, k)] = step.pair.size
                latest[(j, k)] = time_s
                return
            ends[j][k] = time_s + step.setup_s
            time_s, k = ends[j][k], k + 1

    for j in indices:
        begin(j, 0, problem.jobs[j].start_s)
    while network.busy():
        for (j, k, _), finish_s in network.advance():
            remaining[(j, k)] -= 1
            latest[(j, k)] = max(latest[(j, k)], finish_s)
            if remaining[(j, k)] == 0:
                del remaining[(j, k)]
                ends[j][k] = end_s = latest.pop((j, k))
                begin(j, k + 1, end_s)
    return [(starts[j], ends[j]) for j in indices]
