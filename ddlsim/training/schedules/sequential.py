"""The sequential schedule: the blocks of one pipeline stage in order, on one compute stream.

``training.schedule = sequential`` (and ``auto`` for a workload of one stage that is not written
per micro-batch, `dispatch.py`). A collective blocks the computation that follows it, as
Megatron's tensor-parallel all-reduces and DLRM's all-to-alls do; the overlap settings of
`TrainingSettings` move gradient buckets (``dp_backward``) and layer collectives onto their
own streams.
"""

from __future__ import annotations

from ddlsim.core.types import CollectiveCall, Phase
from ddlsim.core.work import ComputeTask, TaskBlock, Workload
from ddlsim.training.buckets import GradientSync, add_gradient_buckets, find_gradient_sync
from ddlsim.training.graph import COMPUTE_STREAM, IterationGraph, Op
from ddlsim.training.layer_overlap import LayerOverlap
from ddlsim.training.pricing import Pricer
from ddlsim.training.settings import TrainingSettings

# Above this many repeats, a backward block is expanded in this many chunks of consecutive
# repeats; gradient buckets then become ready at chunk granularity.
MAX_EXPANDED_REPEATS = 1024


def _chunks(repeat: int, limit: int) -> list[int]:
    """Split `repeat` into at most `limit` chunk sizes that differ by at most one."""
    parts = min(repeat, limit)
    base, extra = divmod(repeat, parts)
    return [base + 1] * extra + [base] * (parts - extra)


def _has_backward(block: TaskBlock) -> bool:
    return any(isinstance(task, ComputeTask) and task.phase is Phase.BACKWARD for task in block.tasks)


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
