"""Count the work of a piece of torch code: FLOPs (torch's FlopCounterMode) and bytes touched.

Bytes are the sizes of every tensor an operator reads or writes (views excluded), summed over
operators: the traffic a device with no cache reuse between operators would see. It is an upper
bound on DRAM traffic and the natural `memory_bytes` of a roofline that prices each operator
as a separate pass over memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode


@dataclass
class WorkCount:
    """Filled in when the `count_work` block exits."""

    flop: float = 0.0
    bytes: float = 0.0


class _ByteCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for item in tree_flatten((args, kwargs, out))[0]:
                if isinstance(item, torch.Tensor):
                    self.bytes += item.numel() * item.element_size()
        return out


@contextlib.contextmanager
def count_work() -> Iterator[WorkCount]:
    """FLOPs and bytes of everything run inside the block (nested blocks count in both)."""
    count = WorkCount()
    flops = FlopCounterMode(display=False)
    touched = _ByteCounter()
    try:
        with flops, touched:
            yield count
    finally:
        count.flop = float(flops.get_total_flops())
        count.bytes = float(touched.bytes)
