"""An analytic iteration graph's ops and workload as plain JSON records, and back.

`op_record(op)` keeps everything that `IterationGraph` needs to add the op again: its index,
label, stream, stage, executions, dependencies and task (a `ComputeTask` with its shard
signature, or a `CollectiveCall` with its `GroupLayout`), and, for compute, the
`ComputeEstimate` it was priced at. A collective's estimate is left out: the importer prices it
again on its own fabric. Floats go through JSON as Python writes them (``repr``), so they come
back bit for bit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, ComputeEstimate, GroupLayout, Phase
from ddlsim.core.work import ComputeTask, ShardSignature, Workload
from ddlsim.training.graph import Op, OpKind
from ddlsim.training.settings import TrainingSettings

FORMAT = "ddlsim.analytic/2"  # 2: every file records its rank and the SHA-256 of its nodes
# The settings that shaped the graph (its streams, buckets and schedule); contention is the importer's.
SHAPING_SETTINGS = ("overlap", "bucket_size_bytes", "schedule", "engine", "overlap_p2p_comm")


def _task_record(task: ComputeTask | CollectiveCall) -> dict[str, Any]:
    if isinstance(task, CollectiveCall):
        return {"op": task.op.value, "size_bytes": task.size_bytes, "group_size": task.group.size,
                "group_stride": task.group.stride, "group_num_ranks": task.group.num_ranks,
                "phase": task.phase.value, "name": task.name, "count": task.count, "root": task.root}
    signature = task.signature
    return {"name": task.name, "phase": task.phase.value, "flop": task.flop, "memory_bytes": task.memory_bytes,
            "count": task.count, "signature": {"model_kind": signature.model_kind,
                                               "shape": [list(item) for item in signature.shape],
                                               "local_batch": signature.local_batch,
                                               "precision": signature.precision.value,
                                               "checkpointing": signature.checkpointing}}


def op_record(op: Op) -> dict[str, Any]:
    """The op as a JSON-ready record (module docstring)."""
    record: dict[str, Any] = {"index": op.index, "label": op.label, "kind": op.kind.value, "stream": op.stream,
                              "stage": op.stage, "executions": op.executions, "deps": list(op.deps),
                              "task": _task_record(op.task)}
    if op.kind is OpKind.COMPUTE:
        assert isinstance(op.estimate, ComputeEstimate)
        record["estimate"] = {"time_s": op.estimate.time_s, "source": op.estimate.source.value,
                              "device": op.estimate.device}
    return record


def task_of(record: dict[str, Any]) -> ComputeTask | CollectiveCall:
    """The task of an op record."""
    task = record["task"]
    if record["kind"] == OpKind.COLLECTIVE.value:
        group = GroupLayout(int(task["group_size"]), int(task["group_stride"]), int(task["group_num_ranks"]))
        return CollectiveCall(task["op"], int(task["size_bytes"]), group, Phase(task["phase"]), task["name"],
                              count=int(task["count"]), root=int(task["root"]))
    signature = task["signature"]
    return ComputeTask(task["name"], Phase(task["phase"]),
                       ShardSignature(signature["model_kind"], tuple((str(key), int(value))
                                                                     for key, value in signature["shape"]),
                                      int(signature["local_batch"]), signature["precision"],
                                      bool(signature["checkpointing"])),
                       float(task["flop"]), float(task["memory_bytes"]), int(task["count"]))


def compute_estimate_of(record: dict[str, Any]) -> ComputeEstimate:
    estimate = record["estimate"]
    return ComputeEstimate(float(estimate["time_s"]), estimate["source"], estimate["device"])


def workload_record(workload: Workload, settings: TrainingSettings, stages: int, num_ops: int) -> dict[str, Any]:
    """What the importer needs besides the ops: the workload's fields (not its blocks: the graph
    is in the ops), the settings that shaped the graph, the stages and the op count."""
    return {"format": FORMAT, "name": workload.name, "num_ranks": workload.num_ranks,
            "global_batch": workload.global_batch, "num_steps": workload.num_steps, "plan": dict(workload.plan),
            "settings": {key: getattr(settings, key) for key in SHAPING_SETTINGS}, "stages": stages,
            "num_ops": num_ops}


def workload_of(record: dict[str, Any]) -> Workload:
    return Workload(name=record["name"], num_ranks=int(record["num_ranks"]), blocks=(),
                    global_batch=int(record["global_batch"]), num_steps=int(record["num_steps"]),
                    plan=dict(record["plan"]))


def settings_of(record: dict[str, Any], base: TrainingSettings | None = None) -> TrainingSettings:
    """The exported shaping settings on top of `base` (the importer's: its contention setting)."""
    shaping = record["settings"]
    unknown = sorted(set(shaping) - set(SHAPING_SETTINGS))
    if unknown:
        raise ConfigError("trace", unknown[0], f"is not a training setting this ddlsim knows ({FORMAT})")
    return dataclasses.replace(base or TrainingSettings(), **shaping)
