"""`task=topoopt_jobs`: TopoOpt Sec. 5.6, a shared cluster; one row per (system, job).

``task.num_jobs`` jobs of ``task.servers_per_job`` servers each, drawn from ``task.mix`` (Sec. 5.6:
40 % DLRM, 30 % BERT, 20 % CANDLE, 10 % VGG16, List 1's Sec. 5.6 sizes), run on a cluster of
``task.num_servers`` servers of ``task.gpus_per_server`` GPUs with d interfaces of B each
(``task.degree``, ``task.link_bandwidth``), on each of ``task.systems``:

- ``topoopt``: every job on its own shard, a direct-connect topology TopologyFinder makes for that
  job's traffic (`ddlsim.network.fabrics.topoopt.baselines.static_fabric`). TopoOpt App. C: "the
  optical switches are configured in a way such that the green part (Server 1, 2 and their
  corresponding links) is completely disjointed from the red part ... The complete isolation
  ensures each job gets its dedicated resources". Shards share nothing, so a job beside the others
  takes exactly what it takes alone, and is run alone.
- ``topoopt_fat_tree`` (the cost-equivalent full-bisection fat-tree, d x B' per server) and
  ``topoopt_fat_tree_oversub`` (d x B per server, 2:1 at the ToR uplinks): one k-ary fat-tree of the
  whole cluster (`ddlsim.network.fabrics.topoopt.shared_cluster`: k the smallest even k with
  k^3 / 4 >= servers, k = 12 for 432), the jobs placed on
  it by ``task.placement`` and run together (`ddlsim.tasks.jobs`), sharing its declared resources.

Rows: the job's columns of `ddlsim.tasks.jobs` with ``fabric`` the system, ``load`` (the share of
the cluster's servers the jobs take), ``degree``, ``link_bandwidth_bps``, ``num_servers``, ``seed``
(the placement's and, with ``task.arrival=random``, the jobs' start offsets'; sweep it to average
placements, as the paper does), ``arrival`` and
``pooled_iteration_time_p99_s``: the 99th percentile over every iteration of every job of that
system at that load (the paper's tail over time), the same on each of the system's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import TASKS
from ddlsim.core.seeds import check_seed
from ddlsim.network.contention.job_placement import check_policy, place_jobs_on_nodes, top_domain_nodes
from ddlsim.network.fabrics.topoopt.shared_cluster import FIG16_SYSTEMS, SHARDED, shared_fat_tree
from ddlsim.tasks.base import Components, Row, TaskResult
from ddlsim.tasks.job_specs import JobSpec, build_job_model, parse_jobs, plain
from ddlsim.tasks.jobs import check_arrival, job_graph, job_rows, job_source, say, summarize_jobs
from ddlsim.tasks.train import algorithm_label
from ddlsim.training.jobs import TAIL_PERCENTILE

FIG16_MIX = {"topoopt_dlrm": 0.4, "topoopt_bert": 0.3, "topoopt_candle": 0.2, "topoopt_vgg16": 0.1}


@dataclass
class TopoOptJobsTaskConfig:
    name: str = "topoopt_jobs"
    systems: list[str] = field(default_factory=lambda: list(FIG16_SYSTEMS))
    num_servers: int = 432
    degree: int = 8
    link_bandwidth: str = "100Gbps"
    gpus_per_server: int = 4
    servers_per_job: int = 16
    mix: dict[str, float] = field(default_factory=lambda: dict(FIG16_MIX))
    num_jobs: int = 27
    sizes: str = "sec5_6"
    placement: str = "random"
    seed: int = 0
    iterations: int = 5
    arrival: str = "together"
    collectives: dict[str, Any] = field(default_factory=dict)
    progress: bool = True


@TASKS.register("topoopt_jobs", TopoOptJobsTaskConfig)
@dataclass(frozen=True)
class TopoOptJobsTask:
    """TopoOpt Fig. 16: jobs of a model mix on a shared cluster, TopoOpt's shards against fat-trees."""

    reads: ClassVar[tuple[str, ...]] = ("device", "compute", "collective", "training")

    systems: tuple[str, ...]
    num_servers: int
    degree: int
    link_bandwidth_bps: float
    gpus_per_server: int
    servers_per_job: int
    specs: tuple[JobSpec, ...]
    placement: str
    seed: int
    iterations: int
    collectives: tuple[tuple[str, Any, str], ...] = ()
    arrival: str = "together"
    progress: bool = True
    name: str = "topoopt_jobs"

    @classmethod
    def from_config(cls, config: TopoOptJobsTaskConfig) -> TopoOptJobsTask:
        from ddlsim.core.registry import ALGORITHMS

        systems = tuple(str(system) for system in config.systems)
        for system in systems:
            if system not in FIG16_SYSTEMS:
                raise ConfigError("systems", system, f"must be one of {', '.join(FIG16_SYSTEMS)}")
        for key in ("num_servers", "degree", "gpus_per_server", "servers_per_job", "iterations", "num_jobs"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        check_policy(config.placement, "placement")
        overrides = {"num_servers": config.servers_per_job, "gpus_per_server": config.gpus_per_server,
                     "sizes": config.sizes}
        specs = parse_jobs([], config.mix, config.num_jobs, overrides)
        if config.num_jobs * config.servers_per_job > config.num_servers:
            raise ConfigError("num_jobs", config.num_jobs, f"{config.num_jobs} jobs of {config.servers_per_job} "
                                                           f"servers do not fit {config.num_servers} servers")
        collectives = []
        for system, node in sorted(dict(config.collectives).items()):
            algorithm = ALGORITHMS.build(plain(node), key=f"collectives.{system}")
            collectives.append((system, algorithm, algorithm_label(plain(node))))
        return cls(systems, config.num_servers, config.degree,
                   units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"), config.gpus_per_server,
                   config.servers_per_job, tuple(specs), config.placement, check_seed(config.seed), config.iterations,
                   tuple(collectives), progress=bool(config.progress), arrival=check_arrival(config.arrival))

    def algorithm_for(self, system: str, default: Any, default_label: str) -> tuple[Any, str]:
        for name, algorithm, label in self.collectives:
            if name == system:
                return algorithm, label
        return default, default_label

    def run(self, components: Components) -> TaskResult:
        from ddlsim.training.settings import run_settings

        settings = run_settings(components.config)
        built = [build_job_model(spec, f"task.mix.{spec.label}") for spec in self.specs]
        labels = {"device": str(components.device.name), "num_jobs": len(self.specs),
                  "load": len(self.specs) * self.servers_per_job / self.num_servers, "degree": self.degree,
                  "link_bandwidth_bps": self.link_bandwidth_bps, "num_servers": self.num_servers,
                  "iterations": self.iterations, "seed": self.seed, "arrival": self.arrival,
                  "contention": "on" if settings.contention else "off", "overlap": settings.overlap.value}
        rows: list[Row] = []
        summaries = []
        progress = say(self.progress)
        for system in self.systems:
            algorithm, label = self.algorithm_for(system, components.algorithm,
                                                  algorithm_label(components.config.collective))
            progress(f"{system}: {len(built)} jobs")
            run = self._shards if system in SHARDED else self._shared
            placements, times, policy = run(system, built, algorithm, components, settings)
            system_rows = job_rows(list(self.specs), placements, times,
                                   {**labels, "fabric": system, "algorithm": label}, policy)
            pooled = float(np.percentile(np.concatenate([result.iterations_s for result in times]), TAIL_PERCENTILE))
            for row in system_rows:
                row["pooled_iteration_time_p99_s"] = pooled
            rows += system_rows
            summaries.append(summarize_jobs(system_rows, f"{system} ({policy})"))
        return TaskResult(rows=rows, summary="\n".join(summaries))

    def _shared(self, system, built, algorithm, components, settings):
        from ddlsim.network.contention.model import contention_model
        from ddlsim.training.jobs import JobGraph, placed_network_timer, run_jobs, shared_model
        from ddlsim.training.run import reduction_model

        fabric = shared_fat_tree(system, self.num_servers, self.gpus_per_server, self.degree,
                                 self.link_bandwidth_bps)
        sizes = [self.servers_per_job * self.gpus_per_server] * len(built)
        placements = place_jobs_on_nodes(fabric.num_nodes, sizes, self.placement, slot_nodes=self.gpus_per_server,
                                         domain_nodes=top_domain_nodes(fabric.domain_sizes(), fabric.num_nodes),
                                         seed=self.seed, names=[f"job {index}" for index in range(len(sizes))])
        jobs = []
        for (model, parallel), placement in zip(built, placements):
            timer = placed_network_timer(fabric, algorithm, reduction_model(components.device, model.precision),
                                         placement)
            graph = job_graph(job_source(model, parallel, components.device), components.compute, timer, settings)
            jobs.append(JobGraph(graph, contention_model(fabric, placement).demand_of))
        times = run_jobs(jobs, shared_model(fabric), iterations=self.iterations, contention=settings.contention,
                         arrival=self.arrival, seed=self.seed)
        return placements, times, self.placement

    def _shards(self, system, built, algorithm, components, settings):
        """Each job on its own TopoOpt shard (module docstring): run alone, numbered as the cluster's servers."""
        from ddlsim.network.contention.model import contention_model
        from ddlsim.network.fabrics.topoopt.baselines import Setting, static_fabric
        from ddlsim.network.fabrics.topoopt.demand import server_traffic
        from ddlsim.network.fabrics.topoopt.topology_finder import topology_finder
        from ddlsim.network.placement import Placement
        from ddlsim.training.jobs import JobGraph, run_jobs
        from ddlsim.training.run import network_timer, reduction_model

        setting = Setting(self.servers_per_job, self.gpus_per_server, self.degree, self.link_bandwidth_bps)
        ranks = self.servers_per_job * self.gpus_per_server
        shards: dict[str, tuple] = {}  # one shard per model: TopologyFinder is deterministic
        placements, times = [], []
        for index, (spec, (model, parallel)) in enumerate(zip(self.specs, built)):
            if spec.label not in shards:
                workload = model.build_workload(parallel, components.device.memory_bytes)
                traffic = server_traffic(workload, self.gpus_per_server)
                plan = topology_finder(self.servers_per_job, self.degree, traffic.allreduce, traffic.mp_matrix)
                fabric = static_fabric(system, setting, plan)
                timer = network_timer(fabric, algorithm, reduction_model(components.device, model.precision))
                graph = job_graph(workload, components.compute, timer, settings)
                model_ = contention_model(fabric)
                shards[spec.label] = run_jobs([JobGraph(graph, model_.demand_of)], model_,
                                              iterations=self.iterations)[0]
            placements.append(Placement(ranks, [index * ranks + rank for rank in range(ranks)]))
            times.append(shards[spec.label])
        return placements, times, "shard"
