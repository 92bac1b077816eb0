"""Streams, events and waits of the captured program, as a CUDA program would have them.

On a GPU, FSDP2 all-gathers on its own stream and the compute stream waits on an event; DDP's
reducer all-reduces buckets while backward goes on; an async collective runs until its work is
waited. On the CPU those calls are no-ops (`torch.cpu.Stream`), so while a capture runs,
`patched_runtime()` swaps in streams and events that remember, for every stream, which recorded
ops the next op on it must wait for, and wraps the process group's collective methods and
``Work.wait`` so that an async collective's wait point is known.

`Timeline` is that bookkeeping: ``pending[stream]`` (what the next op on the stream waits for)
and ``last[stream]`` (its latest op). An event recorded on a stream captures both; waiting on
it adds them to the waiting stream's pending set.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.weak import WeakIdKeyDictionary

DEFAULT_STREAM = "compute"
_C10D = torch._C._distributed_c10d
PROCESS_GROUP_METHODS = (
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced", "allgather_into_tensor_coalesced",
    "_allgather_base", "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced", "alltoall",
    "alltoall_base", "broadcast", "reduce", "gather", "scatter", "send", "recv", "recv_anysource", "barrier",
)


class Timeline:
    """Per-stream ordering state of one capture (stream names are strings)."""

    def __init__(self) -> None:
        self.pending: dict[str, set[int]] = {}
        self.last: dict[str, int] = {}
        self.work_records: dict[int, tuple[Any, list[int]]] = {}  # id(work) -> (work, record indices)
        self.tensor_records = WeakIdKeyDictionary()  # functional collective output -> record index
        self.in_flight: dict[StorageWeakRef, int] = {}  # collective output storage -> record index
        self.python_call_records: list[list[int]] | None = None
        self.stream_of: dict[int, str] = {}
        # id(work) -> (work, weak references to its tensors): a real work's future carries them, but the
        # capture must not keep them alive (they would count as live memory, with their autograd graphs)
        self.work_tensors: dict[int, tuple[Any, Any]] = {}
        self.log: list[tuple] | None = None  # waits and placements, while a chunk is watched (replicate.py)

    def prune(self, records: set[int]) -> set[int]:
        """Keep the latest record of each stream: ops of one stream run in order."""
        latest: dict[str, int] = {}
        for index in records:
            stream = self.stream_of.get(index, "")
            if latest.get(stream, -1) < index:
                latest[stream] = index
        return set(latest.values())

    def reset(self) -> None:
        self.__init__()

    def frontier(self, stream: str) -> set[int]:
        """What an op enqueued on `stream` now would come after: its last op and its pending waits."""
        done = set(self.pending.get(stream, ()))
        if stream in self.last:
            done.add(self.last[stream])
        return done

    def wait(self, stream: str, records: set[int] | frozenset[int]) -> None:
        if records:
            if self.log is not None:
                self.log.append(("wait", stream, tuple(sorted(records))))
            pending = self.pending.setdefault(stream, set())
            pending.update(records)
            if len(pending) > 1:
                self.pending[stream] = self.prune(pending)

    def place(self, stream: str, index: int) -> tuple[int, ...]:
        """Put record `index` on `stream`; return the records it waits for besides its stream order."""
        if self.log is not None:
            self.log.append(("place", stream, index))
        return self._place(stream, index)

    def place_collective(self, comm_stream: str, issue_stream: str, index: int) -> tuple[int, ...]:
        """Put collective `index` on `comm_stream`, after the issuing stream's work; return what it waits for."""
        if self.log is not None:
            self.log.append(("collective", comm_stream, issue_stream, index))
        deps = self.prune(set(self._place(comm_stream, index)) | self.frontier(issue_stream))
        deps.discard(index)
        return tuple(sorted(deps))

    def _place(self, stream: str, index: int) -> tuple[int, ...]:
        deps = self.pending.pop(stream, set())
        deps.discard(self.last.get(stream, -1))
        self.last[stream] = index
        self.stream_of[index] = stream
        return tuple(sorted(deps))

    def wait_work(self, work: Any) -> None:
        entry = self.work_records.pop(id(work), None)
        if entry is not None:
            self.wait(current_stream_name(), set(entry[1]))
            self.forget(entry[1])

    def forget(self, indices: list[int]) -> None:
        if self.in_flight:
            for key in [key for key, index in self.in_flight.items() if index in indices]:
                del self.in_flight[key]


class TrackedEvent:
    """`torch.cpu.Event` that remembers which recorded ops it marks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.records: frozenset[int] = frozenset()

    def record(self, stream: Any = None) -> TrackedEvent:
        stream = stream or torch.cpu.current_stream()
        self.records = frozenset(_timeline().frontier(_name(stream)))
        return self

    def wait(self, stream: Any = None) -> None:
        _timeline().wait(_name(stream or torch.cpu.current_stream()), self.records)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None


class TrackedStream:
    """`torch.cpu.Stream` with an identity: ``stream<k>`` in the order the program created them."""

    count = 0

    def __init__(self, priority: int = -1, name: str | None = None, **kwargs: Any) -> None:
        if name is None:
            TrackedStream.count += 1
            name = f"stream{TrackedStream.count}"
        self.name = name

    def wait_stream(self, stream: Any) -> None:
        _timeline().wait(self.name, _timeline().frontier(_name(stream)))

    def record_event(self, event: TrackedEvent | None = None) -> TrackedEvent:
        return (event or TrackedEvent()).record(self)

    def wait_event(self, event: Any) -> None:
        if isinstance(event, TrackedEvent):
            _timeline().wait(self.name, event.records)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None


_ACTIVE: list[Timeline] = []


def _timeline() -> Timeline:
    return _ACTIVE[-1] if _ACTIVE else Timeline()


def _name(stream: Any) -> str:
    return getattr(stream, "name", DEFAULT_STREAM)


def current_stream_name() -> str:
    return _name(torch.cpu.current_stream())


def _wrap_method(original: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        timeline = _timeline()
        outer, timeline.python_call_records = timeline.python_call_records, []
        try:
            work = original(self, *args, **kwargs)
            records = timeline.python_call_records
        finally:
            timeline.python_call_records = outer
        if records and work is not None:
            timeline.work_records[id(work)] = (work, records)
        if work is not None and args:
            timeline.work_tensors[id(work)] = (work, _weak(args[0]))
        return work

    return method


def _weak(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return weakref.ref(value)
    if isinstance(value, (list, tuple)) and all(isinstance(item, torch.Tensor) for item in value):
        return [weakref.ref(item) for item in value]
    return lambda: value


def _strong(value: Any) -> Any:
    """The tensors behind `_weak`'s references, or None if one has died."""
    if isinstance(value, list):
        tensors = [ref() for ref in value]
        return None if any(tensor is None for tensor in tensors) else tensors
    return value()


def _wrap_get_future(original: Any) -> Any:
    """A fake work's future completes with no value; give it the work's tensors, as a real one has."""

    def get_future(self: Any) -> Any:
        entry = _timeline().work_tensors.get(id(self))
        tensors = _strong(entry[1]) if entry is not None else None
        if tensors is None:
            return original(self)
        future: torch.futures.Future = torch.futures.Future()
        future.set_result(tensors)
        return future

    return get_future


def _wrap_wait(original: Any) -> Any:
    def wait(self: Any, *args: Any, **kwargs: Any) -> Any:
        _timeline().wait_work(self)
        return original(self, *args, **kwargs)

    return wait


@contextlib.contextmanager
def patched_runtime(timeline: Timeline) -> Iterator[Timeline]:
    """Tracked streams and events, and wrapped collective methods, while the block runs."""
    saved: list[tuple[Any, str, Any]] = []

    def swap(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, value)

    default = TrackedStream(name=DEFAULT_STREAM)
    TrackedStream.count = 0
    _ACTIVE.append(timeline)
    try:
        swap(torch.cpu, "Stream", TrackedStream)
        swap(torch.cpu, "Event", TrackedEvent)
        swap(torch.cpu, "_default_cpu_stream", default)
        swap(torch.cpu, "_current_stream", default)
        for name in PROCESS_GROUP_METHODS:
            if name in _C10D.ProcessGroup.__dict__:
                swap(_C10D.ProcessGroup, name, _wrap_method(getattr(_C10D.ProcessGroup, name)))
        for work_class in {_C10D.Work, getattr(_C10D, "FakeWork", _C10D.Work)}:
            if "wait" in work_class.__dict__:
                swap(work_class, "wait", _wrap_wait(work_class.wait))
        fake_work = getattr(_C10D, "FakeWork", None)
        if fake_work is not None:
            original = fake_work.__dict__.get("get_future")
            swap(fake_work, "get_future", _wrap_get_future(fake_work.get_future))
            if original is None:  # inherited: restore by deleting the override
                saved[-1] = (fake_work, "get_future", None)
        yield timeline
    finally:
        _ACTIVE.remove(timeline)
        for owner, name, value in reversed(saved):
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
