"""The TorchDispatchMode that records a training step: every kernel-launching aten op and every
collective, with its stream, dependencies, issuing module and phase.

The mode sits above `FakeTensorMode`. Ops whose tensors are all real (the device mesh's rank
bookkeeping) run for real, outside fake mode, and are not recorded; ops on tensor subclasses
(DTensor) are handed to the subclass (NotImplemented), which re-issues them on its local
shards, which are recorded; so are not ops on the fake tensors of another fake mode (DTensor's
shape inference). Errors a fake tensor raises (no fake implementation, a data-dependent shape) are
turned into one-line `InfeasibleError`s naming the op and the module (`failures.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ddlsim.capture import accounting, collective_ops, shapes
from ddlsim.capture.attribution import Attribution
from ddlsim.capture.failures import translate_op_error
from ddlsim.capture.groups import group_shape
from ddlsim.capture.records import COLLECTIVE, COMPUTE, VALUE_FIELDS, OpRecord
from ddlsim.capture.replay import encode_arguments
from ddlsim.capture.streams import Timeline, current_stream_name
from ddlsim.capture.values import NO_VALUES, Storages, watching_resizes
from ddlsim.core.errors import debug_cause

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_PROCESS_GROUP = torch._C._distributed_c10d.ProcessGroup


def _leaves(args: Any, kwargs: Any) -> list[torch.Tensor]:
    """The tensors among an op's arguments (flat, or in lists and tuples one or two levels deep)."""
    found: list[torch.Tensor] = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    found.append(item)
                elif isinstance(item, (list, tuple)):
                    found.extend(leaf for leaf in item if isinstance(leaf, torch.Tensor))
    return found


class Recorder(TorchDispatchMode):
    """Records ops while `recording` is True (see the module docstring)."""

    def __init__(self, timeline: Timeline, world_size: int, attribution: Attribution, fake_mode: Any) -> None:
        super().__init__()
        self.fake_mode = fake_mode
        self.keep_arguments = True  # for replaying the ops on a device (replay.py)
        self.timeline = timeline
        self.world_size = world_size
        self.attribution = attribution
        self.records: list[OpRecord] = []
        self.replayed = 0  # records of replicated chunks, which take indices but are not in `records`
        self.recording = False
        self.suspended = 0  # > 0 while DTensor infers output shapes by running ops on fake tensors
        self.inferring = 0  # > 0 while tensors are made only to infer shapes: they are not the program's memory
        self.failure: BaseException | None = None
        self.failed_module = ""  # the module whose op raised an error ddlsim does not translate
        self._groups: dict[str, tuple[tuple[int, ...], str]] = {}
        self.storages = Storages()  # live memory and value identity (values.py)
        self._resizes = contextlib.ExitStack()

    def __enter__(self) -> Recorder:
        self._resizes.enter_context(watching_resizes(self.storages))
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self._resizes.close()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        tensors = _leaves(args, kwargs)
        if tensors and all(type(t) in _PLAIN for t in tensors):
            with unset_fake_temporarily():
                return func(*args, **kwargs)
        if any(not isinstance(t, FakeTensor) and type(t) not in _PLAIN for t in tensors):
            return NotImplemented  # a subclass (DTensor): it re-issues the op on its local shards, seen here
        if any(t.fake_mode is not self.fake_mode for t in tensors if isinstance(t, FakeTensor)):
            return self._run(func, args, kwargs)  # another fake mode (DTensor's shape inference)
        if not self.recording or self.suspended:
            out = self._run(func, args, kwargs)
            if not self.inferring:
                self.storages.produced(self._ours(out))
            return out
        if func.namespace == "_c10d_functional" and func._opname in collective_ops.WAIT_OPS:
            index = self.timeline.tensor_records.get(args[0])
            if index is not None:
                self.timeline.wait(current_stream_name(), {index})
                self.timeline.forget([index])
            return self._run(func, args, kwargs)
        spec = collective_ops.describe(func, args, kwargs) if collective_ops.is_collective_namespace(func) else None
        out = self._run(func, args, kwargs)
        self.storages.produced(self._ours(out))
        if spec is not None:
            self._record_collective(spec, func, args, kwargs, out)
        elif accounting.launches_kernel(func) and not collective_ops.is_collective_namespace(func):
            self._record_compute(func, args, kwargs, out, tensors)
        return out

    def _ours(self, value: Any) -> list[torch.Tensor]:
        """The fake tensors of this capture's fake mode in `value`."""
        return [t for t in tree_leaves(value) if isinstance(t, FakeTensor) and t.fake_mode is self.fake_mode]

    def _values(self, reads: accounting.Traffic, writes: accounting.Traffic) -> dict[str, tuple[int, ...]]:
        """The record columns of the values an op reads and writes (values.py)."""
        mode = self.fake_mode
        refs = self.storages.refs([(t, size) for t, size in reads if getattr(t, "fake_mode", None) is mode],
                                  [(t, size) for t, size in writes if getattr(t, "fake_mode", None) is mode])
        return dict(zip(VALUE_FIELDS, refs, strict=True))

    @contextlib.contextmanager
    def suspended_in(self, owner: Any, name: str, allocates: bool = True) -> Iterator[None]:
        """Do not record ops while `owner.name` runs (a method that runs ops only to infer shapes,
        whose tensors are not program memory unless `allocates`)."""
        original = owner.__dict__[name]
        function = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.suspended += 1
            self.inferring += not allocates
            try:
                return function(*args, **kwargs)
            finally:
                self.suspended -= 1
                self.inferring -= not allocates

        setattr(owner, name, type(original)(wrapper) if isinstance(original, (staticmethod, classmethod)) else wrapper)
        try:
            yield
        finally:
            setattr(owner, name, original)

    def next_index(self) -> int:
        return len(self.records) + self.replayed

    def _run(self, func: Any, args: tuple, kwargs: dict) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as error:
            translated = translate_op_error(error, func, self.attribution.module())
            if translated is None:
                self.failed_module = self.failed_module or self.attribution.module()
                raise
            self.failure = self.failure or translated
            raise translated.keep_cause(error) from debug_cause(error)

    # ---- compute ---------------------------------------------------------------------------
    def _record_compute(self, func: Any, args: tuple, kwargs: dict, out: Any, tensors: list[torch.Tensor]) -> None:
        stream = current_stream_name()
        if self.timeline.in_flight:
            stream = self._data_flow(func, tensors, stream)
        reads, writes = accounting.tensor_traffic(func, args, kwargs, out)
        m, n, k, batch = shapes.kernel_shape(func, args, kwargs)
        index = self.next_index()
        self.records.append(OpRecord(
            index=index, kind=COMPUTE, op=f"{func.namespace}.{func._opname}", stream=stream,
            deps=self.timeline.place(stream, index), module=self.attribution.module(),
            phase=self.attribution.phase(), dtype=accounting.first_dtype(args, out),
            flop=shapes.op_flop(func, args, kwargs, out), read_bytes=sum(size for _, size in reads),
            write_bytes=sum(size for _, size in writes), gemm_m=m, gemm_n=n, gemm_k=k, gemm_batch=batch,
            torch_op=f"{func.namespace}.{func._opname}.{func._overloadname}",
            args=encode_arguments(args, kwargs) if self.keep_arguments else "",
            live_bytes=self.storages.take_peak(), **self._values(reads, writes)))

    def _collective_values(self, func: Any, args: tuple, kwargs: dict, out: Any) -> dict[str, tuple[int, ...]]:
        try:
            return self._values(*accounting.tensor_traffic(func, args, kwargs, out))
        except (AttributeError, RuntimeError):  # an op without a usable schema: no value identity
            return dict(zip(VALUE_FIELDS, NO_VALUES, strict=True))

    def _data_flow(self, func: Any, tensors: list[torch.Tensor], stream: str) -> str:
        """Wait for in-flight collectives whose buffers this op reads.

        An in-place op on nothing but in-flight buffers (DDP's division of a bucket by the world
        size) is the collective's own post-processing and runs on its stream instead.
        """
        hits = {}
        others = False
        for tensor in tensors:
            key = StorageWeakRef(tensor.untyped_storage())
            if key in self.timeline.in_flight:
                hits[key] = self.timeline.in_flight[key]
            elif tensor.numel() > 1:
                others = True
        if not hits:
            return stream
        if func._schema.is_mutable and not others:
            return self.timeline.stream_of[next(iter(hits.values()))]
        self.timeline.wait(stream, set(hits.values()))
        for key in hits:
            del self.timeline.in_flight[key]
        return stream

    # ---- collectives -----------------------------------------------------------------------
    def _group(self, handle: Any) -> tuple[tuple[int, ...], str]:
        if isinstance(handle, torch.ScriptObject):
            group = _PROCESS_GROUP.unbox(handle)
        elif isinstance(handle, str):
            group = dist.distributed_c10d._resolve_process_group(handle)
        else:
            group = handle
        name = group.group_name
        if name not in self._groups:
            ranks = tuple(dist.get_process_group_ranks(group))
            label = getattr(group, "group_desc", "") or ""
            if not label or label == "undefined":
                shape = group_shape(ranks, self.world_size)
                label = f"group{shape.size}s{shape.stride}"
            self._groups[name] = (ranks, label.removeprefix("mesh_"))
        return self._groups[name]

    def _record_collective(self, spec: collective_ops.CollectiveSpec, func: Any, args: tuple, kwargs: dict,
                           out: Any) -> None:
        ranks, label = self._group(spec.group)
        issue_stream = current_stream_name()
        peer = ranks[spec.peer] if spec.peer is not None and 0 <= spec.peer < len(ranks) else -1
        if spec.peer is not None and peer >= 0:  # a send or receive: the pair of ranks, not the whole group
            ranks = (dist.get_rank(), peer)
        shape = group_shape(ranks, self.world_size)
        comm_stream = f"p2p:{label}:{peer}" if spec.peer is not None else f"comm:{label}"
        index = self.next_index()
        deps = self.timeline.place_collective(comm_stream, issue_stream, index)
        size = spec.size_bytes * (shape.size if spec.times_group else 1)
        imbalance = 1.0
        if spec.splits and sum(spec.splits) > 0:
            imbalance = max(spec.splits) * len(spec.splits) / sum(spec.splits)
        self.records.append(OpRecord(
            index=index, kind=COLLECTIVE, op=spec.op.value, stream=comm_stream, deps=deps,
            module=self.attribution.module(), phase=self.attribution.phase(), dtype=spec.dtype,
            torch_op=f"{func.namespace}.{func._opname}", size_bytes=size, group_size=shape.size,
            group_stride=shape.stride, group_num_ranks=shape.num_ranks, group_regular=shape.regular,
            group_first_rank=min(ranks) if ranks else 0, root=spec.root, peer=peer, receives=spec.receives,
            imbalance=imbalance, group_label=label, live_bytes=self.storages.take_peak(),
            **self._collective_values(func, args, kwargs, out)))
        outputs = spec.outputs
        if spec.functional:
            outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            for tensor in outputs:
                self.timeline.tensor_records[tensor] = index
        elif self.timeline.python_call_records is not None:
            self.timeline.python_call_records.append(index)
        for tensor in outputs:
            self.timeline.in_flight[StorageWeakRef(tensor.untyped_storage())] = index
