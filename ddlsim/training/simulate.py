"""From a priced workload to training time: iteration time, time-to-accuracy, throughput.

    result = simulate_training(workload, pricer, settings, fabric=fabric)
    result.iteration.iteration_time_s, result.time_to_accuracy_s, result.row()

`row()` is the tidy result row (unit-suffixed columns) the `train` task writes; the
per-collective breakdown appears as ``comm_<name>_*`` columns.

Throughput, the same for analytic and captured workloads: ``samples_per_s`` (global batch per
iteration), ``tokens_per_s`` (the plan's ``tokens_per_step`` per iteration) and ``mfu``: the
plan's ``model_flop_per_step`` (the forward and backward FLOPs of every rank as the kernels
count them: causal attention at half, recompute and optimizer left out) per second, over the
dense peak of every GPU at the model's precision (``peak_flop_per_s``, given by whoever knows
the device). NaN where the workload does not say.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.training.analytic import analytic_iteration
from ddlsim.training.at_scale.costs import AtScaleCosts, at_scale_costs, with_costs
from ddlsim.training.energy import NetworkEnergy, network_energy
from ddlsim.training.failures import FailureCosts, checkpoint_bytes_of, failure_costs
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.dispatch import select_schedule
from ddlsim.training.schedules.plan import micro_batches, pipeline_stages, virtual_stages
from ddlsim.training.settings import Overlap, TrainingSettings
from ddlsim.training.timeline import IterationSummary, Placement, place, summarize

NAN = float("nan")


@dataclass(frozen=True)
class TrainingResult:
    """One workload trained on one fabric: the iteration and what it adds up to."""

    workload: Workload
    settings: TrainingSettings
    iteration: IterationSummary
    energy: NetworkEnergy
    peak_flop_per_s: float = NAN
    at_scale: AtScaleCosts = AtScaleCosts()
    failures: FailureCosts | None = None

    @property
    def num_steps(self) -> int:
        return self.workload.num_steps

    @property
    def time_to_accuracy_s(self) -> float:
        """Steps x iteration time, with the lost work, checkpoints and restarts of failures when
        ``training.failures.enabled``; NaN when the workload has no step count."""
        if self.num_steps <= 0:
            return NAN
        train_s = self.num_steps * self.iteration.iteration_time_s
        return train_s / self.goodput

    @property
    def goodput(self) -> float:
        """The fraction of wall time that advances training (1 without ``training.failures``)."""
        return self.failures.goodput if self.failures is not None else 1.0

    @property
    def samples_per_s(self) -> float:
        time_s = self.iteration.iteration_time_s
        return self.workload.global_batch / time_s if time_s > 0 else NAN

    @property
    def tokens_per_s(self) -> float:
        tokens, time_s = self.workload.plan.get("tokens_per_step", 0), self.iteration.iteration_time_s
        return tokens / time_s if tokens and time_s > 0 else NAN

    @property
    def mfu(self) -> float:
        """Model FLOPs per second over the dense peak of every GPU (module docstring)."""
        flop, time_s = float(self.workload.plan.get("model_flop_per_step", 0)), self.iteration.iteration_time_s
        peak = self.peak_flop_per_s
        if not flop or not peak > 0 or time_s <= 0:
            return NAN
        return flop / time_s / (peak * self.workload.num_ranks)

    def row(self) -> dict[str, Any]:
        it = self.iteration
        row: dict[str, Any] = {
            "workload": self.workload.name,
            "num_ranks": self.workload.num_ranks,
            "overlap": self.settings.overlap.value,
            "iteration_time_s": it.iteration_time_s,
            "compute_time_s": it.compute_time_s,
            "comm_time_s": it.comm_time_s,
            "exposed_comm_time_s": it.exposed_comm_time_s,
            "hidden_comm_time_s": it.hidden_comm_time_s,
            "bubble_time_s": it.bubble_time_s,
            "comm_fraction": it.comm_fraction,
            "comm_latency_s": it.comm_latency_s,
            "comm_transfer_s": it.comm_transfer_s,
            "comm_reduction_s": it.comm_reduction_s,
            "num_steps": self.num_steps,
            "time_to_accuracy_s": self.time_to_accuracy_s,
            "global_batch": self.workload.global_batch,
            "samples_per_s": self.samples_per_s,
            "tokens_per_s": self.tokens_per_s,
            "mfu": self.mfu,
            "compute_source": it.compute_source,
            "compute_device": "+".join(it.compute_devices),
            **self.at_scale.row(),
            "goodput": self.goodput,
            **(self.failures.row() if self.failures is not None else {}),
            **self.energy.row(),
        }
        for key, value in self.workload.plan.items():
            if key not in row:
                row[str(key)] = value
            elif row[key] != value:
                row[f"plan_{key}"] = value
        for item in it.collectives:
            prefix = f"comm_{item.key}"
            row.update({
                f"{prefix}_algorithm": item.algorithm,
                f"{prefix}_calls": item.calls,
                f"{prefix}_group_size": item.group_size,
                f"{prefix}_time_s": item.time_s,
                f"{prefix}_latency_s": item.latency_s,
                f"{prefix}_transfer_s": item.transfer_s,
                f"{prefix}_compute_s": item.compute_s,
            })
            if item.alone_s is not None:  # concurrent collectives shared the fabric
                row[f"{prefix}_alone_s"] = item.alone_s
                row[f"{prefix}_slowdown"] = item.slowdown
        if any(item.alone_s is not None for item in it.collectives):
            row["comm_alone_time_s"] = sum(item.alone_s or item.time_s for item in it.collectives)
        return row


def collective_rows(iteration: Any) -> list[dict[str, Any]]:
    """One row per collective of `iteration` (an `IterationSummary`): the long form of the
    ``comm_<name>_*`` columns, with the bytes and the exposed time they leave out (`collectives.csv`,
    docs/training.md). `size_bytes` is what each rank contributes, summed over the calls; `alone_s`
    is the time with nothing else on the fabric (`time_s` when nothing shared it)."""
    return [{"collective": item.key, "op": item.op, "algorithm": item.algorithm, "calls": item.calls,
             "group_size": item.group_size, "size_bytes": item.size_bytes, "time_s": item.time_s,
             "latency_s": item.latency_s, "transfer_s": item.transfer_s, "reduction_s": item.compute_s,
             "exposed_s": item.exposed_s, "alone_s": item.time_s if item.alone_s is None else item.alone_s}
            for item in iteration.collectives]


def build_graph(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    return select_schedule(settings, workload)(workload, pricer, settings)


MAX_CONTENDED_STEPS = 16_384
"""Above this many pipeline steps (micro-batches x stages x virtual stages), a pipelined iteration
that the closed form covers is summed up in closed form, without contention (with a warning)."""


class ContentionSkipped(UserWarning):
    """A pipelined iteration too large to lay out op by op was summed up without contention."""


def contends(settings: TrainingSettings, fabric: Any, workload: Workload | None = None) -> bool:
    """Whether concurrent collectives of an analytic iteration share the fabric: contention on,
    a fabric to share, an overlap setting that lets collectives run side by side, and (for a
    pipeline) few enough steps to lay out op by op."""
    if not (settings.contention and fabric is not None and settings.overlap is not Overlap.NONE):
        return False
    if workload is None:
        return True
    steps = micro_batches(workload) * pipeline_stages(workload) * virtual_stages(workload)
    if steps > MAX_CONTENDED_STEPS and not (settings.overlap.fsdp_prefetch or settings.overlap.tp_comm):
        warnings.warn(f"network.contention: {workload.name}'s pipelined iteration has {steps:,} steps (micro-batches "
                      f"x stages), more than {MAX_CONTENDED_STEPS:,}; it is summed up in closed form, each "
                      "collective priced alone (docs/contention.md)", ContentionSkipped, stacklevel=3)
        return False
    return True


def placed(graph: IterationGraph, settings: TrainingSettings, fabric: Any, *, captured: bool = False) -> Placement:
    """The graph placed in time: concurrent collectives sharing `fabric` when contention is on
    (for a capture, its own streams decide what overlaps; for an analytic model, the overlap
    setting), else each at its isolated price."""
    if fabric is None or not settings.contention or not (captured or settings.overlap is not Overlap.NONE):
        return place(graph)
    from ddlsim.network.contention.model import contention_model
    from ddlsim.training.contended import place_contended

    return place_contended(graph, contention_model(fabric))


def iteration_summary(workload: Workload, pricer: Pricer, settings: TrainingSettings,
                      fabric: Any = None) -> IterationSummary:
    """The iteration summed up: in closed form where `analytic_iteration` applies (and
    ``settings.engine`` is ``auto``, and no concurrent collectives share `fabric`), else from the
    placed graph of every op."""
    if settings.engine == "auto" and not contends(settings, fabric, workload):
        summary = analytic_iteration(workload, pricer, settings)
        if summary is not None:
            return summary
    graph = build_graph(workload, pricer, settings)
    return summarize(graph, placed(graph, settings, fabric))


def peak_of(device: Any, workload: Workload) -> float:
    """`device`'s dense peak at the precision the workload's plan names (NaN without a device)."""
    if device is None:
        return NAN
    precision = Precision(workload.plan.get("precision", Precision.BF16.value))
    check = getattr(device, "check_precision", None)
    return device.peak(check(precision) if check is not None else precision)


def checkpoint_bytes(workload: Workload) -> int:
    """The model and optimizer state a restart reads (its parameters in their precision, fp32 main
    weights and Adam's moments); 0 where the plan does not say its parameters."""
    params = int(workload.plan.get("params_total", 0) or 0)
    precision = Precision(workload.plan.get("precision", Precision.BF16.value))
    return checkpoint_bytes_of(params, precision.bytes_per_element) if params else 0


def at_scale(summary: IterationSummary, workload: Workload, settings: TrainingSettings, device: Any
             ) -> tuple[IterationSummary, AtScaleCosts, FailureCosts | None]:
    """The iteration with the at-scale costs `settings` switches on, the costs, and what failures
    do to time-to-train (None without ``training.failures.enabled``)."""
    costs = at_scale_costs(summary, dict(workload.plan), workload.num_ranks, device, settings.at_scale)
    summary = with_costs(summary, costs)
    failures = None
    if settings.failures.enabled:
        train_s = workload.num_steps * summary.iteration_time_s if workload.num_steps > 0 else summary.iteration_time_s
        failures = failure_costs(settings.failures, workload.num_ranks, train_s, checkpoint_bytes(workload))
    return summary, costs, failures


def simulate_training(workload: Workload, pricer: Pricer, settings: TrainingSettings | None = None, *,
                      fabric: Any = None, device: Any = None) -> TrainingResult:
    """Schedule one iteration of `workload`, place it in time and sum it up; `device` gives the
    peak that `mfu` is taken against and the at-scale costs' device figures."""
    settings = settings or TrainingSettings()
    summary, costs, failures = at_scale(iteration_summary(workload, pricer, settings, fabric), workload, settings,
                                        device)
    energy = network_energy(fabric, workload.num_ranks, summary.iteration_time_s, workload.num_steps)
    return TrainingResult(workload=workload, settings=settings, iteration=summary, energy=energy,
                          peak_flop_per_s=peak_of(device, workload), at_scale=costs, failures=failures)
