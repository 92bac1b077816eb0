"""`task=jobs`: several jobs on one fabric at once; one row per job.

The jobs (`ddlsim.tasks.job_specs`: a list, or a mix of model options with shares; neither:
``task.num_jobs`` copies of the ``model`` group's model, with the ``parallel`` group's degrees) are placed on
the ``fabric`` group's fabric by ``task.placement`` (`ddlsim.network.contention.job_placement`:
``packed``, ``spread``, ``random`` with ``task.seed``), in slots of ``task.slot_nodes`` nodes
(0: the fabric's smallest domain, a server). Each job's iteration graph is priced at its own
placement (the ``collective`` group's algorithm, the ``training`` group's overlap), then all of
them run concurrently for ``task.iterations`` iterations in one fluid engine, sharing whatever
declared resources their placements have in common (`ddlsim.training.jobs`), and each runs alone.
``task.arrival``: ``together`` (all start at 0) or ``random`` (each at a uniform offset within its
alone iteration, drawn from ``task.seed``, all iterating until the last is done).
``network.contention=off`` runs every job alone (jobs do not share).

Rows: ``job_id``, ``model``, ``placement``, ``nodes`` (node ranges), ``num_ranks``,
``start_offset_s``, ``iteration_time_s`` (mean over the iterations), ``iteration_time_p99_s``,
``alone_iteration_time_s``, ``slowdown`` (mean over alone), with the fabric, algorithm and
``num_jobs``. Captured programs (``model: {name: program, ...}``) run from their own graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import TASKS
from ddlsim.core.seeds import check_seed
from ddlsim.network.contention.job_placement import check_policy, place_jobs_on_nodes, top_domain_nodes
from ddlsim.report.quantities import format_duration
from ddlsim.tasks.base import Components, Row, TaskResult, config_label
from ddlsim.tasks.job_specs import JobSpec, build_job_model, parse_jobs, plain
from ddlsim.tasks.train import algorithm_label


@dataclass
class JobsTaskConfig:
    name: str = "jobs"
    jobs: list[Any] = field(default_factory=list)
    mix: dict[str, float] = field(default_factory=dict)
    num_jobs: int = 2
    model_overrides: dict[str, Any] = field(default_factory=dict)
    placement: str = "packed"
    seed: int = 0
    slot_nodes: int = 0
    iterations: int = 5
    arrival: str = "together"
    progress: bool = True


def check_arrival(value: Any, key: str = "arrival") -> str:
    """``together`` or ``random`` (`ddlsim.training.jobs`), else a `ConfigError` naming `key`."""
    from ddlsim.training.jobs import ARRIVALS

    if value not in ARRIVALS:
        raise ConfigError(key, value, f"must be one of {', '.join(ARRIVALS)}")
    return str(value)


def node_ranges(nodes: np.ndarray) -> str:
    """``0-63`` or ``4-7,20-23``: a job's nodes as runs of consecutive ids, in rank order."""
    nodes = np.asarray(nodes)
    if nodes.size == 0:
        return ""
    breaks = np.flatnonzero(np.diff(nodes) != 1) + 1
    runs = np.split(nodes, breaks)
    return ",".join(f"{run[0]}" if run.size == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def say(enabled: bool) -> Any:
    def progress(text: str) -> None:
        if enabled:
            import sys

            print(f"[jobs] {text}", file=sys.stderr, flush=True)

    return progress


def job_source(model: Any, parallel: Any, device: Any) -> Any:
    """What a job's iteration graph is built from: its captured program, else its workload."""
    program = getattr(model, "program", None)
    return program() if program is not None else model.build_workload(parallel, device.memory_bytes)


def job_graph(source: Any, compute: Any, timer: Any, settings: Any) -> Any:
    """One job's iteration graph (`job_source`), its collectives priced by `timer`."""
    from ddlsim.core.work import Workload
    from ddlsim.training.pricing import Pricer
    from ddlsim.training.run import compute_timer
    from ddlsim.training.simulate import build_graph

    if isinstance(source, Workload):
        return build_graph(source, Pricer(timer, compute_timer(compute)), settings)
    from ddlsim.capture.graph import build_program_graph
    from ddlsim.capture.pricing import SegmentPricer

    if getattr(compute, "fusion", False):  # as `ddlsim.capture.simulation.simulate_program` prices it
        from dataclasses import replace

        from ddlsim.capture.fusion import fuse_events

        source = replace(source, events=fuse_events(source.events))
    graph, _ = build_program_graph(source, Pricer(timer, lambda task: None), SegmentPricer(compute, None))
    return graph


def job_rows(specs: list[JobSpec], placements: list, times: list, labels: Row, policy: str) -> list[Row]:
    rows = []
    for index, (spec, placement, result) in enumerate(zip(specs, placements, times)):
        nodes = placement.nodes if placement.nodes is not None else np.arange(placement.num_ranks)
        rows.append({**labels, "job_id": index, "model": spec.label, "placement": policy, "nodes": node_ranges(nodes),
                     "num_ranks": placement.num_ranks, "status": "ok",
                     "start_offset_s": result.start_offset_s,
                     "iteration_time_s": result.mean_s, "iteration_time_p99_s": result.p99_s,
                     "alone_iteration_time_s": result.alone_s, "slowdown": result.slowdown})
    return rows


def summarize_jobs(rows: list[Row], where: str) -> str:
    lines = [f"{len(rows)} jobs on {where}:"]
    for row in rows:
        lines.append(f"  job {row['job_id']} {row['model']} on nodes {row['nodes']}: iteration "
                     f"{format_duration(row['iteration_time_s'])} (p99 {format_duration(row['iteration_time_p99_s'])}),"
                     f" alone {format_duration(row['alone_iteration_time_s'])}, slowdown {row['slowdown']:.3f}x")
    return "\n".join(lines)


@TASKS.register("jobs", JobsTaskConfig)
@dataclass(frozen=True)
class JobsTask:
    """Several jobs sharing one fabric: each job's iteration time beside the others and alone."""

    specs: tuple[JobSpec, ...]
    placement: str
    seed: int
    slot_nodes: int
    iterations: int
    progress: bool
    num_jobs: int = 2
    arrival: str = "together"
    name: str = "jobs"
    count_key: tuple[str, int] = ("task.num_jobs", 2)  # what sets the number of jobs, and its value

    @classmethod
    def from_config(cls, config: JobsTaskConfig) -> JobsTask:
        specs = parse_jobs(config.jobs, config.mix, config.num_jobs, config.model_overrides)
        check_policy(config.placement, "placement")
        if config.iterations < 1:
            raise ConfigError("iterations", config.iterations, "must be >= 1")
        if config.slot_nodes < 0:
            raise ConfigError("slot_nodes", config.slot_nodes, "must be >= 0 (0: the fabric's smallest domain)")
        if not specs and config.num_jobs < 1:
            raise ConfigError("num_jobs", config.num_jobs, "must be >= 1")
        return cls(tuple(specs), config.placement, check_seed(config.seed), config.slot_nodes, config.iterations,
                   bool(config.progress), config.num_jobs, check_arrival(config.arrival),
                   count_key=job_count_key(config.jobs, config.num_jobs))

    def job_models(self, components: Components) -> tuple[list[JobSpec], list[tuple[Any, Any]]]:
        """The jobs and their (model, parallel) objects: the task's list or mix, else ``num_jobs``
        copies of the model group's model with the parallel group's degrees."""
        if self.specs:
            specs = list(self.specs)
            built: dict[int, tuple[Any, Any]] = {}  # a job of count n is one spec n times: built once
            for index, spec in enumerate(specs):
                if id(spec) not in built:
                    built[id(spec)] = build_job_model(spec, f"task.jobs[{index}]")
            return specs, [built[id(spec)] for spec in specs]
        spec = JobSpec(config_label(components.config, "model"), {}, {})
        return [spec] * self.num_jobs, [(components.model, components.parallel)] * self.num_jobs

    def check_count(self, fabric: Any, label: str) -> None:
        """Refuse more jobs than the fabric has slots (each job takes at least one) before any job is
        built: ``num_jobs=1000000`` ends in milliseconds, not after a million workloads."""
        count = len(self.specs) if self.specs else self.num_jobs
        slot = self.slot_nodes or fabric_slot_nodes(fabric)
        most = fabric.num_nodes // slot
        if count > most:
            key, value = self.count_key if self.specs else ("task.num_jobs", self.num_jobs)
            slot_text = f"{slot} nodes" if slot > 1 else "1 node"
            raise InfeasibleError(f"{key} = {value}: {count:,} jobs do not fit on the {fabric.num_nodes:,} nodes of "
                                  f"fabric {label}: each job takes at least one slot of {slot_text}, so at most "
                                  f"{most:,} jobs fit")

    def run(self, components: Components) -> TaskResult:
        from tqdm import tqdm

        from ddlsim.network.contention.model import contention_model
        from ddlsim.training.jobs import JobGraph, placed_network_timer, run_jobs, shared_model
        from ddlsim.training.run import reduction_model
        from ddlsim.training.settings import run_settings

        fabric, device = components.fabric, components.device
        settings = run_settings(components.config)
        self.check_count(fabric, config_label(components.config, "fabric"))
        specs, built = self.job_models(components)
        made: dict[tuple[int, int], Any] = {}  # copies of one job share its model: one workload each
        for model, parallel in built:
            if (id(model), id(parallel)) not in made:
                made[(id(model), id(parallel))] = job_source(model, parallel, device)
        sources = [made[(id(model), id(parallel))] for model, parallel in built]
        placements = self.place(fabric, [int(source.num_ranks) for source in sources], specs)
        jobs = []
        bar = tqdm(list(zip(sources, placements)), desc="pricing jobs", unit="job", leave=False,
                   disable=not self.progress or len(sources) < 8 or None)
        for source, placement in bar:
            # the reduction roofline of task=train (`train_on_fabric`), so that a job alone prices as a train run
            timer = placed_network_timer(fabric, components.algorithm, reduction_model(device), placement)
            graph = job_graph(source, components.compute, timer, settings)
            jobs.append(JobGraph(graph, contention_model(fabric, placement).demand_of))
        times = run_jobs(jobs, shared_model(fabric), iterations=self.iterations, contention=settings.contention,
                         progress=say(self.progress and len(jobs) >= 8), arrival=self.arrival, seed=self.seed)
        labels = {"fabric": config_label(components.config, "fabric"),
                  "algorithm": algorithm_label(components.config.collective), "device": str(device.name),
                  "num_jobs": len(jobs), "iterations": self.iterations, "seed": self.seed, "arrival": self.arrival,
                  "contention": "on" if settings.contention else "off", "overlap": settings.overlap.value}
        rows = job_rows(specs, placements, times, labels, self.placement)
        return TaskResult(rows=rows, summary=summarize_jobs(rows, f"{labels['fabric']} ({self.placement})"))

    def place(self, fabric: Any, sizes: list[int], specs: list[JobSpec]) -> list:
        slot = self.slot_nodes or fabric_slot_nodes(fabric)
        return place_jobs_on_nodes(fabric.num_nodes, sizes, self.placement, slot_nodes=slot,
                                   domain_nodes=top_domain_nodes(fabric.domain_sizes(), fabric.num_nodes),
                                   seed=self.seed, explicit=[spec.nodes for spec in specs],
                                   names=[f"task.jobs[{index}]" if self.specs else f"job {index} of task.num_jobs"
                                          for index in range(len(sizes))])


def job_count_key(jobs: Any, num_jobs: int) -> tuple[str, int]:
    """The key that sets the number of jobs of a list and its value: the item with the largest
    ``count`` (``task.jobs[3].count``), else the list itself and its length; ``task.num_jobs`` for a mix."""
    items = [item if isinstance(item, Mapping) else {} for item in plain(jobs) or []]
    if not items:
        return "task.num_jobs", num_jobs
    counts = [item.get("count", 1) if isinstance(item.get("count", 1), int) else 1 for item in items]
    index = max(range(len(counts)), key=lambda position: (counts[position], -position))
    return (f"task.jobs[{index}].count", counts[index]) if counts[index] > 1 else ("task.jobs", len(items))


def fabric_slot_nodes(fabric: Any) -> int:
    """The fabric's smallest domain (a server's GPUs) when it divides the fabric, else one node."""
    smallest = min(fabric.domain_sizes(), default=1)
    return smallest if smallest < fabric.num_nodes and fabric.num_nodes % smallest == 0 else 1
