"""Pipeline parallelism with the 1F1B schedule (Narayanan et al. 2021, "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM", Sec. 2.2.1, PipeDream-Flush).

The workload lists the blocks of ONE micro-batch on one stage (`TaskBlock.per_micro_batch`;
`TaskBlock.stages` says which stages run each), then the blocks that run once per iteration.
Per-micro-batch blocks whose tasks are all forward form the forward step F, the others the
backward step B (recompute included). With p stages and m micro-batches, stage s runs

    warm-up   F(0) .. F(w-1)                 w = min(p - 1 - s, m)
    steady    F(w+i), B(i)  for i < m - w    (one forward, one backward)
    cool-down B(m-w) .. B(m-1)

on its own compute stream ``stage<s>``. F(s, j) waits for stage s-1's send of micro-batch j,
B(s, j) for stage s+1's send of its gradient. Sends (send_recv) occupy the sender's stream, as
Megatron's blocking point-to-point calls do; the receiving stage's all-gather (scatter-gather)
occupies the receiver's. The bubble follows: (p - 1) x (F + B) of the stages, heavier when the
first or last stage also carries the embedding or output layer.

After a stage's last backward, the per-iteration blocks run on the stages they name. A
collective whose group spans stages (a group stride of at least one stage's ranks: the tied
embedding all-reduce between the first and last stage, the gradient-norm all-reduce over the
model-parallel group) starts on all of its stages together, when the last of them is ready,
so every stage's optimizer step waits for the slowest stage. With ``training.overlap =
dp_backward`` each stage's gradient all-reduce is split into `bucket_size` buckets on the
stream ``stage<s>_dp``, released as the last micro-batch's backward produces the gradients.

With one stage this is plain gradient accumulation: F(0) B(0) F(1) B(1) ...
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
from ddlsim.training.schedules.dispatch import pipeline_stages, register_schedule
from ddlsim.training.settings import TrainingSettings

MICRO_BATCH_PLAN_KEY = "micro_batches"
VIRTUAL_STAGES_PLAN_KEY = "virtual_stages"


def micro_batches(workload: Workload) -> int:
    return int(workload.plan.get(MICRO_BATCH_PLAN_KEY, 1))  # type: ignore[call-overload]


def stream_of(stage: int) -> str:
    return f"stage{stage}"


def one_f_one_b_order(stage: int, stages: int, micro: int) -> list[tuple[str, int]]:
    """The actions of `stage` in 1F1B order: ("F", j) and ("B", j)."""
    warmup = min(stages - 1 - stage, micro)
    order = [("F", j) for j in range(warmup)]
    for i in range(micro - warmup):
        order += [("F", warmup + i), ("B", i)]
    order += [("B", j) for j in range(micro - warmup, micro)]
    return order


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
    return all(task.phase is Phase.FORWARD for task in block.tasks)


def split_steps(workload: Workload) -> PipelineSteps:
    per_micro = [block for block in workload.blocks if block.per_micro_batch]
    if not per_micro:
        raise ConfigError("training.schedule", "1f1b",
                          f"workload {workload.name!r} has no per-micro-batch blocks to pipeline")
    forward = tuple(block for block in per_micro if _is_forward(block))
    backward = tuple(block for block in per_micro if not _is_forward(block))
    if per_micro != [*forward, *backward]:
        raise ConfigError("workload.blocks", [block.name for block in per_micro],
                          "per-micro-batch blocks must list the forward step before the backward step")
    tail = tuple(block for block in workload.blocks if not block.per_micro_batch)
    return PipelineSteps(forward, backward, tail)


class _Builder:
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


def _is_cross_stage(call: CollectiveCall, stage_ranks: int) -> bool:
    return call.group.size > 1 and call.group.stride >= stage_ranks


Action = tuple[str, int, int]  # ("F" or "B", model chunk, micro-batch)


def virtual_stages(workload: Workload) -> int:
    return int(workload.plan.get(VIRTUAL_STAGES_PLAN_KEY, 1))  # type: ignore[call-overload]


@register_schedule("1f1b")
def one_f_one_b_schedule(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    """The 1F1B iteration graph of a pipelined workload (see the module docstring).

    A workload with virtual stages (plan ``virtual_stages`` > 1) runs the interleaved 1F1B
    schedule of `ddlsim.training.schedules.interleaved` instead.
    """
    if virtual_stages(workload) > 1:
        from ddlsim.training.schedules.interleaved import interleaved_schedule

        return interleaved_schedule(workload, pricer, settings)
    stages, micro = pipeline_stages(workload), micro_batches(workload)
    orders = [[(kind, stage, j) for kind, j in one_f_one_b_order(stage, stages, micro)] for stage in range(stages)]
    return run_pipeline(workload, pricer, settings, orders, stages)


def run_pipeline(workload: Workload, pricer: Pricer, settings: TrainingSettings, orders: list[list[Action]],
                 chunks: int) -> IterationGraph:
    """Lay out every stage's actions in order; F of chunk c waits for chunk c - 1's send of the same
    micro-batch, B of chunk c for chunk c + 1's. `chunks` is the number of model chunks (the
    stages, or stages x virtual stages); the per-iteration tail follows each stage's last action."""
    steps = split_steps(workload)
    builder = _Builder(workload, pricer, settings)
    stages, micro = builder.stages, micro_batches(workload)
    if micro < 1:
        raise ConfigError("micro_batches", micro, "must be >= 1")
    overlap = settings.overlap.buckets
    chunked = chunks > stages
    position = [0] * stages
    sends: dict[tuple[str, int, int], int | None] = {}  # (F or B, chunk, micro-batch) -> op the neighbour waits for
    last_backward: dict[int, list[int]] = {}
    remaining = sum(len(order) for order in orders)
    while remaining:
        progressed = False
        for stage in range(stages):
            while position[stage] < len(orders[stage]):
                kind, chunk, j = orders[stage][position[stage]]
                source = chunk - 1 if kind == "F" else chunk + 1
                if 0 <= source < chunks and (kind, source, j) not in sends:
                    break
                wait = sends.get((kind, source, j))
                blocks = steps.forward if kind == "F" else steps.backward
                last = kind == "B" and j == micro - 1
                tag = f"{kind}{j}" + (f"c{chunk}" if chunked else "")
                send, backward = builder.step(blocks, stage, tag, (wait,) if wait is not None else (),
                                              expand=overlap and last, chunk=chunk)
                sends[(kind, chunk, j)] = send
                if last:
                    last_backward.setdefault(stage, []).extend(backward)
                position[stage] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise RuntimeError("pipeline schedule deadlocked; the stage orders are inconsistent")
    _add_tail(builder, steps.tail, last_backward, overlap, builder.side_waits())
    return builder.graph


def _add_tail(builder: _Builder, tail: tuple[TaskBlock, ...], last_backward: dict[int, list[int]],
              overlap: bool, waiting: dict[int, tuple[int, ...]] | None = None) -> None:
    """`waiting`: ops each stage's first tail op must also wait for (its last exchange's)."""
    waiting = {stage: deps for stage, deps in (waiting or {}).items() if deps}
    for block in tail:
        stages = [stage for stage in range(builder.stages) if block.runs_on(stage)]
        for task in block.tasks:
            executions = block.repeat * task.count
            if isinstance(task, CollectiveCall) and _is_cross_stage(task, builder.stage_ranks):
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


def _buckets(builder: _Builder, stage: int, call: CollectiveCall, executions: int, backward: list[int]) -> tuple[int]:
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


from ddlsim.training.schedules import interleaved  # noqa: E402, F401  (registers interleaved_1f1b)
