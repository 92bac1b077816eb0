"""`task=workload_comm`: one training iteration's collective communication of real models, per
fabric size and all-reduce algorithm (SiPAC VI-A "Deep Learning Workloads", Fig. 12).

SiPAC Fig. 12 replays the collectives of VGG, CANDLE and BERT task graphs (from [54], not
published with the paper) on p = 64 and 512 CUs at 2,048 Gb/s per CU, with hierarchical-ring,
mesh and (on BCube and SiPAC) SiPCO all-reduce, and reports the job completion time (JCT) of
the communication alone. ddlsim takes the collectives from its own models of the same networks,
TopoOpt List 1's VGG-16, CANDLE and BERT (`model=topoopt`, data parallel, fp32 gradients), built
on p GPUs; the JCT is the sum of every collective call of one iteration (count x time), with no
compute, as the paper models only communication. Device memory is not checked: only the message
sizes are used.

For each `num_ranks` the fabric is resized to p CUs (`Fabric.sized_config`, as `task=hybrid`):
SiPAC and BCube get L = log_r p levels, the torus near-square dimensions. `collectives` gives
each fabric kind its algorithms (`ddlsim.tasks.algorithms`); one row per (model, p, algorithm),
and combinations an algorithm cannot run are listed under the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from omegaconf import OmegaConf

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import FABRICS, MODELS, TASKS
from ddlsim.report.table import quantity_table
from ddlsim.tasks.algorithms import build_choices, build_per_fabric, check_rank_counts, choices_for
from ddlsim.tasks.base import Components, TaskResult, config_label

WORKLOADS = ("vgg16", "candle", "bert", "resnet50", "dlrm", "ncf")  # TopoOpt List 1's models
UNCHECKED_MEMORY_BYTES = 2**62  # message sizes only: the paper models communication alone


@dataclass
class WorkloadCommTaskConfig:
    """Models x CU counts x algorithms on the configured fabric; see the module docstring."""

    name: str = "workload_comm"
    models: list[str] = field(default_factory=lambda: ["vgg16", "candle", "bert"])
    num_ranks: list[int] = field(default_factory=lambda: [64, 512])
    algorithms: list[Any] = field(default_factory=list)
    collectives: dict[str, Any] = field(default_factory=dict)  # fabric kind -> algorithm config(s)
    fit_fabric: bool = True


def iteration_calls(model_name: str, num_ranks: int) -> list[Any]:
    """The collective calls of one iteration of TopoOpt List 1's `model_name` on `num_ranks` GPUs."""
    from ddlsim.workload.parallel import ParallelConfig

    model = MODELS.build({"name": "topoopt", "model": model_name, "num_servers": num_ranks, "gpus_per_server": 1},
                         key="task.models")
    workload = model.build_workload(ParallelConfig(max_gpus=num_ranks), UNCHECKED_MEMORY_BYTES)
    return list(workload.collective_calls())


@TASKS.register("workload_comm", WorkloadCommTaskConfig)
@dataclass(frozen=True)
class WorkloadCommTask:
    """One iteration's collectives of VGG-16, CANDLE, BERT, ... per CU count and algorithm (SiPAC Fig. 12)."""

    reads: ClassVar[tuple[str, ...]] = ("fabric", "collective", "device")

    models: tuple[str, ...]
    num_ranks: tuple[int, ...]
    algorithms: tuple[Any, ...]
    collectives: tuple[tuple[str, tuple[Any, ...]], ...]
    fit_fabric: bool
    name: str = "workload_comm"

    @classmethod
    def from_config(cls, config: WorkloadCommTaskConfig) -> WorkloadCommTask:
        if not config.models:
            raise ConfigError("models", list(config.models), "must list at least one model")
        for model in config.models:
            if model not in WORKLOADS:
                raise ConfigError("models", model, f"must be one of {', '.join(WORKLOADS)} (TopoOpt List 1)")
        check_rank_counts(config.num_ranks)
        if min(config.num_ranks) < 2:
            raise ConfigError("num_ranks", list(config.num_ranks), "must list CU counts >= 2")
        return cls(tuple(config.models), tuple(config.num_ranks), build_choices(config.algorithms, "algorithms"),
                   tuple(build_per_fabric(config.collectives).items()), config.fit_fabric)

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network import CollectiveEstimator
        from ddlsim.training.run import reduction_model

        node = OmegaConf.to_container(components.config.fabric, resolve=True)
        assert isinstance(node, dict)
        fabric_class = FABRICS.entry(str(node["name"])).factory
        label = config_label(components.config, "fabric")
        choices = choices_for(components.config, components.fabric.name, dict(self.collectives), self.algorithms,
                              components.algorithm)
        reduction = reduction_model(components.device)
        rows, skipped = [], []
        for num_ranks in self.num_ranks:
            fabric = FABRICS.build(fabric_class.sized_config(node, num_ranks), key="fabric") if self.fit_fabric \
                else components.fabric
            calls = {model: iteration_calls(model, num_ranks) for model in self.models}
            for choice in choices:
                estimator = CollectiveEstimator(fabric, choice.algorithm, reduction)
                for model, model_calls in calls.items():
                    try:
                        estimates = [(call, estimator.estimate(call.op, call.size_bytes, layout=call.group))
                                     for call in model_calls]
                    except InfeasibleError as error:
                        skipped.append(f"{model} x {num_ranks} CUs x {choice.label}: {error}")
                        continue
                    rows.append(_row(label, model, num_ranks, choice.label, estimates))
        if not rows:
            raise InfeasibleError("no point of the sweep could be priced: " + "; ".join(skipped[:5]))
        table = quantity_table(rows, {"fabric": None, "model": None, "num_ranks": None, "algorithm": None,
                                      "size_bytes": "size_bytes", "time_s": "time_s"},
                               {"num_ranks": "CUs", "size_bytes": "bytes per rank", "time_s": "JCT"})
        if skipped:
            table += f"\nskipped {len(skipped)} point(s):\n" + "\n".join(f"  {line}" for line in dict.fromkeys(skipped))
        return TaskResult(rows=rows, summary=table)


def _row(fabric: str, model: str, num_ranks: int, algorithm: str, estimates: list) -> dict[str, Any]:
    total = {key: sum(call.count * getattr(estimate, key) for call, estimate in estimates)
             for key in ("time_s", "latency_s", "transfer_s", "compute_s")}
    ran = sorted({estimate.algorithm for _, estimate in estimates})
    return {"fabric": fabric, "model": model, "num_ranks": num_ranks, "algorithm": algorithm,
            "algorithm_ran": ",".join(ran), "num_calls": sum(call.count for call, _ in estimates),
            "size_bytes": sum(call.count * call.size_bytes for call, _ in estimates), **total, "status": "ok"}
