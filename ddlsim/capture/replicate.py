"""Replicated pipeline chunks: ``ddlsim.capture(..., replicate=True)``.

A pipelined step runs the same forward and the same backward of a stage once per micro-batch
(GPT 175 B on 32 stages with 384 micro-batches: 24,576 chunks). Under `replicate_chunks` the
program's `torch.distributed.pipelining` schedule still runs every micro-batch of every stage,
with its own order, point-to-point messages and loss, but a stage's chunk runs for real only until
two consecutive chunks of its kind (forward, backward) were the same, not counting the first (a
first backward creates the gradients); later ones are *replayed*:
nothing is executed, the chunk's records are referred to, not copied (a `Replay`), and the stage
gets fake tensors of the shapes the chunk returned. The last micro-batch runs for real (its
backward synchronises gradients in DDP and FSDP stages).

"The same" means: the same records in the same order (op, shapes, bytes, module, phase, stream,
group, everything but the record index), the same waits and placements on the streams of
`streams.Timeline`, relative to the chunk's first record or to what the streams held when it
started, the same phase afterwards and outputs of the same shapes. A chunk that leaves a
collective in flight, or consumes one started before it, is never replayed. A replay re-applies
the template's waits and placements to the streams as they are at the replay, so its
dependencies are those the program would have had (`Replay.deps`), and records after it see the
streams as they would have been.

Contract (docs/capture.md, "Replicated captures"): a stage's chunk of a micro-batch must do what
the chunk of the previous micro-batch did, whatever state it reads (a program that changes its
work on micro-batch 5 is not detected). Replaying a forward needs its backward replayed too; if
the backward chunks never repeat, `InfeasibleError` says to capture without ``replicate``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import torch
from torch.utils._pytree import tree_map

from ddlsim.core.errors import InfeasibleError

FORWARD, BACKWARD = "forward", "backward"
CONTENT = ("kind", "op", "stream", "module", "phase", "dtype", "flop", "read_bytes", "write_bytes", "gemm_m",
           "gemm_n", "gemm_k", "gemm_batch", "torch_op", "size_bytes", "group_size", "group_stride",
           "group_num_ranks", "group_regular", "group_first_rank", "root", "peer", "receives", "imbalance",
           "group_label", "args")
_content = attrgetter(*CONTENT)


@dataclass(frozen=True)
class Replay:
    """Records ``index .. index + length - 1`` of a rank repeat records ``template ..`` of the same
    rank; `deps` lists (offset, what the record waits for) for the copies that wait on something."""

    index: int
    template: int
    length: int
    deps: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    requires_grad: bool

    def make(self) -> torch.Tensor:
        tensor = torch.empty_strided(self.shape, self.stride, dtype=self.dtype)
        return tensor.requires_grad_(self.requires_grad) if self.requires_grad else tensor


def _meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), tuple(value.stride()), value.dtype, value.requires_grad)
    return value


def _make(value: Any) -> Any:
    return value.make() if isinstance(value, TensorMeta) else value


@dataclass(frozen=True)
class Chunk:
    """One real chunk: where its records start, how many, and what it did (`signature`)."""

    start: int
    length: int
    log: tuple[tuple, ...]
    region: str
    result: Any
    signature: tuple | None  # None: not replicable (it left a collective in flight, or took one)


class Replicator:
    """Watches and replays the chunks of one captured rank (module docstring)."""

    def __init__(self, recorder: Any, attribution: Any) -> None:
        self.recorder = recorder
        self.timeline = recorder.timeline
        self.attribution = attribution
        self.replays: list[Replay] = []
        self._previous: dict[tuple[int, str], Chunk] = {}
        self._seen: set[tuple[int, str]] = set()
        self._templates: dict[tuple[int, str], Chunk] = {}
        self._replayed_forward: set[tuple[int, int]] = set()
        self._busy = False

    def reset(self) -> None:
        self.__init__(self.recorder, self.attribution)

    # ---- watching a real chunk ------------------------------------------------------------
    def _watch(self, key: tuple[int, str], run: Any, result_of: Any) -> Any:
        timeline, recorder = self.timeline, self.recorder
        start, position = recorder.next_index(), len(recorder.records)
        last, pending = dict(timeline.last), {stream: set(records) for stream, records in timeline.pending.items()}
        flights = (dict(timeline.in_flight), set(timeline.work_records))
        timeline.log, self._busy = [], True
        try:
            value = run()
        finally:
            log, timeline.log, self._busy = timeline.log, None, False
        length = recorder.next_index() - start
        result = tree_map(_meta, result_of(value))
        escaped = (any(index >= start for index in timeline.in_flight.values())
                   or any(key not in timeline.in_flight for key in flights[0])
                   or set(timeline.work_records) != flights[1])

        def ref(index: int) -> tuple:
            if index >= start:
                return ("chunk", index - start)
            for stream, latest in last.items():
                if latest == index:
                    return ("last", stream)
            for stream, records in pending.items():
                if index in records:
                    return ("pending", stream, timeline.stream_of.get(index, ""))
            return ("record", index)

        normalised = tuple(
            ("wait", entry[1], tuple(ref(index) for index in entry[2])) if entry[0] == "wait"
            else (*entry[:-1], entry[-1] - start) for entry in log)
        contents = tuple(_content(record) for record in recorder.records[position:])
        chunk = Chunk(start, length, normalised, self.attribution.region, result,
                      None if escaped else (contents, normalised, self.attribution.region, result))
        previous = self._previous.get(key)
        if chunk.signature is not None and previous is not None and previous.signature == chunk.signature:
            self._templates.setdefault(key, chunk)
        if key in self._seen:  # a stage's first chunk of a kind may differ (gradients are created): not compared
            self._previous[key] = chunk
        self._seen.add(key)
        return value

    # ---- replaying ---------------------------------------------------------------------------
    def _resolve(self, chunk: Chunk) -> dict[tuple, int] | None:
        """The streams' records a replay of `chunk` waits for, by the template's names for them."""
        timeline, resolved = self.timeline, {}
        for entry in chunk.log:
            if entry[0] != "wait":
                continue
            for name in entry[2]:
                if name[0] == "chunk" or name in resolved:
                    continue
                if name[0] == "last":
                    index = timeline.last.get(name[1])
                elif name[0] == "pending":
                    index = next((record for record in timeline.pending.get(name[1], ())
                                  if timeline.stream_of.get(record, "") == name[2]), None)
                else:
                    index = name[1]
                if index is None:
                    return None
                resolved[name] = index
        return resolved

    def _replay(self, chunk: Chunk) -> bool:
        resolved = self._resolve(chunk)
        if resolved is None:
            return False
        timeline, first = self.timeline, self.recorder.next_index()
        deps = []
        for entry in chunk.log:
            kind = entry[0]
            if kind == "wait":
                timeline.wait(entry[1], {first + name[1] if name[0] == "chunk" else resolved[name]
                                         for name in entry[2]})
            elif kind == "place":
                waits = timeline.place(entry[1], first + entry[2])
                if waits:
                    deps.append((entry[2], waits))
            else:
                waits = timeline.place_collective(entry[1], entry[2], first + entry[3])
                if waits:
                    deps.append((entry[3], waits))
        self.recorder.replayed += chunk.length
        self.replays.append(Replay(first, chunk.start, chunk.length, tuple(deps)))
        self.attribution.region = chunk.region
        return True

    def _ready(self, key: tuple[int, str]) -> Chunk | None:
        return None if self._busy else self._templates.get(key)

    # ---- the stage's methods -----------------------------------------------------------------
    def forward(self, original: Any, stage: Any, chunk_id: int, args: tuple, kwargs: dict | None = None,
                save_forward_output: bool = True) -> Any:
        if not self.recorder.recording:
            return original(stage, chunk_id, args, kwargs, save_forward_output)
        key = (stage.stage_index, FORWARD)
        template = self._ready(key)
        if template is not None and stage.chunks is not None and chunk_id < stage.chunks - 1 \
                and self._replay(template):
            from torch.distributed.pipelining._utils import flatten_args
            from torch.distributed.pipelining.stage import _normalize_model_output_as_tuple

            inputs = args if stage.is_first else stage._retrieve_recv_activations(chunk_id)
            output = tree_map(_make, template.result)
            if stage.is_last and save_forward_output:
                stage.output_chunks.append(output)
            stage.fwd_cache[chunk_id] = (_normalize_model_output_as_tuple(output),
                                         flatten_args(inputs) + flatten_args(kwargs or {}))
            self._replayed_forward.add((stage.stage_index, chunk_id))
            return output
        return self._watch(key, lambda: original(stage, chunk_id, args, kwargs, save_forward_output),
                           lambda output: output)

    def backward(self, original: Any, stage: Any, chunk_id: int, loss: Any = None, full_backward: bool = True,
                 last_backward: bool = False) -> Any:
        if not self.recorder.recording:
            return original(stage, chunk_id, loss=loss, full_backward=full_backward, last_backward=last_backward)
        key = (stage.stage_index, BACKWARD)
        template = self._ready(key)
        replayable = template is not None and full_backward and not last_backward and stage.has_backward
        if replayable and self._replay(template):
            stage.fwd_cache.pop(chunk_id)
            stage.bwd_cache[chunk_id] = tree_map(_make, template.result)
            return None
        if (stage.stage_index, chunk_id) in self._replayed_forward:
            raise InfeasibleError(
                f"replicate: the backward of micro-batch {chunk_id} on pipeline stage {stage.stage_index} cannot be "
                "replayed (its backward chunks did not repeat, or it is the last or a split backward) but its "
                "forward was; capture this program without replicate")
        return self._watch(key, lambda: original(stage, chunk_id, loss=loss, full_backward=full_backward,
                                                 last_backward=last_backward),
                           lambda _: stage.bwd_cache.get(chunk_id))


@contextlib.contextmanager
def replicate_chunks(replicator: Replicator | None) -> Iterator[None]:
    """Route the pipeline stages' forward and backward chunks through `replicator` (None: do nothing)."""
    if replicator is None:
        yield
        return
    from torch.distributed.pipelining.stage import _PipelineStageBase

    forward, backward = _PipelineStageBase.forward_one_chunk, _PipelineStageBase.backward_one_chunk

    def forward_one_chunk(stage: Any, *args: Any, **kwargs: Any) -> Any:
        return replicator.forward(forward, stage, *args, **kwargs)

    def backward_one_chunk(stage: Any, *args: Any, **kwargs: Any) -> Any:
        return replicator.backward(backward, stage, *args, **kwargs)

    _PipelineStageBase.forward_one_chunk, _PipelineStageBase.backward_one_chunk = forward_one_chunk, backward_one_chunk
    try:
        yield
    finally:
        _PipelineStageBase.forward_one_chunk, _PipelineStageBase.backward_one_chunk = forward, backward
