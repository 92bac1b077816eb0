"""`task=topoopt`: the configured model on the systems TopoOpt Sec. 5 compares; one row per system.

For one degree d and link bandwidth B (``task.degree``, ``task.link_bandwidth``), the model's
iteration (TopoOpt List 1, ``model=topoopt_*``) is priced on each of ``task.systems``
(`ddlsim.network.fabrics.topoopt.baselines`): TopoOpt on the topology TopologyFinder makes for
the model's traffic, the Ideal Switch, the cost-equivalent and the 2:1 oversubscribed
fat-trees and the expander through `ddlsim.training.simulate_training` (the ``training`` group's
settings: no overlap by default, as Sec. 5.1), with the ``collective``
group's algorithm (TopoOpt Sec. 5.1: ring AllReduce, direct all-to-all, the ``per_op`` option
``collective=topoopt_sec5``; ``task.collectives`` gives one system its own); OCS-reconfig and SiP-ML
through the training room's reconfiguring iteration (`ddlsim.training.reconfiguration`).

Rows: the labels (model, system as ``fabric``, algorithm, degree, link bandwidth, reconfiguration
latency), ``iteration_time_s``, and, from the model's traffic, TopologyFinder's degree split,
the all-to-all / AllReduce ratio and, on TopoOpt's rows, the bandwidth tax and mean path length
of Figs. 13 and 14.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from omegaconf import OmegaConf

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS, TASKS
from ddlsim.network.fabrics.topoopt.baselines import FIG11_SYSTEMS, TOPOOPT
from ddlsim.report.quantities import format_duration
from ddlsim.tasks.base import Components, Row, TaskResult, config_label
from ddlsim.tasks.train import algorithm_label


@dataclass
class TopoOptTaskConfig:
    """`reconfiguration` '' takes each reconfiguring system's own latency (10 ms OCS, 25 us SiP-ML)."""

    name: str = "topoopt"
    systems: list[str] = field(default_factory=lambda: list(FIG11_SYSTEMS))
    degree: int = 4
    link_bandwidth: str = "100Gbps"
    gpus_per_server: int = 4
    reconfiguration: str = ""
    measurement_period: str = "50ms"
    iterations: int = 2
    collectives: dict[str, Any] = field(default_factory=dict)


@TASKS.register("topoopt", TopoOptTaskConfig)
@dataclass(frozen=True)
class TopoOptTask:
    """Iteration time of a TopoOpt List 1 model on TopoOpt and its Sec. 5.1 baselines."""

    # TopoOpt and its baselines are built here (`systems`), not read from the fabric group
    reads: ClassVar[tuple[str, ...]] = ("model", "parallel", "device", "compute", "collective", "training")

    systems: tuple[str, ...]
    degree: int
    link_bandwidth_bps: float
    gpus_per_server: int
    reconfiguration_s: float | None
    measurement_period_s: float
    iterations: int
    collectives: tuple[tuple[str, Any, str], ...] = ()
    name: str = "topoopt"

    @classmethod
    def from_config(cls, config: TopoOptTaskConfig) -> TopoOptTask:
        from ddlsim.network.fabrics.topoopt.baselines import check_system

        systems = tuple(check_system(str(system)) for system in config.systems)
        if not systems:
            raise ConfigError("systems", [], "must name at least one system")
        for key in ("degree", "gpus_per_server", "iterations"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        collectives = []
        for system, node in sorted(dict(config.collectives).items()):
            plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            algorithm = ALGORITHMS.build(plain, key=f"collectives.{check_system(system)}")
            collectives.append((system, algorithm, algorithm_label(plain)))
        latency = units.parse_time_s(config.reconfiguration, "reconfiguration",
                                     bounds=units.PERIOD_BOUNDS_S) if config.reconfiguration else None
        return cls(systems, config.degree, units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"),
                   config.gpus_per_server, latency,
                   units.parse_time_s(config.measurement_period, "measurement_period", bounds=units.PERIOD_BOUNDS_S),
                   config.iterations, tuple(collectives))

    def algorithm_for(self, system: str, default: Any, default_label: str = "") -> tuple[Any, str]:
        """`task.collectives`' algorithm for `system`, else the collective group's (`default`)."""
        for name, algorithm, label in self.collectives:
            if name == system:
                return algorithm, label
        return default, default_label

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network.fabrics.topoopt.baselines import Setting
        from ddlsim.network.fabrics.topoopt.demand import server_traffic
        from ddlsim.network.fabrics.topoopt.topology_finder import topology_finder
        from ddlsim.training.run import compute_timer, reduction_model
        from ddlsim.training.settings import run_settings

        if getattr(components.model, "name", "") != "topoopt":
            raise ConfigError("model", config_label(components.config, "model"),
                              "task=topoopt prices TopoOpt's List 1 models: choose model=topoopt_<name>")
        workload = components.model.build_workload(components.parallel, components.device.memory_bytes)
        if workload.num_ranks % self.gpus_per_server:
            raise ConfigError("gpus_per_server", self.gpus_per_server,
                              f"must divide the job's {workload.num_ranks} GPUs")
        setting = Setting(workload.num_ranks // self.gpus_per_server, self.gpus_per_server, self.degree,
                          self.link_bandwidth_bps)
        traffic = server_traffic(workload, self.gpus_per_server)
        plan = topology_finder(setting.num_servers, self.degree, traffic.allreduce, traffic.mp_matrix)
        reduction = reduction_model(components.device, components.model.precision)
        compute = compute_timer(components.compute)
        labels = {"model": config_label(components.config, "model"), "device": str(components.device.name),
                  "degree": self.degree, "link_bandwidth_bps": self.link_bandwidth_bps,
                  "swept_reconfiguration_s": self.reconfiguration_s if self.reconfiguration_s is not None
                  else float("nan"), "num_servers": setting.num_servers, "num_ranks": workload.num_ranks,
                  "batch_per_gpu": components.model.batch,
                  "allreduce_degree": plan.allreduce_degree, "mp_degree": plan.mp_degree,
                  "all_to_all_over_allreduce": traffic.mp_bytes / traffic.allreduce_bytes
                  if traffic.allreduce_bytes else float("nan")}
        rows = []
        for system in self.systems:
            algorithm, label = self.algorithm_for(system, components.algorithm,
                                                  algorithm_label(components.config.collective))
            row: Row = {**labels, "fabric": system, "algorithm": label, "status": "ok"}
            row.update(self._system_numbers(system, setting, plan, traffic, workload, algorithm, reduction, compute,
                                            run_settings(components.config)))
            rows.append(row)
        summary = "\n".join(f"{row['model']} on {row['fabric']} (d = {self.degree}, "
                            f"B = {self.link_bandwidth_bps / units.GIGA:g} Gb/s): iteration "
                            f"{format_duration(row['iteration_time_s'])}" for row in rows)
        return TaskResult(rows=rows, summary=summary)

    def _system_numbers(self, system, setting, plan, traffic, workload, algorithm, reduction, compute,
                        settings) -> Row:
        from ddlsim.network.fabrics.topoopt.baselines import RECONFIGURING, static_fabric
        from ddlsim.training import simulate_training
        from ddlsim.training.pricing import Pricer
        from ddlsim.training.run import network_timer

        if system in RECONFIGURING:
            return self._reconfiguring(system, setting, workload, algorithm, reduction, compute)
        fabric = static_fabric(system, setting, plan)
        pricer = Pricer(network_timer(fabric, algorithm, reduction), compute)
        result = simulate_training(workload, pricer, settings, fabric=fabric)
        row: Row = {"iteration_time_s": result.iteration.iteration_time_s,
                    "compute_time_s": result.iteration.compute_time_s,
                    "reconfiguration_s": 0.0, "reconfigurations": 0}
        if system == TOPOOPT:
            row.update(_traffic_columns(plan, traffic))
        return row

    def _reconfiguring(self, system, setting, workload, algorithm, reduction, compute) -> Row:
        from ddlsim.network.fabrics.topoopt.baselines import off_circuit_fabric, reconfig_policy
        from ddlsim.training.reconfiguration import iteration_phases, simulate_reconfiguring
        from ddlsim.training.run import network_timer

        policy, gpus_per_node = reconfig_policy(system, setting, reconfiguration_s=self.reconfiguration_s,
                                                period_s=self.measurement_period_s)
        # The time spent off the circuits, priced with the TopoOpt system's algorithm.
        off_algorithm = self.algorithm_for(TOPOOPT, algorithm)[0]
        off_circuits = network_timer(off_circuit_fabric(setting, gpus_per_node), off_algorithm, reduction)
        phases = iteration_phases(workload, compute, gpus_per_node, lambda call: off_circuits(call).time_s)
        result = simulate_reconfiguring(phases, workload.num_ranks // gpus_per_node, policy, self.iterations)
        return {"iteration_time_s": result.steady_iteration_s,
                "compute_time_s": sum(phase.compute_s for phase in phases if phase.demand is None),
                "reconfiguration_s": policy.reconfiguration_s, "reconfigurations": result.reconfigurations}


def _traffic_columns(plan: Any, traffic: Any) -> Row:
    """Figs. 13-15: TopoOpt's bandwidth tax (bytes on links over bytes demanded), path length, and
    the most and least all-to-all (MP) bytes a physical link carries."""
    src, dst = np.nonzero(traffic.mp_matrix)
    loads = plan.topology.link_loads(src, dst, traffic.mp_matrix[src, dst])
    mp_link_bytes = float(loads.sum())
    demand = traffic.allreduce_bytes + traffic.mp_bytes
    return {"bandwidth_tax": (traffic.allreduce_bytes + mp_link_bytes) / demand if demand else float("nan"),
            "mp_bandwidth_tax": mp_link_bytes / traffic.mp_bytes if traffic.mp_bytes else float("nan"),
            "mean_path_length": plan.topology.mean_path_length(),
            "mp_max_link_bytes": float(loads.max()) if loads.size else float("nan"),
            "mp_min_link_bytes": float(loads.min()) if loads.size else float("nan")}
