"""The iteration timeline as a Chrome trace (``trace.json``), for Perfetto and chrome://tracing.

    write_trace(graph, placement, path, details=None)

One process per rank role (pipeline stage; ``rank`` when the graph has a single stage), one
thread per stream, with compute and communication on separate tracks: a collective that runs
on a compute stream (the analytic schedules block compute with it) is drawn on that stream's
``<stream> (communication)`` track. Each op is a complete event (``"ph": "X"``) with its start
``ts`` and duration ``dur`` in microseconds, named by its layer or collective, with bytes,
algorithm, group and timing parts in ``args``. Times are those of the placed graph
(`ddlsim.training.timeline.place`), so the trace shows overlap, bubbles and exposed
communication as the simulator computed them. The at-scale costs of the iteration
(`ddlsim.training.at_scale`: interference, stragglers, framework work), which the iteration time
adds after its placed ops, are bands on an ``at-scale costs`` track of their own after the last op.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddlsim.core.types import CollectiveCall, CollectiveEstimate, ComputeEstimate
from ddlsim.core.work import ComputeTask
from ddlsim.training.graph import IterationGraph, Op, OpKind
from ddlsim.training.timeline import Placement, place

TRACE_NAME = "trace.json"
MICROSECONDS = 1e6


def _args(op: Op, extra: Mapping[str, Any] | None, placement: Placement) -> dict[str, Any]:
    args: dict[str, Any] = {"phase": op.phase.value, "executions": op.executions,
                            "duration_s": placement.time_of(op)}
    if placement.contended_s is not None and op.kind is OpKind.COLLECTIVE:
        args["alone_s"] = op.duration_s  # stretched by concurrent collectives sharing the fabric
        args["slowdown"] = placement.time_of(op) / op.duration_s if op.duration_s > 0 else 1.0
    if isinstance(op.task, CollectiveCall) and isinstance(op.estimate, CollectiveEstimate):
        call, estimate = op.task, op.estimate
        args.update({"op": call.op.value, "size_bytes": call.size_bytes, "group_size": call.group.size,
                     "group_stride": call.group.stride, "algorithm": estimate.algorithm, "fabric": estimate.fabric,
                     "latency_s": estimate.latency_s * op.executions, "transfer_s": estimate.transfer_s * op.executions,
                     "reduction_s": estimate.compute_s * op.executions})
    elif isinstance(op.task, ComputeTask) and isinstance(op.estimate, ComputeEstimate):
        args.update({"flop": op.task.flop * op.executions, "memory_bytes": op.task.memory_bytes * op.executions,
                     "source": op.estimate.source.value, "device": op.estimate.device})
    if extra:
        args.update({key: value for key, value in extra.items() if key not in args})
    return args


def trace_events(graph: IterationGraph, placement: Placement | None = None,
                 details: Mapping[int, Mapping[str, Any]] | None = None, at_scale: Any = None) -> dict[str, Any]:
    """The Chrome trace object of a placed graph and its at-scale costs (see the module docstring)."""
    placement = placement or place(graph)
    details = details or {}
    multi_stage = len({op.stage for op in graph.ops}) > 1
    threads: dict[tuple[int, str], int] = {}
    events: list[dict[str, Any]] = []
    for op in graph.ops:
        track = op.stream
        if op.kind is OpKind.COLLECTIVE and not _is_comm_stream(op.stream):
            track = f"{op.stream} (communication)"
        key = (op.stage, track)
        if key not in threads:
            threads[key] = len(threads) + 1
        events.append({"name": op.label, "cat": op.kind.value, "ph": "X", "pid": op.stage, "tid": threads[key],
                       "ts": placement.start_s[op.index] * MICROSECONDS, "dur": placement.time_of(op) * MICROSECONDS,
                       "args": _args(op, details.get(op.index), placement)})
    iteration_s = placement.makespan_s
    for column, seconds in (at_scale.row().items() if at_scale is not None else ()):
        if seconds <= 0:
            continue
        key = (max((stage for stage, _ in threads), default=0), "at-scale costs")
        threads.setdefault(key, len(threads) + 1)
        events.append({"name": column.removesuffix("_s"), "cat": "at_scale", "ph": "X", "pid": key[0],
                       "tid": threads[key], "ts": iteration_s * MICROSECONDS, "dur": seconds * MICROSECONDS,
                       "args": {"duration_s": seconds}})
        iteration_s += seconds
    metadata: list[dict[str, Any]] = []
    for stage in sorted({stage for stage, _ in threads}):
        name = f"stage {stage}" if multi_stage else "rank"
        metadata.append({"name": "process_name", "ph": "M", "pid": stage, "tid": 0, "args": {"name": name}})
        metadata.append({"name": "process_sort_index", "ph": "M", "pid": stage, "tid": 0,
                         "args": {"sort_index": stage}})
    for (stage, track), tid in threads.items():
        metadata.append({"name": "thread_name", "ph": "M", "pid": stage, "tid": tid, "args": {"name": track}})
        metadata.append({"name": "thread_sort_index", "ph": "M", "pid": stage, "tid": tid, "args": {"sort_index": tid}})
    return {"traceEvents": metadata + events, "displayTimeUnit": "ms",
            "otherData": {"iteration_time_s": iteration_s, "num_ops": len(graph)}}


def _is_comm_stream(stream: str) -> bool:
    name = stream.rpartition("/")[2]
    return name.startswith(("comm", "p2p")) or name.endswith(("_dp", "dp_comm"))


def write_trace(graph: IterationGraph, placement: Placement | None, path: str | os.PathLike[str],
                details: Mapping[int, Mapping[str, Any]] | None = None, at_scale: Any = None) -> Path:
    """Write ``trace.json`` (or `path` itself when it names a ``.json`` file); return the file."""
    path = Path(path)
    if path.suffix != ".json":
        path = path / TRACE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace_events(graph, placement, details, at_scale)))
    return path


def result_graph(result: Any, fabric: Any, algorithm: Any, device: Any, compute: Any
                 ) -> tuple[IterationGraph, Placement, Mapping[int, Mapping[str, Any]]]:
    """The placed graph of a training result: the one it kept, or its workload's graph rebuilt."""
    graph = getattr(result, "graph", None)
    if graph is not None and len(graph):
        return graph, getattr(result, "placement", None) or place(graph), getattr(result, "details", {})
    from ddlsim.training.pricing import Pricer
    from ddlsim.training.run import compute_timer, network_timer, reduction_model
    from ddlsim.training.simulate import build_graph, placed

    pricer = Pricer(network_timer(fabric, algorithm, reduction_model(device)), compute_timer(compute))
    graph = build_graph(result.workload, pricer, result.settings)
    return graph, placed(graph, result.settings, fabric), {}
