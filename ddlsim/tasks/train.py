"""`task=train`: train the configured model on the configured fabric; one row per run.

The row names the run (fabric, model, algorithm, device, overlap, the model's scalar settings
as ``model_<key>``), then the training numbers of `ddlsim.training` (iteration time, compute
and exposed communication time, communication share, time to accuracy, throughput, network
energy and cost, the per-collective breakdown ``comm_<name>_*`` and the partitioner's plan).

Every label comes from the composed config itself (`run_labels`), never from Hydra's state, so
one config gives the same row through `ddlsim.run`, the command line and any launcher.

A point that cannot run (the model does not fit, the job is larger than the fabric) raises
`InfeasibleError`. Inside a sweep (`ddlsim.app.runner.run_point`) it becomes a row whose ``status``
says why (`TrainTask.labels` plus the status), so that the sweep goes on and reports it; set
``task.on_infeasible=error`` to stop the sweep instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS, FABRICS, LABEL_KEY, TASKS
from ddlsim.report.quantities import format_duration, format_number
from ddlsim.tasks.base import Components, Row, TaskResult, config_label
from ddlsim.training.at_scale.costs import COLUMNS as AT_SCALE_COLUMNS
from ddlsim.training.run import train_on_fabric
from ddlsim.training.settings import run_settings
from ddlsim.training.simulate import collective_rows

ON_INFEASIBLE = ("row", "error")


@dataclass
class TrainTaskConfig:
    """`on_infeasible`: in a sweep, ``row`` records a point that cannot run as a row with its reason;
    ``error`` stops the sweep. A single run always stops with the reason.

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


# Model keys that switch a paper's assumption (the `assumptions` group) get a column only when
# switched, so that rows of ddlsim's own modelling keep their columns.
_SWITCH_DEFAULTS = {"tp_all_reduces": "megatron", "shape_source": "scaling_laws"}


def run_labels(config: Any) -> Row:
    """Columns that say which run a row belongs to, read from the composed config alone (a DictConfig,
    or the same as plain resolved containers: `Components.view`)."""
    row: Row = {
        "fabric": config_label(config, "fabric"),
        "algorithm": algorithm_label(config["collective"]),
        "model": config_label(config, "model"),
    }
    model = OmegaConf.to_container(config["model"], resolve=True) if OmegaConf.is_config(config) else config["model"]
    assert isinstance(model, dict)
    for key, value in model.items():
        if key in ("name", LABEL_KEY) or _SWITCH_DEFAULTS.get(key) == value:
            continue
        if isinstance(value, bool | int | float | str):
            row[f"model_{key}"] = value
    row["device"] = str(config["device"]["name"])
    return row


def _fmt_time(value: float) -> str:
    return format_duration(value)


def summarize_row(row: Row) -> str:
    """A few readable lines about one run (4 significant digits, each time in a unit that suits it)."""
    head = f"{row['model']} on {row['fabric']} ({row['algorithm']} collectives), {row['device']}"
    if row["status"] != "ok":
        return f"{head}: {row['status']}"
    plan = ", ".join(f"{key} {row[key]}" for key in ("tp_degree", "pp_degree", "dp_degree", "local_batch")
                     if key in row and (key != "pp_degree" or row[key] > 1))
    share = f"{format_number(100 * row['comm_fraction'], 3)}%"
    # The three terms add up to the iteration (training/timeline.py); the bubble of a pipelined run is shown
    # even when it is 0, so that the sum is visibly whole.
    pipelined = row.get("pp_degree", 1) > 1 or row.get("bubble_time_s", 0.0) > 0
    bubble = f" + pipeline bubble {_fmt_time(row.get('bubble_time_s', 0.0))}" if pipelined else ""
    costs = {column: row.get(column, 0.0) for column in AT_SCALE_COLUMNS}
    at_scale = ""
    if any(costs.values()):
        largest = max(costs, key=costs.__getitem__)
        at_scale = (f" + at scale {_fmt_time(sum(costs.values()))} (largest: {largest.removesuffix('_s')} "
                    f"{_fmt_time(costs[largest])})")
    lines = [
        f"{head}: {row['num_ranks']} GPUs" + (f" ({plan})" if plan else ""),
        f"  iteration time     {_fmt_time(row['iteration_time_s'])} = compute {_fmt_time(row['compute_time_s'])}"
        f" + exposed communication {_fmt_time(row['exposed_comm_time_s'])} ({share}){bubble}{at_scale}",
        f"  time to accuracy   {_fmt_time(row['time_to_accuracy_s'])} ({format_number(row['num_steps'])} steps)"
        + (f", goodput {format_number(100 * row['goodput'], 3)}% (failures, checkpoints, restarts)"
           if row.get("goodput", 1.0) < 1.0 else ""),
        f"  throughput         {format_number(row['samples_per_s'])} samples/s",
        "  compute source     " + (f"{row['compute_source']} on {row['compute_device']}" if row["compute_source"]
                                     else "none (the run has no compute)"),
    ]
    if "comm_alone_time_s" in row:  # concurrent collectives shared the fabric (network.contention=on)
        alone, shared = row["comm_alone_time_s"], row["comm_time_s"]
        stretch = f"{format_number(100 * (shared / alone - 1), 3)}%" if alone > 0 else "0%"
        lines.append(f"  contention         communication {_fmt_time(shared)} shared, {_fmt_time(alone)} alone "
                     f"(+{stretch})")
    if math.isfinite(row.get("network_energy_j", float("nan"))):
        lines.append(f"  network            {format_number(row['network_power_w'])} W, "
                     f"{format_number(row['network_energy_j'])} J per iteration, "
                     f"{format_number(row['network_cost_usd'])} USD ({row['network_cost_scope']})")
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

    @staticmethod
    def labels(config: Any) -> Row:
        """The columns of a row for a point that could not run: its labels and overlap setting."""
        labels = run_labels(config)
        own = (OmegaConf.select(config, "task.collectives") or {}).get(str(config.fabric.name))
        if own is not None:
            labels["algorithm"] = algorithm_label(own)
        return {**labels, "overlap": str(OmegaConf.select(config, "training.overlap", default="none"))}

    def run(self, components: Components) -> TaskResult:
        settings = run_settings(components.view)
        labels = run_labels(components.view)
        algorithm, label = self.algorithm_for(components)
        if label is not None:
            labels["algorithm"] = label
        # A model that knows its own iteration graph (model=program: a captured program) trains itself.
        train = getattr(components.model, "train_on_fabric", None)
        if train is not None:
            result = train(components.parallel, components.device, components.compute, components.fabric,
                           algorithm, settings)
        else:
            result = train_on_fabric(components.model, components.parallel, components.device,
                                     components.compute, components.fabric, algorithm, settings)
        row = {**labels, "status": "ok", **result.row()}
        if settings.trace:
            row["trace_file"] = str(write_run_trace(result, components, algorithm))
        if settings.chakra:
            row["chakra_dir"] = str(write_run_chakra(components, algorithm, settings))
        # the run's labels, but `algorithm`: in the long form that is the algorithm each collective ran
        run = {key: value for key, value in labels.items() if key != "algorithm"}
        collectives = [{"run_id": 0, **run, **item} for item in collective_rows(result.iteration)]
        return TaskResult(rows=[row], summary=summarize_row(row), collectives=collectives)


def write_run_chakra(components: Components, algorithm: Any = None, settings: Any = None) -> Path:
    """The run's workload as Chakra ETs (`training.chakra=true`), in ``<output>/chakra/``: a captured
    program's records, or an analytic model's iteration graph as the run priced it."""
    directory = (components.output_dir or Path.cwd()) / "chakra"
    program = getattr(components.model, "program", None)
    if program is not None:
        from ddlsim.chakra.analytic_load import AnalyticTrace
        from ddlsim.chakra.export import write_chakra

        captured = program()
        if isinstance(captured, AnalyticTrace):  # an analytic model's ETs read back (model=chakra) write themselves
            captured.to_chakra(directory)
        else:
            write_chakra(captured, directory, compute=components.compute)
        return directory
    from ddlsim.chakra.analytic_export import write_training_chakra

    write_training_chakra(components.model, components.parallel, components.device, components.compute,
                          components.fabric, components.algorithm if algorithm is None else algorithm,
                          settings or run_settings(components.config), directory)
    return directory


def write_run_trace(result: Any, components: Components, algorithm: Any) -> Path:
    """``trace.json`` of one run (`training.trace=true`), in the run's output directory."""
    from ddlsim.training.trace import result_graph, write_trace

    graph, placement, details = result_graph(result, components.fabric, algorithm, components.device,
                                             components.compute)
    return write_trace(graph, placement, components.output_dir or Path.cwd(), details,
                       getattr(result, "at_scale", None))
