"""The one dispatcher: ``training.schedule`` to the schedule that builds the iteration graph.

A schedule is a callable ``(workload, pricer, settings) -> IterationGraph``. The dispatcher
imports every schedule ddlsim ships and lists them in `SCHEDULES`; no schedule imports it.

    sequential         one pipeline stage, blocks in order (`sequential.py`)
    1f1b               1F1B (`one_f_one_b.py`); the interleaved 1F1B when the plan has
                       virtual stages, as Megatron runs it
    interleaved_1f1b   the interleaved 1F1B with Megatron-Core's exchanges (`exchanges.py`);
                       1F1B when the plan has one virtual stage
    auto               1f1b for a workload of several pipeline stages or written per
                       micro-batch, else sequential

`register_schedule(name)` adds a schedule written outside ddlsim (a user's, a test's).
"""

from __future__ import annotations

from collections.abc import Callable

from ddlsim.core.errors import ConfigError
from ddlsim.core.work import Workload
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.exchanges import interleaved_graph
from ddlsim.training.schedules.one_f_one_b import one_f_one_b_graph
from ddlsim.training.schedules.plan import has_micro_batch_blocks, micro_batches, pipeline_stages, virtual_stages
from ddlsim.training.schedules.sequential import sequential_schedule
from ddlsim.training.settings import TrainingSettings

Schedule = Callable[[Workload, Pricer, TrainingSettings], IterationGraph]


def one_f_one_b_schedule(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    """``1f1b``: the 1F1B iteration graph, or the interleaved one when the plan has virtual stages."""
    if virtual_stages(workload) > 1:
        return interleaved_graph(workload, pricer, settings)
    return one_f_one_b_graph(workload, pricer, settings)


def interleaved_schedule(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    """``interleaved_1f1b``: the interleaved 1F1B iteration graph; 1F1B when v = 1."""
    if virtual_stages(workload) == 1:
        return one_f_one_b_graph(workload, pricer, settings)
    return interleaved_graph(workload, pricer, settings)


SCHEDULES: dict[str, Schedule] = {
    "sequential": sequential_schedule,
    "1f1b": one_f_one_b_schedule,
    "interleaved_1f1b": interleaved_schedule,
}


def register_schedule(name: str) -> Callable[[Schedule], Schedule]:
    """Decorator: make a schedule written outside ddlsim selectable as ``training.schedule = name``."""
    def decorator(schedule: Schedule) -> Schedule:
        if name in SCHEDULES and SCHEDULES[name] is not schedule:
            raise TypeError(f"schedule {name!r} is registered twice")
        SCHEDULES[name] = schedule
        return schedule

    return decorator


def select_schedule(settings: TrainingSettings, workload: Workload) -> Schedule:
    name = settings.schedule
    if name == "sequential" and (pipeline_stages(workload) > 1 or (
            has_micro_batch_blocks(workload) and micro_batches(workload) > 1)):
        raise ConfigError("training.schedule", name,
                          f"runs every block once on one stream, but workload {workload.name!r} has "
                          f"{pipeline_stages(workload)} pipeline stages and {workload.plan.get('micro_batches', 1)} "
                          "micro-batches; use auto or 1f1b")
    if name == "auto":
        name = "1f1b" if pipeline_stages(workload) > 1 or has_micro_batch_blocks(workload) else "sequential"
    if name not in SCHEDULES:
        raise ConfigError("training.schedule", settings.schedule,
                          f"unknown schedule; choose auto or one of {', '.join(sorted(SCHEDULES))}")
    return SCHEDULES[name]
