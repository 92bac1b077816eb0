"""A pipelined iteration laid out stage by stage: its steps, each stage's stream, and its tail.

The workload lists the blocks of ONE micro-batch on one stage (`TaskBlock.per_micro_batch`;
`TaskBlock.stages` says which stages run each), then the blocks that run once per iteration.
Per-micro-batch blocks whose tasks are all forward form the forward step F, the others the
backward step B (recompute included) (`split_steps`). The 1F1B schedule (`one_f_one_b.py`) and
the interleaved one (`exchanges.py`) put each step of a stage on its compute stream
``stage<s>`` with a `StageBuilder`, and then add the tail (`add_tail`).

After a stage's last backward, the per-iteration blocks run on the stages they name. A
collective whose group spans stages (a group stride of at least one stage's ranks: the tied
embedding all-reduce between the first and last stage, the gradient-norm all-reduce over the
model-parallel group) starts on all of its stages together, when the last of them is ready,
so every stage's optimizer step waits for the slowest stage. With ``training.overlap =
dp_backward`` each stage's gradient all-reduce is split into `bucket_size` buckets on the
stream ``stage<s>_dp``, released as the last micro-batch's backward produces the gradients.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveOp, Phase
from ddlsim.core.work import ComputeTask, TaskBlock, Workload
from ddlsim.training.graph import IterationGraph, Op
from ddlsim.training.layer_overlap import LayerOverlap
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.plan import pipeline_stages
from ddlsim.training.settings import TrainingSettings


def stream_of(stage: int) -> str:
    return f"stage{stage}"


@dataclass(frozen=True)
class PipelineSteps:
    """A pipelined workload's blocks split into the forward step, backward step and iteration tail."""

    forward: tuple[TaskBlock, ...]
    backward: tuple[TaskBlock, ...]
    tail: tuple[TaskBlock, ...]


def is_handover(block: TaskBlock) -> bool:
    """A per-micro-batch block of stage-to-stage sends only (``pipeline_send_*``): the hand-over
    that the interleaved schedule issues in its exchange after the step (`exchanges.py`)."""
    return block.per_micro_batch and bool(block.tasks) and all(
        isinstance(task, CollectiveCall) and task.op is CollectiveOp.SEND_RECV for task in block.tasks)


def _is_forward(block: TaskBlock) -> bool:
    for task in block.tasks:  # noqa: SIM110 (a loop: no generator frame per block)
        if task.phase is not Phase.FORWARD:
            return False
    return True


def split_steps(workload: Workload) -> PipelineSteps:
    per_micro = [block for block in workload.blocks if block.per_micro_batch]
    if not per_micro:
        raise ConfigError("training.schedule", "1f1b",
                          f"workload {workload.name!r} has no per-micro-batch blocks to pipeline")
    forwards = [_is_forward(block) for block in per_micro]
    forward = tuple(block for block, is_forward in zip(per_micro, forwards) if is_forward)
    backward = tuple(block for block, is_forward in zip(per_micro, forwards) if not is_forward)
    if per_micro != [*forward, *backward]:
        raise ConfigError("workload.blocks", [block.name for block in per_micro],
                          "per-micro-batch blocks must list the forward step before the backward step")
    tail = tuple(block for block in workload.blocks if not block.per_micro_batch)
    return PipelineSteps(forward, backward, tail)


class StageBuilder:
    """Adds the ops of one pipelined iteration to a graph, remembering each stream's last op."""

    def __init__(self, workload: Workload, pricer: Pricer, settings: TrainingSettings) -> None:
        self.graph = IterationGraph()
        self.pricer = pricer
        self.settings = settings
        self.stages = pipeline_stages(workload)
        self.stage_ranks = workload.num_ranks // self.stages
        self.last: dict[str, int] = {}
        self.layers = LayerOverlap(settings.overlap)

    def add(self, stage: int, task: ComputeTask | CollectiveCall, executions: int, label: str,
            deps: Iterable[int] = (), stream: str | None = None) -> Op:
        stream = stream or stream_of(stage)
        if isinstance(task, CollectiveCall):
            op = self.graph.add_collective(task, self.pricer.collective(task), executions=executions, stream=stream,
                                           deps=deps, label=label, stage=stage)
        else:
            op = self.graph.add_compute(task, self.pricer.compute(task), executions=executions, stream=stream,
                                        deps=deps, label=label, stage=stage)
        self.last[stream] = op.index
        return op

    def side_waits(self) -> dict[int, tuple[int, ...]]:
        """Per stage, the side-stream ops (FSDP reduce-scatters, TP collectives) its tail waits for."""
        return {stage: self.layers.outstanding(stream_of(stage)) for stage in range(self.stages)}

    def step(self, blocks: tuple[TaskBlock, ...], stage: int, tag: str, deps: tuple[int, ...],
             expand: bool = False, chunk: int | None = None, stream: str | None = None
             ) -> tuple[int | None, list[int]]:
        """Add one step of `stage` (of its model `chunk`, default the stage itself); return (the op
        the next stage waits for, its backward compute ops).

        The next stage waits for the step's send; a step without one (a free transfer) hands over
        at its last op; None when the step adds no op.
        """
        send, backward, last = None, [], None
        chunk = stage if chunk is None else chunk
        for block in blocks:
            if not block.runs_on(chunk):
                continue
            repeats = [1] * block.repeat if expand else [block.repeat]
            for index, executions in enumerate(repeats):
                for task in block.tasks:
                    label = f"{block.name}[{tag}{'' if not expand else f'.{index}'}].{getattr(task, 'name', '')}"
                    main = stream or stream_of(stage)
                    op, on_main = self.layers.place(
                        task, deps, main, self.last.get(main),
                        lambda needs, where, item=task, count=executions * task.count, name=label:
                        self.add(stage, item, count, name, needs, where))
                    last = op.index
                    if on_main:
                        deps = ()
                    if isinstance(task, CollectiveCall) and task.op is CollectiveOp.SEND_RECV:
                        send = op.index
                    elif isinstance(task, ComputeTask) and task.phase is Phase.BACKWARD:
                        backward.append(op.index)
        return (send if send is not None else last), backward


def is_cross_stage(call: CollectiveCall, stage_ranks: int) -> bool:
    return call.group.size > 1 and call.group.stride >= stage_ranks


def add_tail(builder: StageBuilder, tail: tuple[TaskBlock, ...], last_backward: dict[int, list[int]],
             overlap: bool, waiting: dict[int, tuple[int, ...]] | None = None) -> None:
    """`waiting`: ops each stage's first tail op must also wait for (its last exchange's)."""
    waiting = {stage: deps for stage, deps in (waiting or {}).items() if deps}
    for block in tail:
        stages = [stage for stage in range(builder.stages) if block.runs_on(stage)]
        for task in block.tasks:
            executions = block.repeat * task.count
            if isinstance(task, CollectiveCall) and is_cross_stage(task, builder.stage_ranks):
                ready = tuple(builder.last[stream_of(stage)] for stage in stages if stream_of(stage) in builder.last)
                ready += tuple(dep for stage in stages for dep in waiting.pop(stage, ()))
                for stage in stages:
                    builder.add(stage, task, executions, f"{block.name}.{task.name}", ready)
                continue
            for stage in stages:
                if overlap and isinstance(task, CollectiveCall) and task.op.reduces and task.phase is Phase.BACKWARD:
                    waiting[stage] = waiting.get(stage, ()) + _buckets(builder, stage, task, executions,
                                                                       last_backward.get(stage, []))
                    continue
                builder.add(stage, task, executions, f"{block.name}.{getattr(task, 'name', '')}",
                            waiting.pop(stage, ()))


def _buckets(builder: StageBuilder, stage: int, call: CollectiveCall, executions: int,
             backward: list[int]) -> tuple[int]:
    """The gradient all-reduce in buckets released along the last micro-batch's backward ops.

    Gradients are produced in proportion to backward compute time (as `training/buckets.py`
    assumes for one stage): the bucket ending at fraction f of the buffer waits for the backward
    op that completes fraction f of the last micro-batch's backward time.
    """
    total = call.size_bytes * executions
    size = builder.settings.bucket_size_bytes
    count = max(1, math.ceil(total / size))
    durations = [builder.graph.ops[index].duration_s for index in backward]
    if not sum(durations) > 0:
        durations = [1.0] * len(backward)
    produced = list(itertools.accumulate(durations))
    fallback = (builder.last[stream_of(stage)],) if stream_of(stage) in builder.last else ()
    last = None
    for index in range(count):
        bucket_bytes = min(size, total - index * size) if total else 0
        needed = (index * size + bucket_bytes) / total if total else 1.0
        ready = next((i for i, value in enumerate(produced) if value >= needed * produced[-1] * (1 - 1e-12)),
                     len(produced) - 1) if produced else None
        deps = (backward[ready],) if ready is not None else fallback
        bucket = CollectiveCall(call.op, bucket_bytes, call.group, call.phase, call.name, root=call.root)
        last = builder.add(stage, bucket, 1, f"{call.name}.bucket[{index}]", deps, stream=f"{stream_of(stage)}_dp")
    assert last is not None
    return (last.index,)
