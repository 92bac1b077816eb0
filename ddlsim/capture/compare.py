"""Collective calls of an analytic workload and of a capture, side by side.

Both sides are counted for one rank of one pipeline stage (all its model chunks) over one iteration, by
(op, size_bytes, group_size, phase): the analytic workload's blocks of that stage, per
micro-batch blocks times the micro-batches, repeats and counts; the capture's calls of the
captured rank of that stage (receives are the peer's sends, so they are not counted). The
analytic-models work (issue 16) uses `call_table` to check each parallelism against a capture.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from ddlsim.capture.program import CapturedProgram
from ddlsim.capture.records import COLLECTIVE
from ddlsim.core.types import CollectiveCall
from ddlsim.core.work import Workload

CallKey = tuple[str, int, int, str]


def analytic_calls(workload: Workload, stage: int = 0) -> Counter[CallKey]:
    """With virtual stages (interleaved 1F1B), the per-micro-batch blocks name model chunks:
    stage s runs chunks s, s + p, s + 2p, ..."""
    micro = int(workload.plan.get("micro_batches", 1))  # type: ignore[call-overload]
    virtual = int(workload.plan.get("virtual_stages", 1) or 1)  # type: ignore[call-overload]
    stages = int(workload.plan.get("pp_degree", 1) or 1)  # type: ignore[call-overload]
    chunks = [stage + v * stages for v in range(virtual)] if virtual > 1 else [stage]
    calls: Counter[CallKey] = Counter()
    for block in workload.blocks:
        runs = sum(block.runs_on(chunk) for chunk in chunks) if block.per_micro_batch else int(block.runs_on(stage))
        if not runs:
            continue
        times = runs * block.repeat * (micro if block.per_micro_batch else 1)
        for task in block.tasks:
            if isinstance(task, CollectiveCall) and task.group.size > 1:
                calls[(task.op.value, task.size_bytes, task.group.size, task.phase.value)] += task.count * times
    return calls


def captured_calls(program: CapturedProgram, rank: int | None = None) -> Counter[CallKey]:
    """Replicated chunks count as often as they ran (`CapturedProgram.multiplicity`)."""
    events = program.events.assign(calls=program.multiplicity())
    rank = program.ranks[0] if rank is None else rank
    rows = events[(events.kind == COLLECTIVE) & (events["rank"] == rank) & ~events.receives.astype(bool)
                  & (events.group_size > 1)]
    calls: Counter[CallKey] = Counter()
    for row in rows.itertuples(index=False):
        calls[(row.op, int(row.size_bytes), int(row.group_size), row.phase)] += int(row.calls)
    return calls


def call_table(analytic: Counter[CallKey], captured: Counter[CallKey]) -> pd.DataFrame:
    """One row per (op, size_bytes, group_size, phase): analytic and captured counts, and whether they match."""
    keys = sorted(set(analytic) | set(captured))
    table = pd.DataFrame([(*key, analytic.get(key, 0), captured.get(key, 0)) for key in keys],
                         columns=["op", "size_bytes", "group_size", "phase", "analytic_calls", "captured_calls"])
    table["match"] = table.analytic_calls == table.captured_calls
    return table
