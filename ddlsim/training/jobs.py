"""Several jobs on one fabric: each job's iteration graph priced at its own placement, all of them
run at once for some iterations (`ddlsim.training.contended.place_jobs`), and each one alone.

    timer = placed_network_timer(fabric, algorithm, reduction, placement)   # the job's prices
    demand = contention_model(fabric, placement).demand_of                  # its bytes on the fabric
    times = run_jobs([JobGraph(graph, demand), ...], shared_model(fabric), iterations=5)

A job alone runs in the same engine with nothing beside it, so its alone time is its isolated
iteration exactly; with ``contention=False`` every job runs alone (jobs do not share).

Arrival (``arrival``): ``together`` starts every job at 0, so jobs of one model stay in phase;
``random`` starts job j at a uniform offset within its own alone iteration (from ``seed``) and keeps
every job iterating until the last has run its iterations (steady state: no job runs its last
iterations alone), as jobs of a shared cluster arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.types import CollectiveCall
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.contention.model import ContentionModel, DemandOf
from ddlsim.network.estimator import CollectiveEstimator
from ddlsim.network.placement import Placement
from ddlsim.training.contended import place_jobs
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import CollectiveTimer
from ddlsim.training.run import estimator_timer

TAIL_PERCENTILE = 99.0
ARRIVALS = ("together", "random")
ARRIVAL_STREAM = 1  # the offsets' generator is seeded with (seed, ARRIVAL_STREAM): apart from placements


def shared_model(fabric) -> ContentionModel:
    """Every link of `fabric` (where it routes flows) or every declared resource, with its capacity,
    for jobs that each bring their own demands (`contention_model(fabric, placement)`: per-step
    link loads, or every declared resource, not collapsed to kinds)."""
    from ddlsim.network.contention.flow_routes import has_flow_routes
    from ddlsim.network.contention.resources import shared_resources

    def no_demand(call: CollectiveCall):
        raise ValueError("each job brings its own demand_of (contention_model(fabric, placement))")

    if has_flow_routes(fabric):
        return ContentionModel(no_demand, fabric.capacity_bps())
    resources = shared_resources(fabric)
    return ContentionModel(no_demand, resources.capacity_bps, resources)


class _PlacedEstimator(CollectiveEstimator):
    """A collective estimator whose every call of the job sits at `placement` (job rank r on
    fabric node ``placement.nodes[r]``) instead of the fabric's own placement."""

    def __init__(self, fabric, algorithm, reduction, placement: Placement) -> None:
        super().__init__(fabric, algorithm, reduction)
        self.job_placement = placement

    def _request(self, op, size_bytes, layout, root) -> ScheduleRequest:
        return ScheduleRequest(op, layout.size, root, size_bytes, self.fabric, layout, self.job_placement)


def placed_network_timer(fabric, algorithm, reduction, placement: Placement) -> CollectiveTimer:
    """`ddlsim.training.run.network_timer`, with every call of the job priced at `placement`."""
    return estimator_timer(_PlacedEstimator(fabric, algorithm, reduction, placement), fabric)


@dataclass(frozen=True)
class JobGraph:
    """One job's iteration graph and what each of its calls puts on the fabric's resources."""

    graph: IterationGraph
    demand_of: DemandOf


@dataclass(frozen=True)
class JobTimes:
    """One job's iteration times beside the others (`iterations_s`) and alone (`alone_s`), and
    when it started (`start_offset_s`)."""

    iterations_s: tuple[float, ...]
    alone_s: float
    start_offset_s: float = 0.0

    @property
    def mean_s(self) -> float:
        return float(np.mean(self.iterations_s))

    @property
    def p99_s(self) -> float:
        return float(np.percentile(self.iterations_s, TAIL_PERCENTILE))

    @property
    def slowdown(self) -> float:
        return self.mean_s / self.alone_s if self.alone_s > 0 else float("nan")


def alone_times(jobs: Sequence[JobGraph], model: ContentionModel, iterations: int = 1) -> list[tuple[float, ...]]:
    """Each job's iteration times with nothing beside it (the same engine, one graph)."""
    return [tuple(placement.makespan_s for placement in
                  place_jobs([job.graph], model, iterations=iterations, demand_of=[job.demand_of])[0])
            for job in jobs]


def arrival_offsets_s(alone_s: Sequence[float], arrival: str, seed: int = 0) -> list[float] | None:
    """Each job's start (module docstring): None for ``together``, else a uniform draw within
    each job's alone iteration."""
    if arrival == "together":
        return None
    if arrival != "random":
        raise ValueError(f"arrival must be one of {ARRIVALS}, got {arrival!r}")
    draws = np.random.default_rng([seed, ARRIVAL_STREAM]).uniform(0.0, 1.0, len(alone_s))
    return [float(draw * alone) for draw, alone in zip(draws, alone_s)]


def run_jobs(jobs: Sequence[JobGraph], model: ContentionModel, *, iterations: int, contention: bool = True,
             progress: Callable[[str], None] | None = None, arrival: str = "together",
             seed: int = 0) -> list[JobTimes]:
    """Every job for `iterations` iterations at once on `model`'s fabric (each alone when
    `contention` is False), and each alone; one `JobTimes` per job, in job order. `arrival` and
    `seed`: when the jobs start (module docstring)."""
    say = progress or (lambda text: None)
    say(f"{len(jobs)} jobs alone")
    alone = alone_times(jobs, model)
    if not contention:
        runs = alone_times(jobs, model, iterations)
        offsets = None
    else:
        offsets = arrival_offsets_s([single[0] for single in alone], arrival, seed)
        say(f"{len(jobs)} jobs together ({arrival} arrival), {iterations} iterations")
        placements = place_jobs([job.graph for job in jobs], model, iterations=iterations,
                                demand_of=[job.demand_of for job in jobs], start_s=offsets,
                                steady=offsets is not None)
        runs = [tuple(placement.makespan_s for placement in job) for job in placements]
    starts = offsets or [0.0] * len(jobs)
    return [JobTimes(times, single[0], start) for times, single, start in zip(runs, alone, starts)]
