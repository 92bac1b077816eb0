"""``compute.fusion``: each run of consecutive memory-bound ops of a capture priced as one kernel.

An eager PyTorch program runs an RMSNorm as about eight small kernels, rotary embeddings as six
and SwiGLU as two or three, each reading its inputs from and writing its output to DRAM. A
production stack (torch.compile/Inductor, Transformer Engine, Megatron-Core's fused kernels)
runs each such run as one kernel that reads what enters it and writes what leaves it. With
``compute.fusion`` true, `fuse_events` rewrites a capture's events that way before pricing:

- a *run* is a maximal sequence of consecutive compute records of one stream, phase and layer
  that are memory-bound aten ops: no FLOPs, not a GEMM, grouped GEMM or attention kernel, and
  not one of `UNFUSED_OPS` (sorts, top-k, histograms and other ops Inductor leaves to library
  kernels); custom ops (FSDP's copy-in and copy-out, kernels a program already fused) stay
  kernels of their own. A
  run ends where the graph must cut it anyway: before a record that waits on another stream and
  after a record another op waits on (so no collective is issued from inside a run);
- a run of two or more records becomes one kernel: its last record becomes ``op`` ``ddlsim.fused``
  (one launch), the others ``ddlsim.fused_member`` (no launch, no bytes: they stay in the table,
  so record indices, dependencies and the templates of replicated chunks keep their meaning),
  and the fused record's bytes are the values
  entering the run from outside (each value once, at most its size) plus the values it writes
  that are read outside the run or not read inside it (saved for backward, gradients), plus the
  last version of every storage that existed before the run and that the run updates in place
  (parameters, gradients and optimizer states: the storage outlives the run, so its final value
  is written back, even when the run also reads it); values written and consumed inside the run
  stay in registers.

Values and their bytes come from the recorder's value identity (`values.py`). Captures saved
without it are left as they are.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from ddlsim.capture.graph import layer_of
from ddlsim.capture.pricing import FUSED_MEMBER_OP, kernel_class_of
from ddlsim.capture.records import COMPUTE, VALUE_FIELDS

FUSED_OP = "ddlsim.fused"
FUSED_MEMBER = FUSED_MEMBER_OP  # a record folded into the fused record of its run: costs nothing
UNFUSED_OPS = frozenset({"sort", "argsort", "topk", "kthvalue", "median", "histc", "bincount", "nonzero", "unique",
                         "_unique2", "unique_consecutive", "unique_dim", "randperm", "multinomial"})


def fusible(row: Any) -> bool:
    """True for a memory-bound compute record (module docstring)."""
    if row.kind != COMPUTE or row.flop > 0 or not row.op.startswith("aten."):
        return False
    kernel_class = kernel_class_of(row.op, row.gemm_m)
    return not (kernel_class.is_gemm or kernel_class.is_attention) and row.op.rsplit(".", 1)[-1] not in UNFUSED_OPS


def runs_of(rows: list[Any]) -> list[list[int]]:
    """Positions (into `rows`) of every run of two or more fusible records."""
    referenced = {dep for row in rows for dep in row.deps}
    runs: list[list[int]] = []
    open_runs: dict[str, tuple[list[int], str, str]] = {}

    def close(stream: str) -> None:
        run = open_runs.pop(stream, None)
        if run is not None and len(run[0]) > 1:
            runs.append(run[0])

    for position, row in enumerate(rows):
        if row.kind != COMPUTE:
            continue
        if not fusible(row):
            close(row.stream)
            continue
        layer = layer_of(row.module)
        current = open_runs.get(row.stream)
        if current is not None and (len(row.deps) or current[1] != row.phase or current[2] != layer):
            close(row.stream)
            current = None
        if current is None:
            current = open_runs[row.stream] = ([], row.phase, layer)
        current[0].append(position)
        if row.index in referenced:
            close(row.stream)
    for stream in list(open_runs):
        close(stream)
    return sorted(runs)


def updated_in_place(rows: list[Any], run: list[int], seen: set[int]) -> set[int]:
    """The last versions, within `run`, of storages that existed before it (a write whose chain of
    replaced versions leads to a value some record outside the run's writes knows)."""
    prior_of: dict[int, int] = {}
    for position in run:
        row = rows[position]
        prior_of.update(zip(row.write_values, row.write_value_priors, strict=True))
    replaced = set(prior_of.values())
    last = set()
    for value in prior_of:
        if value in replaced:
            continue
        root = value
        while root in prior_of:
            root = prior_of[root]
        if root in seen:
            last.add(value)
    return last


def run_bytes(rows: list[Any], run: list[int], readers: dict[int, list[int]], size: dict[int, int],
              seen: set[int]) -> tuple[int, int]:
    """(bytes entering, bytes leaving) of one run (module docstring)."""
    members = set(run)
    produced: set[int] = set()
    entering: dict[int, int] = defaultdict(int)
    leaving = 0
    for position in run:
        row = rows[position]
        for value, nbytes in zip(row.read_values, row.read_value_bytes, strict=True):
            if value not in produced:
                entering[value] += nbytes
        produced.update(row.write_values)
    persistent = updated_in_place(rows, run, seen)
    for position in run:
        row = rows[position]
        for value, nbytes in zip(row.write_values, row.write_value_bytes, strict=True):
            where = readers.get(value, ())
            if value in persistent or not any(reader in members for reader in where) or \
                    any(reader not in members for reader in where):
                leaving += nbytes
    return sum(min(nbytes, size.get(value, nbytes)) for value, nbytes in entering.items()), leaving


def _rank_rows(frame: pd.DataFrame) -> tuple[list[Any], list[tuple[list[int], int, int]]]:
    rows = list(frame.itertuples(index=False))
    readers: dict[int, list[int]] = defaultdict(list)
    size: dict[int, int] = defaultdict(int)
    seen: set[int] = set()
    for position, row in enumerate(rows):
        for value, nbytes in zip(row.read_values, row.read_value_bytes, strict=True):
            readers[value].append(position)
            size[value] = max(size[value], nbytes)
        for value, nbytes in zip(row.write_values, row.write_value_bytes, strict=True):
            size[value] = max(size[value], nbytes)
        seen.update(row.read_values)
        seen.update(row.write_values)
    return rows, [(run, *run_bytes(rows, run, readers, size, seen)) for run in runs_of(rows)]


def fuse_events(events: pd.DataFrame) -> pd.DataFrame:
    """`events` with every run of memory-bound ops replaced by one fused record (module docstring)."""
    if events.empty or any(column not in events.columns for column in VALUE_FIELDS):
        return events
    pieces = []
    for _, frame in events.groupby("rank", sort=False):
        frame = frame.reset_index(drop=True)
        rows, runs = _rank_rows(frame)
        if not runs:
            pieces.append(frame)
            continue
        columns = {name: frame.columns.get_loc(name) for name in ("op", "torch_op", "read_bytes", "write_bytes",
                                                                   "live_bytes")}
        frame = frame.copy()
        for run, entering, leaving in runs:
            last = run[-1]
            ops = "+".join(rows[position].op.rsplit(".", 1)[-1] for position in run)
            for position in run[:-1]:
                frame.iat[position, columns["op"]] = FUSED_MEMBER
                frame.iat[position, columns["read_bytes"]] = 0
                frame.iat[position, columns["write_bytes"]] = 0
            frame.iat[last, columns["op"]] = FUSED_OP
            frame.iat[last, columns["torch_op"]] = f"fused({ops})"
            frame.iat[last, columns["read_bytes"]] = entering
            frame.iat[last, columns["write_bytes"]] = leaving
            frame.iat[last, columns["live_bytes"]] = max(rows[position].live_bytes for position in run)
        pieces.append(frame)
    return pd.concat(pieces, ignore_index=True)
