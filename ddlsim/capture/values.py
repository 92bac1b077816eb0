"""Live tensor memory and value identity of one captured rank.

Every storage of a fake tensor of the capture's fake mode is tracked from the op that first
produces it (an op output: activations, gradients, parameters and optimizer states created under
fake mode, FSDP's buffers) until the last tensor on it dies (a weak reference to the storage,
whose Python object lives exactly as long as the storage does), and through
``UntypedStorage.resize_`` (FSDP2 frees and re-allocates its all-gather buffers that way). The
sum of live storage bytes is the rank's memory in use; `take_peak` returns the highest sum since
it was last called, which the recorder stores with every record (``live_bytes``), so a
program's peak is the largest of them.

A *value* is one version of a storage: it gets a new id when it is first seen and every time an
op writes it (an output, an in-place update, an ``out=`` argument). Records list the values they
read and write (`ValueRefs`), and for each written value the id of the version it replaced (for
a new output, an id no record ever lists), which is what fusing consecutive memory-bound ops needs
(`fusion.py`): which bytes enter a run of ops from outside and which leave it, including the
last version of a storage that outlives the run (a parameter or optimizer state updated in place).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import torch

# (value ids read, bytes read of each, value ids written, bytes written of each, the id each written
# value replaced): records.VALUE_FIELDS
ValueRefs = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]
NO_VALUES: ValueRefs = ((), (), (), (), ())


class Storages:
    """Bytes and current value of every live storage of one rank (module docstring)."""

    def __init__(self) -> None:
        self.entries: dict[int, list[Any]] = {}  # storage key -> [bytes, value id, weak reference]
        self.live_bytes = 0
        self.peak_bytes = 0
        self.last_value = 0

    def _entry(self, tensor: torch.Tensor) -> list[Any]:
        storage = tensor.untyped_storage()
        key = storage._cdata
        entry = self.entries.get(key)
        if entry is None:
            size = storage.nbytes()
            self.last_value += 1
            entry = [size, self.last_value, weakref.ref(storage, lambda _, key=key: self._free(key))]
            self.entries[key] = entry
            self._grow(size)
        return entry

    def _grow(self, size: int) -> None:
        self.live_bytes += size
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes

    def _free(self, key: int) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None:
            self.live_bytes -= entry[0]

    def resized(self, storage: Any) -> None:
        entry = self.entries.get(storage._cdata)
        if entry is not None:
            self.live_bytes -= entry[0]
            entry[0] = storage.nbytes()
            self._grow(entry[0])

    def produced(self, tensors: Sequence[torch.Tensor]) -> None:
        """Register the storages of an op's outputs (new ones are allocations)."""
        for tensor in tensors:
            self._entry(tensor)

    def refs(self, reads: Sequence[tuple[torch.Tensor, int]], writes: Sequence[tuple[torch.Tensor, int]]) -> ValueRefs:
        """The values an op read (their current ids) and wrote (new ids), with the bytes of each."""
        read_ids = tuple(self._entry(tensor)[1] for tensor, _ in reads)
        written: dict[int, list[Any]] = {}
        written_bytes: dict[int, int] = {}
        for tensor, size in writes:
            entry = self._entry(tensor)
            written[id(entry)] = entry
            written_bytes[id(entry)] = written_bytes.get(id(entry), 0) + size
        write_ids, priors = [], []
        for key, entry in written.items():
            priors.append(entry[1])
            self.last_value += 1
            entry[1] = self.last_value
            write_ids.append(self.last_value)
            written_bytes[key] = min(written_bytes[key], entry[0])
        return (read_ids, tuple(size for _, size in reads), tuple(write_ids), tuple(written_bytes.values()),
                tuple(priors))

    def take_peak(self) -> int:
        """The highest live bytes since the last call."""
        peak, self.peak_bytes = self.peak_bytes, self.live_bytes
        return peak


@contextlib.contextmanager
def watching_resizes(storages: Storages) -> Iterator[None]:
    """Follow ``UntypedStorage.resize_`` of tracked storages while the capture runs."""
    own = torch.UntypedStorage.__dict__.get("resize_")
    original = torch.UntypedStorage.resize_

    def resize_(self: Any, size: int) -> Any:
        result = original(self, size)
        storages.resized(self)
        return result

    torch.UntypedStorage.resize_ = resize_
    try:
        yield
    finally:
        if own is None:
            del torch.UntypedStorage.resize_
        else:
            torch.UntypedStorage.resize_ = own
