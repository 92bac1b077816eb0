"""An analytic workload's iteration graph as Chakra execution traces: one ``<name>.<rank>.et`` per rank.

    graph = build_graph(workload, pricer, settings)
    write_workload_chakra(workload, graph, "et/", settings=settings)

Ranks follow Megatron-Core's order (`ddlsim/workload/transformer/layout.py`): a pipeline stage is
R = ranks / stages consecutive ranks, so rank r runs the ops of stage r // R. Each op of its
stage becomes ``executions`` Chakra nodes, one per task or call it stands for (a layer block of
four layers is four nodes), in stream order:

- compute -> ``COMP_NODE`` with ``num_ops`` (the task's FLOPs), ``tensor_size`` (its memory
  bytes), ``op_type`` (the task's name) and ``duration_micros`` (its analytic time, rounded to
  whole microseconds as the field requires);
- a collective -> ``COMM_COLL_NODE`` with ``comm_type``, ``comm_size`` (bytes per rank, the
  nccl-tests convention) and ``pg_name``: the id of the rank's own group, derived from the call's
  `GroupLayout` (a collective between stages, such as the tied-embedding all-reduce, spans the
  rank's peers on the stages that run it). ``comm_group.json`` beside the files maps every id to
  its ranks, in the form of ASTRA-sim's ``--comm-group-configuration``;
- a stage-to-stage send -> ``COMM_SEND_NODE`` to the same position on the next stage (forward)
  or the previous one (backward; wrapping around, as the interleaved schedule's last chunk
  boundary does); that stage gets the matching ``COMM_RECV_NODE`` (same ``comm_tag``: the send's
  op index) before its first op that waits for the send, which data-depends on it;
- ``data_deps``: the op's waits on its own stage (waits on other stages are the receives, or the
  synchronisation of a collective between stages); ``ctrl_deps``: the previous node of the same
  stream.

In the file of the first rank of each stage, the first node of every op carries the op whole as
JSON (``ddlsim.op``; the other ranks of the stage run the same ops), and each file's
GlobalMetadata the workload (``ddlsim.analytic``), its stage (``ddlsim.stage``), its rank
(``ddlsim.rank``) and the SHA-256 of the bytes of its nodes (``ddlsim.nodes_sha256``), so that a
truncated, corrupted or swapped file of any rank is refused, and so that
`analytic_load` rebuilds the graph exactly; compute keeps its exported time, collectives are
priced again on the importer's fabric.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ddlsim.chakra.graph_records import op_record, workload_record
from ddlsim.chakra.protoio import write_message
from ddlsim.chakra.schema import (
    ANALYTIC_ATTR,
    COMM_TYPES,
    ET,
    NODES_SHA256_ATTR,
    OP_ATTR,
    RANK_ATTR,
    SCHEMA_VERSION,
    STAGE_ATTR,
    GroupIds,
    chakra_comm_size,
    compute_ops,
)
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveOp, ComputeEstimate, Phase
from ddlsim.core.work import ComputeTask, Workload
from ddlsim.training.graph import IterationGraph, Op, OpKind
from ddlsim.training.schedules.plan import pipeline_stages
from ddlsim.training.settings import TrainingSettings

MICROSECONDS = 1e6


def _is_send(op: Op) -> bool:
    return isinstance(op.task, CollectiveCall) and op.task.op is CollectiveOp.SEND_RECV


class RankLayout:
    """Which stage each rank runs, and the concrete peers and groups of each op on a rank."""

    def __init__(self, workload: Workload, graph: IterationGraph) -> None:
        self.graph = graph
        self.num_ranks = workload.num_ranks
        self.stages = max(pipeline_stages(workload), 1 + max((op.stage for op in graph.ops), default=0))
        if self.num_ranks % self.stages:
            raise ConfigError("chakra.export", self.num_ranks, f"ranks must divide into {self.stages} pipeline stages")
        self.stage_ranks = self.num_ranks // self.stages
        self.ops_of: dict[int, list[Op]] = defaultdict(list)
        self.target: dict[int, int] = {}  # send op -> the stage it sends to
        self.received: set[int] = set()
        self.receives_before: dict[int, list[int]] = defaultdict(list)  # op -> the sends received just before it
        together: dict[tuple, list[Op]] = defaultdict(list)  # one collective between stages, added per stage
        for op in graph.ops:
            self.ops_of[op.stage].append(op)
            if _is_send(op):
                self.target[op.index] = (op.stage + (1 if op.phase is Phase.FORWARD else -1)) % self.stages
            for dep in op.deps:  # the first op of the target stage that waits for a send receives it
                if self.target.get(dep, -1) == op.stage != graph.ops[dep].stage and dep not in self.received:
                    self.receives_before[op.index].append(dep)
                    self.received.add(dep)
            if self._between_stages(op):
                together[(op.label, op.task, op.deps)].append(op)
        self.participants = {op.index: tuple(sorted({item.stage for item in ops}))
                             for ops in together.values() for op in ops}
        self.trailing: dict[int, list[int]] = defaultdict(list)  # stage -> sends received after its last op
        for send, target in self.target.items():
            if send not in self.received and target != graph.ops[send].stage:
                self._place_unwaited(graph.ops[send], target)

    def _place_unwaited(self, send: Op, target: int) -> None:
        """A send no op of its target stage waits for directly (a batch of exchanges is waited for
        as a whole): received before the first op there that waits for the sender's stage at or
        after the send, else after the stage's last op."""
        for op in self.ops_of[target]:
            if op.index > send.index and any(self.graph.ops[dep].stage == send.stage and dep >= send.index
                                             for dep in op.deps):
                self.receives_before[op.index].append(send.index)
                return
        self.trailing[target].append(send.index)

    def _between_stages(self, op: Op) -> bool:
        call = op.task
        return (isinstance(call, CollectiveCall) and call.op is not CollectiveOp.SEND_RECV and call.group.size > 1
                and self.stages > 1 and call.group.stride >= self.stage_ranks)

    def stage_of(self, rank: int) -> int:
        return rank // self.stage_ranks

    def group(self, op: Op, rank: int) -> tuple[int, ...]:
        """The ranks of `rank`'s group for collective `op`."""
        assert isinstance(op.task, CollectiveCall)
        layout = op.task.group
        stages = self.participants.get(op.index, ())
        if len(stages) == layout.size:  # between stages: the rank's position on each stage that runs it
            local = rank % self.stage_ranks
            return tuple(local + stage * self.stage_ranks for stage in stages)
        span = min(layout.job_ranks, self.num_ranks)
        base = rank - rank % span
        index, _ = layout.position(rank - base)
        return tuple(base + member for member in layout.ranks(index))

    def send_peer(self, op: Op, rank: int) -> int:
        """The rank a send of `op` on `rank` goes to: the same position on the stage it sends to."""
        return rank + (self.target.get(op.index, op.stage) - op.stage) * self.stage_ranks


class _RankWriter:
    """The Chakra nodes of one rank."""

    def __init__(self, layout: RankLayout, records: dict[int, str], groups: GroupIds, rank: int) -> None:
        self.layout, self.records, self.groups, self.rank = layout, records, groups, rank
        self.stage = layout.stage_of(rank)
        self.nodes: list[Any] = []
        self.last_of: dict[int, int] = {}  # op index -> its last node
        self.last_on_stream: dict[str, int] = {}

    def _node(self, name: str, node_type: int, stream: str, data_deps: list[int]) -> Any:
        node = ET.Node(id=len(self.nodes), name=name, type=node_type)
        node.data_deps.extend(data_deps)
        previous = self.last_on_stream.get(stream)
        if previous is not None and previous not in data_deps:
            node.ctrl_deps.append(previous)
        node.attr.add(name="is_cpu_op", bool_val=False)
        self.last_on_stream[stream] = node.id
        self.nodes.append(node)
        return node

    def receive(self, send: Op, stream: str) -> list[int]:
        """Receive nodes for every call of `send` (from another stage), on `stream`."""
        assert isinstance(send.task, CollectiveCall)
        peer = self.rank + (send.stage - self.stage) * self.layout.stage_ranks
        received = []
        for execution in range(send.executions):
            node = self._node(f"{send.label}:recv" + (f"#{execution}" if execution else ""), ET.COMM_RECV_NODE,
                              stream, [])
            node.attr.add(name="comm_src", int32_val=peer)
            node.attr.add(name="comm_size", int64_val=send.task.size_bytes)
            node.attr.add(name="comm_tag", int32_val=send.index)
            received.append(node.id)
        return received

    def _waits(self, op: Op) -> list[int]:
        """Node ids `op` waits for: its own stage's ops, and the receives placed before it (waits on
        other stages' ops that are not sends are the synchronisation of a collective between stages)."""
        waits = [self.last_of[dep] for dep in op.deps if self.layout.graph.ops[dep].stage == self.stage]
        for send in self.layout.receives_before.get(op.index, ()):
            waits += self.receive(self.layout.graph.ops[send], op.stream)
        return waits

    def add(self, op: Op) -> None:
        waits = self._waits(op)
        for execution in range(op.executions):
            name = op.label + (f"#{execution}" if execution else "")
            if op.kind is OpKind.COMPUTE:
                assert isinstance(op.task, ComputeTask) and isinstance(op.estimate, ComputeEstimate)
                node = self._node(name, ET.COMP_NODE, op.stream, waits)
                node.duration_micros = round(op.estimate.time_s * MICROSECONDS)
                moved = round(op.task.memory_bytes)
                node.attr.add(name="num_ops", int64_val=compute_ops(op.task.flop, moved,
                                                                    op.task.signature.precision.value))
                node.attr.add(name="tensor_size", uint64_val=moved)
                node.attr.add(name="op_type", string_val=op.task.name)
            else:
                node = self._collective(op, name, waits)
            if execution == 0 and self.rank % self.layout.stage_ranks == 0:
                node.attr.add(name=OP_ATTR, string_val=self.records[op.index])
            waits = []
        self.last_of[op.index] = len(self.nodes) - 1

    def _collective(self, op: Op, name: str, waits: list[int]) -> Any:
        call = op.task
        assert isinstance(call, CollectiveCall)
        if call.op is CollectiveOp.SEND_RECV:
            node = self._node(name, ET.COMM_SEND_NODE, op.stream, waits)
            node.attr.add(name="comm_dst", int32_val=self.layout.send_peer(op, self.rank))
            node.attr.add(name="comm_tag", int32_val=op.index)
        else:
            node = self._node(name, ET.COMM_COLL_NODE, op.stream, waits)
            node.attr.add(name="comm_type", int64_val=getattr(ET, COMM_TYPES[call.op.value]))
            node.attr.add(name="pg_name", string_val=self.groups.id_of(self.layout.group(op, self.rank)))
        node.attr.add(name="comm_size", int64_val=chakra_comm_size(call.op.value, call.size_bytes, call.group.size))
        return node


def write_workload_chakra(workload: Workload, graph: IterationGraph, directory: str | Path, *,
                          settings: TrainingSettings | None = None, ranks: str = "all") -> list[Path]:
    """Write the iteration `graph` of the analytic `workload` (built with `settings`: its overlap,
    buckets and schedule) as Chakra ETs into `directory`: every rank (``ranks="all"``, what
    ASTRA-sim runs) or the first rank of each stage (``"stages"``). Returns the files written."""
    if ranks not in ("all", "stages"):
        raise ConfigError("ranks", ranks, "must be 'all' or 'stages'")
    if not len(graph):
        raise ConfigError("chakra.export", workload.name, "has an empty iteration graph; nothing to export")
    layout = RankLayout(workload, graph)
    header_record = json.dumps(workload_record(workload, settings or TrainingSettings(), layout.stages, len(graph)),
                               sort_keys=True)
    records = {op.index: json.dumps(op_record(op), sort_keys=True) for op in graph.ops}
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    chosen = range(workload.num_ranks) if ranks == "all" else range(0, workload.num_ranks, layout.stage_ranks)
    groups = GroupIds()
    written = []
    for rank in chosen:
        writer = _RankWriter(layout, records, groups, rank)
        for op in layout.ops_of[writer.stage]:
            writer.add(op)
        for send in layout.trailing.get(writer.stage, ()):
            writer.receive(graph.ops[send], layout.ops_of[writer.stage][-1].stream)
        path = directory / f"{workload.name}.{rank}.et"
        body = io.BytesIO()
        for node in writer.nodes:
            write_message(body, node)
        header = ET.GlobalMetadata(version=SCHEMA_VERSION)
        header.attr.add(name=ANALYTIC_ATTR, string_val=header_record)
        header.attr.add(name=STAGE_ATTR, int64_val=writer.stage)
        header.attr.add(name=RANK_ATTR, int64_val=rank)
        header.attr.add(name=NODES_SHA256_ATTR, string_val=hashlib.sha256(body.getbuffer()).hexdigest())
        with path.open("wb") as handle:
            write_message(handle, header)
            handle.write(body.getbuffer())
        written.append(path)
    groups.write(directory)
    return written


def write_training_chakra(model: Any, parallel: Any, device: Any, compute: Any, fabric: Any, algorithm: Any,
                          settings: TrainingSettings, directory: str | Path) -> list[Path]:
    """`training.chakra=true` for an analytic model: its workload's graph, priced as the run prices it."""
    from ddlsim.training.pricing import Pricer
    from ddlsim.training.run import compute_timer, network_timer, reduction_model
    from ddlsim.training.simulate import build_graph

    workload = model.build_workload(parallel, device.memory_bytes)
    pricer = Pricer(network_timer(fabric, algorithm, reduction_model(device)), compute_timer(compute))
    return write_workload_chakra(workload, build_graph(workload, pricer, settings), directory, settings=settings)
