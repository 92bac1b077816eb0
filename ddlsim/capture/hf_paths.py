"""transformers' attention masks as a real training step builds them, while a capture runs.

transformers decides whether SDPA may run with ``is_causal=True`` (the causal flash kernel, no
mask tensor) by reading values: its packed-sequence check (`find_packed_sequence_indices`)
looks at the position ids for resets, and gives up on fake tensors, which have no values, so a
capture would see an explicit s x s mask built from a dozen small ops and an attention kernel
that does the full work. In real training of unpacked sequences the check finds no reset and
the causal kernel runs. While a capture's steps run, position ids that are fake tensors count
as one sequence per row (no packing); a program that trains packed sequences passes its own
attention mask (or document-wise ``cu_seqlens``), which the capture records as given.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from torch._subclasses.fake_tensor import FakeTensor

MASKING = "transformers.masking_utils"
PACKED_CHECK = "find_packed_sequence_indices"


@contextlib.contextmanager
def unpacked_sequences() -> Iterator[None]:
    """Patch transformers' packed-sequence check (if transformers is loaded) for the steps."""
    module = sys.modules.get(MASKING)
    original = getattr(module, PACKED_CHECK, None)
    if original is None:
        yield
        return

    def find_packed_sequence_indices(position_ids: Any) -> Any:
        if isinstance(position_ids, FakeTensor):
            return None
        return original(position_ids)

    setattr(module, PACKED_CHECK, find_packed_sequence_indices)
    try:
        yield
    finally:
        setattr(module, PACKED_CHECK, original)
