"""The record of one captured op, and the columns the capture's tables carry.

A capture is one list of `OpRecord` per captured rank, in program order. Compute records are
aten ops that launch a kernel; collective records are the collectives of `collective_ops.py`
with their group resolved to global ranks. `stream` and `deps` say where the op runs and what
it waits for besides the previous op of its stream (`streams.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

COMPUTE = "compute"
COLLECTIVE = "collective"
VALUE_FIELDS = ("read_values", "read_value_bytes", "write_values", "write_value_bytes",
                "write_value_priors")  # values.py


@dataclass(slots=True)
class OpRecord:
    index: int
    kind: str
    op: str
    stream: str
    deps: tuple[int, ...]
    module: str
    phase: str
    dtype: str
    flop: float = 0.0
    read_bytes: int = 0
    write_bytes: int = 0
    gemm_m: int = 0
    gemm_n: int = 0
    gemm_k: int = 0
    gemm_batch: int = 0
    torch_op: str = ""
    size_bytes: int = 0
    group_size: int = 1
    group_stride: int = 1
    group_num_ranks: int = 1
    group_regular: bool = True
    group_first_rank: int = 0
    root: int = 0
    peer: int = -1
    receives: bool = False
    imbalance: float = 1.0
    group_label: str = ""
    args: str = ""
    read_values: tuple[int, ...] = ()  # value ids read (values.py), with the bytes read of each
    read_value_bytes: tuple[int, ...] = ()
    write_values: tuple[int, ...] = ()  # value ids written (new versions), with the bytes written of each
    write_value_bytes: tuple[int, ...] = ()
    write_value_priors: tuple[int, ...] = ()  # the value id each write replaced (values.py)
    live_bytes: int = 0  # the rank's highest live tensor bytes since the previous record


RECORD_COLUMNS: tuple[str, ...] = tuple(field.name for field in fields(OpRecord))
COMPUTE_COLUMNS = ("index", "op", "stream", "module", "phase", "dtype", "flop", "read_bytes", "write_bytes",
                   "gemm_m", "gemm_n", "gemm_k", "gemm_batch", "torch_op")
COLLECTIVE_COLUMNS = ("index", "op", "size_bytes", "group_size", "group_stride", "group_num_ranks", "group_regular",
                      "group_label", "phase", "module", "dtype", "torch_op", "stream", "root", "peer", "receives",
                      "imbalance")
