"""Model FLOPs of one training step, summed over every rank: what `mfu` divides by the peak.

The forward and backward FLOPs of the workload's compute tasks, as their kernel lists count them
(causal flash attention at half its s^2 work; materialised attention in full), on every rank that
runs them: recompute and optimizer steps are not model FLOPs (they are hardware FLOPs), so they
are left out, as MFU is usually defined (Chowdhery et al. 2022, PaLM, Appendix B). Captures count
the same way (`ddlsim/capture/throughput.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ddlsim.core.types import Phase
from ddlsim.core.work import ComputeTask, TaskBlock

MODEL_PHASES = (Phase.FORWARD, Phase.BACKWARD)


def model_flop_per_step(blocks: Iterable[TaskBlock], *, chunks: int = 1, micro_batches: int = 1,
                        ranks_per_chunk: int = 1) -> float:
    """Sum over `blocks` of forward and backward task FLOPs x count x repeat, times the model chunks
    that run a block (its `stages`, or all `chunks`), the micro-batches of a per-micro-batch block,
    and the ranks of a chunk (a pipeline stage's ranks; every GPU without pipelining)."""
    total = 0.0
    for block in blocks:
        flop = sum(task.flop * task.count for task in block.tasks
                   if isinstance(task, ComputeTask) and task.phase in MODEL_PHASES)
        if not flop:
            continue
        copies = len(block.stages) or chunks
        runs = micro_batches if block.per_micro_batch else 1
        total += flop * block.repeat * copies * runs * ranks_per_chunk
    return total
