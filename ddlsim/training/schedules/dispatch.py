"""Iteration schedules: how a workload's task blocks become an `IterationGraph`.

A schedule is a callable ``(workload, pricer, settings) -> IterationGraph`` registered under a
name. ``sequential`` (this module) runs the blocks of one pipeline stage in order, with the
overlap settings of `TrainingSettings`. A pipelined schedule (1F1B, issue 9) lives in
``training/pipeline.py`` and registers itself with `register_schedule("1f1b")`; ``auto``
picks it when the workload plan has more than one pipeline stage.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import CollectiveCall, Phase
from ddlsim.core.work import ComputeTask, TaskBlock, Workload
from ddlsim.training.buckets import GradientSync, add_gradient_buckets, find_gradient_sync
from ddlsim.training.graph import COMPUTE_STREAM, IterationGraph, Op
from ddlsim.training.layer_overlap import LayerOverlap
from ddlsim.training.pricing import Pricer
from ddlsim.training.settings import TrainingSettings

Schedule = Callable[[Workload, Pricer, TrainingSettings], IterationGraph]
SCHEDULES: dict[str, Schedule] = {}
SCHEDULE_MODULES = {"1f1b": "ddlsim.training.schedules.one_f_one_b",
                    "interleaved_1f1b": "ddlsim.training.schedules.interleaved"}

# Above this many repeats, a backward block is expanded in this many chunks of consecutive
# repeats; gradient buckets then become ready at chunk granularity.
MAX_EXPANDED_REPEATS = 1024

PIPELINE_PLAN_KEYS = ("pp_degree", "pipeline_degree")


def register_schedule(name: str) -> Callable[[Schedule], Schedule]:
    def decorator(schedule: Schedule) -> Schedule:
        if name in SCHEDULES and SCHEDULES[name] is not schedule:
            raise TypeError(f"schedule {name!r} is registered twice")
        SCHEDULES[name] = schedule
        return schedule

    return decorator


def pipeline_stages(workload: Workload) -> int:
    for key in PIPELINE_PLAN_KEYS:
        if key in workload.plan:
            return int(workload.plan[key])  # type: ignore[call-overload]
    return 1


def has_micro_batch_blocks(workload: Workload) -> bool:
    """True for a workload written per micro-batch (`TaskBlock.per_micro_batch`), such as GPT's."""
    return any(block.per_micro_batch for block in workload.blocks)


def select_schedule(settings: TrainingSettings, workload: Workload) -> Schedule:
    for module in SCHEDULE_MODULES.values():  # each registers its schedule when first imported
        importlib.import_module(module)
    name = settings.schedule
    if name == "sequential" and (pipeline_stages(workload) > 1 or (
            has_micro_batch_blocks(workload) and int(workload.plan.get("micro_batches", 1)) > 1)):
        raise ConfigError("training.schedule", name,
                          f"runs every block once on one stream, but workload {workload.name!r} has "
                          f"{pipeline_stages(workload)} pipeline stages and {workload.plan.get('micro_batches', 1)} "
                          "micro-batches; use auto or 1f1b")
    if name == "auto":
        name = "1f1b" if pipeline_stages(workload) > 1 or has_micro_batch_blocks(workload) else "sequential"
        if name not in SCHEDULES:
            raise InfeasibleError(
                f"workload {workload.name!r} has {pipeline_stages(workload)} pipeline stages, but no pipelined "
                f"schedule is registered (known schedules: {', '.join(sorted(SCHEDULES))})")
    if name not in SCHEDULES:
        raise ConfigError("training.schedule", settings.schedule,
                          f"unknown schedule; choose auto or one of {', '.join(sorted(SCHEDULES))}")
    return SCHEDULES[name]


def _chunks(repeat: int, limit: int) -> list[int]:
    """Split `repeat` into at most `limit` chunk sizes that differ by at most one."""
    parts = min(repeat, limit)
    base, extra = divmod(repeat, parts)
    return [base + 1] * extra + [base] * (parts - extra)


def _has_backward(block: TaskBlock) -> bool:
    return any(isinstance(task, ComputeTask) and task.phase is Phase.BACKWARD for task in block.tasks)


@register_schedule("sequential")
def sequential_schedule(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    """Blocks in order on one compute stream; DP gradient buckets on their own stream if overlapped.

    Without overlap every block's repeats are collapsed into one op per task (the sum is the
    same on a single stream). With ``dp_backward`` overlap, blocks that hold backward compute
    are expanded repeat by repeat, so that gradient buckets become ready as layers finish.
    """
    graph = IterationGraph()
    overlap = settings.overlap.buckets
    sync: GradientSync | None = find_gradient_sync(workload) if overlap else None
    layers = LayerOverlap(settings.overlap)
    backward_ops: list[int] = []
    waiting_for_buckets: tuple[int, ...] = ()
    last_main: int | None = None
    for block_index, block in enumerate(workload.blocks):
        expand = sync is not None and _has_backward(block)
        for repeat_index, executions in enumerate(_chunks(block.repeat, MAX_EXPANDED_REPEATS) if expand
                                                  else [block.repeat]):
            for task_index, task in enumerate(block.tasks):
                if sync is not None and (block_index, task_index) in sync.positions:
                    if (block_index, task_index) == sync.first:
                        waiting_for_buckets = add_gradient_buckets(graph, sync, backward_ops, pricer,
                                                                   settings.bucket_size_bytes)
                        waiting_for_buckets += layers.outstanding(COMPUTE_STREAM)
                    continue
                label = f"{block.name}[{repeat_index}].{task.name or getattr(task, 'op', '')}"
                deps, waiting_for_buckets = waiting_for_buckets, ()

                def add(needs: tuple[int, ...], stream: str, item: ComputeTask | CollectiveCall = task,
                        count: int = executions, name: str = label) -> Op:
                    if isinstance(item, CollectiveCall):
                        return graph.add_collective(item, pricer.collective(item), executions=count * item.count,
                                                    deps=needs, label=name, stream=stream)
                    return graph.add_compute(item, pricer.compute(item), executions=count * item.count,
                                             deps=needs, label=name, stream=stream)

                op, on_main = layers.place(task, deps, COMPUTE_STREAM, last_main, add)
                if not on_main:
                    waiting_for_buckets = deps
                    continue
                last_main = op.index
                if isinstance(task, ComputeTask) and task.phase is Phase.BACKWARD:
                    backward_ops.append(op.index)
    return graph
