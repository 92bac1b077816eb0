"""A captured program -> the iteration graph of `ddlsim.training` (the same graph the analytic
models produce), with its dependencies taken from the program itself.

Per captured rank ("role": one per pipeline stage), records become ops in program order:

- compute records form *segments* (`pricing.py`): a run of ops on one stream ends where an op
  waits on something other than its stream predecessor, where another op waits on it, and where
  the layer changes (so the timeline names layers);
- a collective becomes one op on its communication stream (``comm:<group>``, in issue order
  per process group, as NCCL runs them), after the issuing stream's work; whatever waited for
  it (``work.wait()``, ``wait_tensor``, an event, first use of its buffer) depends on it. This is
  how FSDP's prefetch and DDP's bucket overlap come out of the program;
- a send occupies the sender's peer stream; the matching receive on the captured peer rank is a
  zero-time op after it (unmatched receives are priced as the transfer);
- a collective whose group spans several captured ranks (tied embeddings, pipeline-wide
  gradient norms) starts on all of them together, when the last is ready.

Streams are prefixed with the role (``stage1/compute``) when more than one rank was captured.
"""

from __future__ import annotations

import contextlib
import gc
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from typing import Any

from ddlsim.capture.groups import pricing_layout
from ddlsim.capture.pricing import OpKey, SegmentPricer
from ddlsim.capture.program import CapturedProgram
from ddlsim.capture.records import COLLECTIVE
from ddlsim.capture.streams import DEFAULT_STREAM
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.types import CollectiveCall, CollectiveOp, ComputeEstimate, ComputeSource, Phase
from ddlsim.core.work import ComputeTask, ShardSignature
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import Pricer

OP_KEY_COLUMNS = ("op", "flop", "read_bytes", "write_bytes", "gemm_m", "gemm_n", "gemm_k", "gemm_batch", "dtype")
OP_KEY = attrgetter(*OP_KEY_COLUMNS)


@lru_cache(maxsize=4096)
def layer_of(module: str) -> str:
    """The layer a module belongs to: its name up to the first numeric component (``GPT.layers.3``)."""
    parts = module.split(".")
    for position, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: position + 1])
    return ".".join(parts[:2])


@dataclass
class Item:
    """One future graph op of a role: a compute segment or a collective record."""

    kind: str  # "segment", "collective", "recv"
    first: int  # record index of its first record
    last: int
    stream: str
    deps: tuple[int, ...]
    phase: str
    module: str
    rows: list[Any] = field(default_factory=list)
    referenced: list[int] = field(default_factory=list)  # its record indices that others wait for


Entry = tuple[Any, int, tuple[int, ...]]  # (record row, record index, what it waits for)


def role_records(rows: list[Any], replays: list[Any] = ()) -> Iterator[Entry]:
    """One role's records in program order, replicated chunks written out (a replayed record is
    its template's row under its own index and dependencies)."""
    position = {row.index: place for place, row in enumerate(rows)} if replays else {}
    cursor = 0
    for replay in replays:
        while cursor < len(rows) and rows[cursor].index < replay.index:
            row = rows[cursor]
            yield row, row.index, row.deps
            cursor += 1
        first, waits = position[replay.template], dict(replay.deps)
        for offset in range(replay.length):
            yield rows[first + offset], replay.index + offset, waits.get(offset, ())
    for row in rows[cursor:]:
        yield row, row.index, row.deps


def role_items(entries: Iterable[Entry], referenced: set[int] | None = None) -> list[Item]:
    """Group one role's records (`role_records`, in program order) into items; `referenced`: the
    record indices some record waits for (found from the entries when not given)."""
    if referenced is None:
        entries = list(entries)
        referenced = {dep for _, _, deps in entries for dep in deps}
    items: list[Item] = []
    open_segments: dict[str, Item] = {}
    for row, index, deps in entries:
        if row.kind == COLLECTIVE:
            kind = "recv" if row.receives else "collective"
            items.append(Item(kind, index, index, row.stream, tuple(deps), row.phase, row.module, [row],
                              [index] if index in referenced else []))
            continue
        current = open_segments.get(row.stream)
        if current is not None and (deps or current.phase != row.phase
                                    or layer_of(current.module) != layer_of(row.module)):
            del open_segments[row.stream]
            current = None
        if current is None:
            current = Item("segment", index, index, row.stream, tuple(deps), row.phase, row.module)
            items.append(current)
            open_segments[row.stream] = current
        current.rows.append(row)
        current.last = index
        if index in referenced:
            current.referenced.append(index)
            del open_segments[row.stream]
    return items


def _group_key(row: Any) -> tuple:
    return (row.op, row.group_first_rank, row.group_size, row.group_stride, row.group_label)


def _members(row: Any) -> list[int]:
    return [row.group_first_rank + i * row.group_stride for i in range(row.group_size)]


@dataclass
class GraphBuilder:
    program: CapturedProgram
    collective_pricer: Pricer
    segment_pricer: SegmentPricer
    graph: IterationGraph = field(default_factory=IterationGraph)
    labels: dict[int, dict[str, Any]] = field(default_factory=dict)  # graph op index -> trace details

    def __post_init__(self) -> None:
        self.roles = list(self.program.ranks)
        stages = self.program.stages or tuple(range(len(self.roles)))
        self.stage_of = dict(zip(self.roles, stages, strict=True))
        self.prefix = {rank: (f"stage{self.stage_of[rank]}/" if len(self.roles) > 1 else "") for rank in self.roles}
        events, replays = self.program.events, self.program.replays
        self.items: dict[int, deque[Item]] = {}
        for rank in self.roles:
            rows = list(events[events["rank"] == rank].itertuples(index=False))
            mine = list(replays[replays["rank"] == rank].sort_values("index").itertuples(index=False))
            referenced = {dep for row in rows for dep in row.deps}
            referenced.update(dep for replay in mine for _, deps in replay.deps for dep in deps)
            self.items[rank] = deque(role_items(role_records(rows, mine), referenced))
        self.graph_index: dict[tuple[int, int], int] = {}  # (rank, record index) -> graph op
        self.sends: dict[tuple[int, int], list[int]] = defaultdict(list)  # (sender, receiver) -> graph ops
        self.received: dict[tuple[int, int], int] = defaultdict(int)
        self.shared: dict[tuple, dict[int, Item]] = defaultdict(dict)  # cross-role collective -> waiting items
        self.occurrence: dict[tuple[int, tuple], int] = defaultdict(int)
        self.last_on: dict[str, int] = {}
        self.issued: dict[int, int] = defaultdict(int)  # collectives the host issued since the last compute segment

    # ---- pricing ---------------------------------------------------------------------------
    def _call(self, row: Any) -> CollectiveCall:
        op = CollectiveOp(row.op)
        size = int(row.size_bytes)
        if op is CollectiveOp.ALL_TO_ALL and row.imbalance > 1:
            size = int(round(size * row.imbalance))
        if op is CollectiveOp.SEND_RECV:
            layout = pricing_layout(2, abs(int(row.peer) - int(row.rank)) or 1, self.program.num_ranks)
        else:
            layout = pricing_layout(int(row.group_size), int(row.group_stride), int(row.group_num_ranks))
        root = int(row.root) if op.is_rooted and op is not CollectiveOp.SEND_RECV else 0
        name = f"{row.group_label}_{op.value}_{row.phase}" if row.group_label else f"{op.value}_{row.phase}"
        return CollectiveCall(op, size, layout, Phase(row.phase), name, root=min(root, layout.size - 1))

    def _deps(self, rank: int, item: Item) -> set[int]:
        return {self.graph_index[(rank, dep)] for dep in item.deps if (rank, dep) in self.graph_index}

    def _place(self, rank: int, item: Item, op_index: int) -> None:
        for index in item.referenced:
            self.graph_index[(rank, index)] = op_index
        self.last_on[self.prefix[rank] + item.stream] = op_index

    def _add_segment(self, rank: int, item: Item) -> None:
        keys: list[OpKey] = [OP_KEY(row) for row in item.rows]
        launches = 0
        if item.stream == DEFAULT_STREAM:
            launches, self.issued[rank] = self.issued[rank], 0
        estimate = self.segment_pricer.price(keys, launches)
        flop = float(sum(row.flop for row in item.rows))
        memory = float(sum(row.read_bytes + row.write_bytes for row in item.rows))
        layer = layer_of(item.module) or "step"
        signature = ShardSignature("captured", (("ops", len(item.rows)),), 1, "fp32", False)
        task = ComputeTask(f"{layer}.{item.phase}", Phase(item.phase), signature, flop, memory)
        op = self.graph.add_compute(task, estimate, stream=self.prefix[rank] + item.stream, deps=self._deps(rank, item),
                                    label=f"{layer}.{item.phase}", stage=self.stage_of[rank])
        self.labels[op.index] = {"module": item.module, "ops": len(item.rows), "flop": flop, "bytes": memory}
        self._place(rank, item, op.index)

    def _add_collective(self, rank: int, item: Item, extra: set[int] = frozenset()) -> int:
        row = item.rows[0]
        self.issued[rank] += 1
        call = self._call(row)
        estimate = self.collective_pricer.collective(call)
        op = self.graph.add_collective(call, estimate, stream=self.prefix[rank] + item.stream,
                                       deps=self._deps(rank, item) | set(extra),
                                       label=f"{item.module or 'step'}.{call.name}", stage=self.stage_of[rank])
        self.labels[op.index] = {"module": item.module, "size_bytes": call.size_bytes, "group_size": call.group.size,
                                 "group_stride": call.group.stride, "algorithm": estimate.algorithm,
                                 "torch_op": row.torch_op}
        self._place(rank, item, op.index)
        if call.op is CollectiveOp.SEND_RECV and int(row.peer) in self.items:
            self.sends[(rank, int(row.peer))].append(op.index)
        return op.index

    def _add_recv(self, rank: int, item: Item, send: int) -> None:
        row = item.rows[0]
        self.issued[rank] += 1
        task = ComputeTask(f"recv_from_{row.peer}", Phase(row.phase),
                           ShardSignature("captured", (("ops", 0),), 1, "fp32", False), 0.0, 0.0)
        estimate = ComputeEstimate(0.0, ComputeSource.ROOFLINE, self.segment_pricer.device_name)
        op = self.graph.add_compute(task, estimate, stream=self.prefix[rank] + item.stream,
                                    deps=self._deps(rank, item) | {send}, label=f"recv from rank {row.peer}",
                                    stage=self.stage_of[rank])
        self.labels[op.index] = {"module": item.module, "size_bytes": int(row.size_bytes), "peer": int(row.peer)}
        self._place(rank, item, op.index)

    # ---- walking the roles ----------------------------------------------------------------
    def _try(self, rank: int, item: Item) -> list[int]:
        """Add `item` if what it waits for on other roles is there; return the roles whose next
        item was added (several for a collective shared between roles), or [] if it must wait."""
        if item.kind == "segment":
            self._add_segment(rank, item)
            return [rank]
        row = item.rows[0]
        peer = int(row.peer)
        if item.kind == "recv":
            if peer not in self.items:
                self._add_collective(rank, item)
                return [rank]
            sent = self.sends.get((peer, rank), [])
            position = self.received[(peer, rank)]
            if position >= len(sent):
                return []
            self.received[(peer, rank)] += 1
            self._add_recv(rank, item, sent[position])
            return [rank]
        partners = [member for member in _members(row) if member in self.items and member != rank]
        if row.op == CollectiveOp.SEND_RECV.value or not partners:
            self._add_collective(rank, item)
            return [rank]
        group = _group_key(row)
        key = (*group, self.occurrence[(rank, group)])
        waiting = self.shared[key]
        waiting[rank] = item
        if not all(partner in waiting for partner in partners):
            return []
        ready: set[int] = set()
        for member, member_item in waiting.items():
            ready |= self._deps(member, member_item)
            last = self.last_on.get(self.prefix[member] + member_item.stream)
            if last is not None:
                ready.add(last)
        members = sorted(waiting)
        for member in members:
            self._add_collective(member, waiting[member], ready)
            self.occurrence[(member, group)] += 1
        del self.shared[key]
        return members

    def build(self) -> IterationGraph:
        while any(self.items.values()):
            progressed = False
            for rank in self.roles:
                queue = self.items[rank]
                while queue:
                    added = self._try(rank, queue[0])
                    if not added:
                        break
                    for member in added:
                        self.items[member].popleft()
                    progressed = True
            if not progressed:
                stuck = {rank: self.items[rank][0].rows[0].op for rank in self.roles if self.items[rank]}
                raise InfeasibleError(f"the captured ranks wait for each other forever (next ops {stuck}); "
                                      "a receive has no matching send among the captured ranks")
        return self.graph


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Building a graph allocates an object or more per record and frees none: pausing Python's
    cycle collector meanwhile saves its repeated scans of them (about 40 % of the time at
    millions of records)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_program_graph(program: CapturedProgram, collective_pricer: Pricer, segment_pricer: SegmentPricer,
                        ) -> tuple[IterationGraph, dict[int, dict[str, Any]]]:
    with _collector_paused():
        builder = GraphBuilder(program, collective_pricer, segment_pricer)
        return builder.build(), builder.labels

