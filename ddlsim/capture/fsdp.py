"""FSDP2 at a thousand fake ranks: shard views made on demand.

``fully_shard`` cuts every parameter into one chunk per data-parallel rank (`torch.chunk`) and
then uses two of them: its own rank's and the first (for the padded size). Each chunk of a fake
tensor costs a fake-tensor construction, so on 128 data-parallel ranks sharding a 70B model
creates about a hundred thousand of them. While a capture runs, the chunks are a sequence
that makes a chunk when it is indexed, with `torch.chunk`'s sizes; what FSDP2 sees is the same.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence

import torch


class LazyChunks(Sequence):
    """``torch.chunk(tensor, count, dim)`` padded with empty chunks to `count`, built per index."""

    def __init__(self, tensor: torch.Tensor, count: int, dim: int) -> None:
        self.tensor, self.count, self.dim = tensor, count, dim
        self.size = tensor.size(dim)
        self.step = math.ceil(self.size / count) if self.size else 0

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> torch.Tensor:  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.count))]
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(index)
        start = index * self.step
        if self.step == 0 or start >= self.size:
            first = self.tensor.narrow(self.dim, 0, min(self.step, self.size))
            return first.new_empty(0)
        return self.tensor.narrow(self.dim, start, min(self.step, self.size - start))


@contextlib.contextmanager
def lazy_fsdp_chunks() -> Iterator[None]:
    try:
        from torch.distributed.fsdp._fully_shard import _fsdp_param
    except ImportError:
        yield
        return
    original = _fsdp_param.__dict__.get("_chunk_with_empty")
    if original is None:
        yield
        return
    _fsdp_param._chunk_with_empty = LazyChunks
    try:
        yield
    finally:
        _fsdp_param._chunk_with_empty = original
