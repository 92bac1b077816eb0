"""The interleaved 1F1B pipeline schedule (Narayanan et al. 2021, Sec. 2.2.2; Megatron-LM's
``forward_backward_pipelining_with_interleaving``).

With p stages and v virtual stages each stage runs v model chunks: chunk c (0 .. p v - 1) holds
layers c L / (p v) onward and runs on stage c mod p, so a micro-batch visits every stage v
times. The workload's per-micro-batch blocks name chunks in `TaskBlock.stages` (the embedding on
chunk 0, the output layer on chunk p v - 1, sends on every chunk but the last); its
per-iteration blocks name stages. Stage s runs m v forward and m v backward chunk steps in
Megatron's order:

    forward k  -> chunk (k // p) mod v of the stage, micro-batch (k // (p v)) p + k mod p
    backward k -> chunk v - 1 - (k // p) mod v, the same micro-batch
    warm-up w = min(2 (p - s - 1) + (v - 1) p, m v) forwards, then one forward and one backward
    at a time, then the remaining backwards.

m must be a multiple of p (Megatron's rule; the workload checks it). A step waits for the
previous chunk's send (forward) or the next chunk's (backward), as in 1F1B; sends occupy the
sender's stream. With equal stages and free communication, the bubble is (p - 1)(F + B) / v,
a fraction (p - 1) / (v m) of the ideal time m (F + B) (tests/training/test_interleaved.py).
With v = 1 the schedule is 1F1B exactly (Megatron runs its non-interleaved schedule then).
"""

from __future__ import annotations

from ddlsim.errors import ConfigError
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pipeline import Action, micro_batches, one_f_one_b_order, run_pipeline, virtual_stages
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules import pipeline_stages, register_schedule
from ddlsim.training.settings import TrainingSettings
from ddlsim.types import Workload


def interleaved_order(stage: int, stages: int, chunks_per_stage: int, micro: int) -> list[Action]:
    """The actions of `stage` in interleaved 1F1B order: ("F" or "B", model chunk, micro-batch)."""
    p, v, m = stages, chunks_per_stage, micro
    if v == 1:
        return [(kind, stage, j) for kind, j in one_f_one_b_order(stage, p, m)]
    if m % p:
        raise ConfigError("micro_batches", m, f"must be a multiple of the {p} pipeline stages for the "
                                              "interleaved schedule")
    total = m * v

    def action(kind: str, k: int) -> Action:
        group = (k // p) % v
        chunk = group if kind == "F" else v - 1 - group
        return kind, chunk * p + stage, (k // (p * v)) * p + k % p

    warmup = min(2 * (p - stage - 1) + (v - 1) * p, total)
    order = [action("F", k) for k in range(warmup)]
    for i in range(total - warmup):
        order += [action("F", warmup + i), action("B", i)]
    order += [action("B", k) for k in range(total - warmup, total)]
    return order


@register_schedule("interleaved_1f1b")
def interleaved_schedule(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    """The interleaved 1F1B iteration graph (see the module docstring); 1F1B when v = 1."""
    stages, v, micro = pipeline_stages(workload), virtual_stages(workload), micro_batches(workload)
    orders = [interleaved_order(stage, stages, v, micro) for stage in range(stages)]
    return run_pipeline(workload, pricer, settings, orders, stages * v)
