"""`task=train`: train the configured model on the configured fabric; one row per run.

The row names the run (fabric, model, algorithm, device, overlap, the model's scalar settings
as ``model_<key>``), then the training numbers of `ddlsim.training` (iteration time, compute
and exposed communication time, communication share, time to accuracy, throughput, network
energy and cost, the per-collective breakdown ``comm_<name>_*`` and the partitioner's plan).

A point that cannot run (the model does not fit, the job is larger than the fabric) becomes a
row whose ``status`` says why, so that a sweep goes on and reports it; set
``task.on_infeasible=error`` to stop instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from ddlsim import units
from ddlsim.errors import ConfigError, InfeasibleError
from ddlsim.registry import ALGORITHMS, FABRICS, TASKS
from ddlsim.tasks.base import Components, Row, TaskResult
from ddlsim.training.run import train_on_fabric
from ddlsim.training.settings import training_settings

ON_INFEASIBLE = ("row", "error")


@dataclass
class TrainTaskConfig:
    """`on_infeasible`: ``row`` records an impossible point as a row with its reason; ``error`` stops.

    `collectives` maps a fabric kind (its registered name, e.g. ``ramp``) to the collective
    algorithm config to use on that fabric instead of the `collective` group's, so that a sweep
    over fabrics can give each system its own strategy (``{ramp: {name: best, exclude: [direct]}}``).
    """

    name: str = "train"
    on_infeasible: str = "row"
    collectives: dict[str, Any] = field(default_factory=dict)


def algorithm_label(config: Any) -> str:
    """``best``, or ``best(exclude=direct)`` when the selector leaves algorithms out."""
    exclude = list(config.get("exclude") or []) if hasattr(config, "get") else []
    return f"{config['name']}(exclude={','.join(exclude)})" if exclude else str(config["name"])


def hydra_choice(group: str) -> str | None:
    """The option chosen for `group` in the running Hydra job (``superpod_oversub``), if any."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return HydraConfig.get().runtime.choices.get(group)


def run_labels(components: Components) -> Row:
    """Columns that say which run a row belongs to."""
    config = components.config
    row: Row = {
        "fabric": hydra_choice("fabric") or components.fabric.name,
        "algorithm": algorithm_label(config.collective),
        "model": hydra_choice("model") or str(config.model.name),
    }
    model = OmegaConf.to_container(config.model, resolve=True)
    assert isinstance(model, dict)
    for key, value in model.items():
        if key != "name" and isinstance(value, bool | int | float | str):
            row[f"model_{key}"] = value
    row["device"] = components.device.name
    return row


def _fmt_time(value: float) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value / 86400:.4g} days" if value >= 2 * 86400 else units.format_time_s(value)


def summarize_row(row: Row) -> str:
    """A few readable lines about one run."""
    head = f"{row['model']} on {row['fabric']} ({row['algorithm']} collectives), {row['device']}"
    if row["status"] != "ok":
        return f"{head}: {row['status']}"
    plan = ", ".join(f"{key} {row[key]}" for key in ("tp_degree", "dp_degree", "local_batch") if key in row)
    share = f"{100 * row['comm_fraction']:.3g}%"
    lines = [
        f"{head}: {row['num_ranks']} GPUs" + (f" ({plan})" if plan else ""),
        f"  iteration time     {_fmt_time(row['iteration_time_s'])}  = compute {_fmt_time(row['compute_time_s'])}"
        f" + exposed communication {_fmt_time(row['exposed_comm_time_s'])} ({share})",
        f"  time to accuracy   {_fmt_time(row['time_to_accuracy_s'])}  ({row['num_steps']} steps)",
        f"  throughput         {row['samples_per_s']:.4g} samples/s",
        f"  compute source     {row['compute_source']} on {row['compute_device']}",
    ]
    if math.isfinite(row.get("network_energy_j", float("nan"))):
        lines.append(f"  network            {row['network_power_w']:.4g} W, {row['network_energy_j']:.4g} J per "
                     f"iteration, {row['network_cost_usd']:.4g} USD ({row['network_cost_scope']})")
    return "\n".join(lines)


@TASKS.register("train", TrainTaskConfig)
@dataclass(frozen=True)
class TrainTask:
    """Training time of the model on the fabric: iteration, time to accuracy, communication share."""

    on_infeasible: str = "row"
    collectives: tuple[tuple[str, Any, str], ...] = ()  # (fabric kind, algorithm, label)
    name: str = "train"

    @classmethod
    def from_config(cls, config: TrainTaskConfig) -> TrainTask:
        if config.on_infeasible not in ON_INFEASIBLE:
            raise ConfigError("on_infeasible", config.on_infeasible, f"must be one of {', '.join(ON_INFEASIBLE)}")
        collectives = []
        for kind, node in sorted(dict(config.collectives).items()):
            if kind not in FABRICS:
                raise ConfigError(f"collectives.{kind}", kind,
                                  f"unknown fabric; choose from {', '.join(FABRICS.names())}")
            plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            algorithm = ALGORITHMS.build(plain, key=f"collectives.{kind}")
            collectives.append((kind, algorithm, algorithm_label(plain)))
        return cls(on_infeasible=config.on_infeasible, collectives=tuple(collectives))

    def algorithm_for(self, components: Components) -> tuple[Any, str | None]:
        """The algorithm for this run's fabric, and its label when it replaces the collective group's."""
        for kind, algorithm, label in self.collectives:
            if kind == components.fabric.name:
                return algorithm, label
        return components.algorithm, None

    def run(self, components: Components) -> TaskResult:
        settings = training_settings(components.config.get("training"))
        labels = run_labels(components)
        algorithm, label = self.algorithm_for(components)
        if label is not None:
            labels["algorithm"] = label
        # A model that knows its own iteration graph (model=program: a captured program) trains itself.
        train = getattr(components.model, "train_on_fabric", None)
        try:
            if train is not None:
                result = train(components.parallel, components.device, components.compute, components.fabric,
                               algorithm, settings)
            else:
                result = train_on_fabric(components.model, components.parallel, components.device,
                                         components.compute, components.fabric, algorithm, settings)
        except InfeasibleError as error:
            if self.on_infeasible == "error":
                raise
            row = {**labels, "overlap": settings.overlap.value, "status": f"infeasible: {error}"}
        else:
            row = {**labels, "status": "ok", **result.row()}
            if settings.trace:
                row["trace_file"] = str(write_run_trace(result, components, algorithm))
        return TaskResult(rows=[row], summary=summarize_row(row))


def run_output_dir() -> Path:
    """The Hydra job's output directory, or the current directory outside Hydra."""
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else Path.cwd()


def write_run_trace(result: Any, components: Components, algorithm: Any) -> Path:
    """``trace.json`` of one run (`training.trace=true`), in the run's output directory."""
    from ddlsim.training.trace import result_graph, write_trace

    graph, placement, details = result_graph(result, components.fabric, algorithm, components.device,
                                             components.compute)
    return write_trace(graph, placement, run_output_dir(), details)
