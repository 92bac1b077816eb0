"""PyTorch collective ops -> ddlsim collective calls, with sizes in the nccl-tests convention.

Every collective a program issues reaches the dispatcher as one op of the ``c10d`` namespace
(``torch.distributed.all_reduce`` and friends, DDP's reducer, FSDP2) or of
``_c10d_functional`` (DTensor, functional collectives). `describe(func, args, kwargs)` turns
one such op into a `CollectiveSpec`: the ddlsim op, ``size_bytes`` as `ddlsim.core.types.CollectiveCall`
defines it (all_reduce, reduce_scatter, all_to_all, broadcast, reduce: the input buffer;
all_gather and gather: the gathered output; scatter: the root's whole input; send/recv: the
bytes sent), the process group, the root or peer (a rank inside the group) and the output
tensors the program will wait for. docs/capture.md has the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ddlsim.core.types import CollectiveOp


@dataclass
class CollectiveSpec:
    """One collective as the dispatcher saw it (before its group is resolved to ranks)."""

    op: CollectiveOp
    size_bytes: int
    group: Any  # a ProcessGroup script object or a group name
    dtype: str
    outputs: list[torch.Tensor] = field(default_factory=list)
    root: int = 0  # group rank of the root (rooted ops)
    peer: int | None = None  # group rank of the peer (send/recv)
    receives: bool = False  # recv side of a send/recv
    splits: tuple[int, ...] = ()  # all_to_all input split sizes (rows), when given
    functional: bool = False  # returns a tensor waited with wait_tensor, not a Work
    times_group: bool = False  # size_bytes is per rank: multiply by the group size once it is known


def tensor_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _flat(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _flat(item)]
    return []


def _bytes(value: Any) -> int:
    return sum(tensor_bytes(tensor) for tensor in _flat(value))


def _dtype(value: Any) -> str:
    tensors = _flat(value)
    return str(tensors[0].dtype).removeprefix("torch.") if tensors else ""


def _spec(op: CollectiveOp, size: int, group: Any, like: Any, outputs: Any, **extra: Any) -> CollectiveSpec:
    return CollectiveSpec(op, int(size), group, _dtype(like), _flat(outputs), **extra)


A = CollectiveOp
Describer = Callable[[tuple, dict], CollectiveSpec]

# c10d ops: args in schema order (see torch._C._jit_get_all_schemas()).
C10D: dict[str, Describer] = {
    "allreduce_": lambda a, k: _spec(A.ALL_REDUCE, _bytes(a[0]), a[1], a[0], a[0]),
    "allreduce_coalesced_": lambda a, k: _spec(A.ALL_REDUCE, _bytes(a[0]), a[1], a[0], a[0]),
    "allgather_": lambda a, k: _spec(A.ALL_GATHER, _bytes(a[0]), a[2], a[1], a[0]),
    "_allgather_base_": lambda a, k: _spec(A.ALL_GATHER, _bytes(a[0]), a[2], a[1], a[0]),
    "allgather_coalesced_": lambda a, k: _spec(A.ALL_GATHER, _bytes(a[0]), a[2], a[1], a[0]),
    "allgather_into_tensor_coalesced_": lambda a, k: _spec(A.ALL_GATHER, _bytes(a[0]), a[2], a[1], a[0]),
    "reduce_scatter_": lambda a, k: _spec(A.REDUCE_SCATTER, _bytes(a[1]), a[2], a[1], a[0]),
    "_reduce_scatter_base_": lambda a, k: _spec(A.REDUCE_SCATTER, _bytes(a[1]), a[2], a[1], a[0]),
    "reduce_scatter_tensor_coalesced_": lambda a, k: _spec(A.REDUCE_SCATTER, _bytes(a[1]), a[2], a[1], a[0]),
    "alltoall_": lambda a, k: _spec(A.ALL_TO_ALL, _bytes(a[1]), a[2], a[1], a[0],
                                    splits=tuple(t.shape[0] if t.dim() else 1 for t in _flat(a[1]))),
    "alltoall_base_": lambda a, k: _spec(A.ALL_TO_ALL, _bytes(a[1]), a[2], a[1], a[0], splits=tuple(a[4])),
    "broadcast_": lambda a, k: _spec(A.BROADCAST, _bytes(a[0]), a[1], a[0], a[0], root=int(a[2])),
    "reduce_": lambda a, k: _spec(A.REDUCE, _bytes(a[0]), a[1], a[0], a[0], root=int(a[3])),
    "gather_": lambda a, k: _spec(A.GATHER, _bytes(a[1]), a[2], a[1], a[0], root=int(a[3]), times_group=True),
    "scatter_": lambda a, k: _spec(A.SCATTER, _bytes(a[0]), a[2], a[0], a[0], root=int(a[3]), times_group=True),
    "barrier": lambda a, k: _spec(A.BARRIER, 0, a[1], a[0], []),
    "send": lambda a, k: _spec(A.SEND_RECV, _bytes(a[0]), a[1], a[0], [], peer=int(a[2])),
    "recv_": lambda a, k: _spec(A.SEND_RECV, _bytes(a[0]), a[1], a[0], a[0], peer=int(a[2]), receives=True),
    "recv_any_source_": lambda a, k: _spec(A.SEND_RECV, _bytes(a[0]), a[1], a[0], a[0], receives=True),
}


def _functional(op: CollectiveOp, size: Callable[[tuple], int], group_index: int, **extra: Callable) -> Describer:
    def describe(a: tuple, k: dict) -> CollectiveSpec:
        values = {key: getter(a) for key, getter in extra.items()}
        return _spec(op, size(a), a[group_index], a[0], [], functional=True, **values)

    return describe


FUNCTIONAL: dict[str, Describer] = {
    "all_reduce": _functional(A.ALL_REDUCE, lambda a: _bytes(a[0]), 2),
    "all_reduce_": _functional(A.ALL_REDUCE, lambda a: _bytes(a[0]), 2),
    "all_reduce_coalesced": _functional(A.ALL_REDUCE, lambda a: _bytes(a[0]), 2),
    "all_reduce_coalesced_": _functional(A.ALL_REDUCE, lambda a: _bytes(a[0]), 2),
    "all_gather_into_tensor": _functional(A.ALL_GATHER, lambda a: _bytes(a[0]) * int(a[1]), 2),
    "all_gather_into_tensor_out": _functional(A.ALL_GATHER, lambda a: _bytes(a[0]) * int(a[1]), 2),
    "all_gather_into_tensor_coalesced": _functional(A.ALL_GATHER, lambda a: _bytes(a[0]) * int(a[1]), 2),
    "reduce_scatter_tensor": _functional(A.REDUCE_SCATTER, lambda a: _bytes(a[0]), 3),
    "reduce_scatter_tensor_out": _functional(A.REDUCE_SCATTER, lambda a: _bytes(a[0]), 3),
    "reduce_scatter_tensor_coalesced": _functional(A.REDUCE_SCATTER, lambda a: _bytes(a[0]), 3),
    "all_to_all_single": _functional(A.ALL_TO_ALL, lambda a: _bytes(a[0]), 3,
                                     splits=lambda a: tuple(int(s) for s in a[2])),
    "broadcast": _functional(A.BROADCAST, lambda a: _bytes(a[0]), 2, root=lambda a: int(a[1])),
    "broadcast_": _functional(A.BROADCAST, lambda a: _bytes(a[0]), 2, root=lambda a: int(a[1])),
    "isend": _functional(A.SEND_RECV, lambda a: _bytes(a[0]), 3, peer=lambda a: int(a[1])),
    "irecv": _functional(A.SEND_RECV, lambda a: _bytes(a[0]), 3, peer=lambda a: int(a[1]),
                         receives=lambda a: True),
}

NAMESPACES = {"c10d": C10D, "_c10d_functional": FUNCTIONAL, "_c10d_functional_autograd": FUNCTIONAL}
WAIT_OPS = frozenset({"wait_tensor"})
IGNORED = frozenset({"check_for_nan", "monitored_barrier_"})


def describe(func: Any, args: tuple, kwargs: dict) -> CollectiveSpec | None:
    """The collective `func` issues, or None when `func` is not a collective."""
    table = NAMESPACES.get(func.namespace)
    if table is None:
        return None
    describer = table.get(func._opname)
    if describer is None:
        return None
    spec = describer(args, kwargs)
    if func._opname.endswith("_out") and "out" in kwargs:
        spec.outputs = _flat(kwargs["out"])
    return spec


def is_collective_namespace(func: Any) -> bool:
    return func.namespace in NAMESPACES
