"""FSDP2's copy tasks around a unit's ZeRO-3 collectives (`ddlsim.workload.kernels.fsdp`).

One compute task follows each parameter all-gather (the all-gather copy-in and copy-out of that
unit) and one precedes each gradient reduce-scatter (its copy-in), so that every collective FSDP2
issues has its copies, with the parameters counted from the call itself. ``parallel.fsdp_copies``
false leaves them out.
"""

from __future__ import annotations

from collections.abc import Callable

from ddlsim.core.types import CollectiveCall, Phase, Precision
from ddlsim.core.work import ComputeTask, ShardSignature
from ddlsim.workload.kernels.fsdp import GATHER_KIND, REDUCE_KIND

KernelWork = Callable[[ShardSignature, Phase], tuple[float, float]]
GATHER_TASK = "fsdp_all_gather_copies"
REDUCE_TASK = "fsdp_reduce_scatter_copy_in"
COPY_TASKS = frozenset({GATHER_TASK, REDUCE_TASK})


def _task(name: str, phase: Phase, signature: ShardSignature, work: KernelWork) -> ComputeTask:
    flop, memory_bytes = work(signature, phase)
    return ComputeTask(name, phase, signature, flop, memory_bytes)


def gather_copies(calls: list[CollectiveCall], precision: Precision, work: KernelWork) -> list[ComputeTask]:
    """The copy task after each parameter all-gather of `calls` (all-gathers of `precision` elements)."""
    tasks = []
    for call in calls:
        params = call.size_bytes // precision.bytes_per_element
        signature = ShardSignature(GATHER_KIND, (("params", params), ("shards", call.group.size)), 1, precision)
        tasks.append(_task(GATHER_TASK, call.phase, signature, work))
    return tasks


def reduce_copies(calls: list[CollectiveCall], precision: Precision, grad_precision: Precision,
                  work: KernelWork) -> list[ComputeTask]:
    """The copy-in task before each gradient reduce-scatter of `calls` (of `grad_precision` elements),
    from gradients of `precision`."""
    tasks = []
    for call in calls:
        reduce_bytes = grad_precision.bytes_per_element
        signature = ShardSignature(REDUCE_KIND, (("params", call.size_bytes // reduce_bytes),
                                                 ("reduce_bytes", reduce_bytes)), 1, precision)
        tasks.append(_task(REDUCE_TASK, call.phase, signature, work))
    return tasks
