"""Pipeline parallelism with the 1F1B schedule (Narayanan et al. 2021, "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM", Sec. 2.2.1, PipeDream-Flush).

The workload's per-micro-batch blocks form a forward step F and a backward step B of each stage
(`stages.split_steps`). With p stages and m micro-batches, stage s runs

    warm-up   F(0) .. F(w-1)                 w = min(p - 1 - s, m)
    steady    F(w+i), B(i)  for i < m - w    (one forward, one backward)
    cool-down B(m-w) .. B(m-1)

on its own compute stream ``stage<s>``. F(s, j) waits for stage s-1's send of micro-batch j,
B(s, j) for stage s+1's send of its gradient. Sends (send_recv) occupy the sender's stream, as
Megatron's blocking point-to-point calls do; the receiving stage's all-gather (scatter-gather)
occupies the receiver's. The bubble follows: (p - 1) x (F + B) of the stages, heavier when the
first or last stage also carries the embedding or output layer. After a stage's last backward
come the per-iteration blocks (`stages.add_tail`).

With one stage this is plain gradient accumulation: F(0) B(0) F(1) B(1) ...
"""

from __future__ import annotations

from ddlsim.core.errors import ConfigError
from ddlsim.core.work import Workload
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.plan import micro_batches, pipeline_stages
from ddlsim.training.schedules.stages import StageBuilder, add_tail, split_steps
from ddlsim.training.settings import TrainingSettings

Action = tuple[str, int, int]  # ("F" or "B", model chunk, micro-batch)


def one_f_one_b_order(stage: int, stages: int, micro: int) -> list[tuple[str, int]]:
    """The actions of `stage` in 1F1B order: ("F", j) and ("B", j)."""
    warmup = min(stages - 1 - stage, micro)
    order = [("F", j) for j in range(warmup)]
    for i in range(micro - warmup):
        order += [("F", warmup + i), ("B", i)]
    order += [("B", j) for j in range(micro - warmup, micro)]
    return order


def one_f_one_b_graph(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    """The 1F1B iteration graph of a pipelined workload (see the module docstring)."""
    stages, micro = pipeline_stages(workload), micro_batches(workload)
    orders = [[(kind, stage, j) for kind, j in one_f_one_b_order(stage, stages, micro)] for stage in range(stages)]
    return run_pipeline(workload, pricer, settings, orders, stages)


def run_pipeline(workload: Workload, pricer: Pricer, settings: TrainingSettings, orders: list[list[Action]],
                 chunks: int) -> IterationGraph:
    """Lay out every stage's actions in order; F of chunk c waits for chunk c - 1's send of the same
    micro-batch, B of chunk c for chunk c + 1's. `chunks` is the number of model chunks (the
    stages, or stages x virtual stages); the per-iteration tail follows each stage's last action."""
    steps = split_steps(workload)
    builder = StageBuilder(workload, pricer, settings)
    stages, micro = builder.stages, micro_batches(workload)
    if micro < 1:
        raise ConfigError("micro_batches", micro, "must be >= 1")
    overlap = settings.overlap.buckets
    chunked = chunks > stages
    position = [0] * stages
    sends: dict[tuple[str, int, int], int | None] = {}  # (F or B, chunk, micro-batch) -> op the neighbour waits for
    last_backward: dict[int, list[int]] = {}
    remaining = sum(len(order) for order in orders)
    while remaining:
        progressed = False
        for stage in range(stages):
            while position[stage] < len(orders[stage]):
                kind, chunk, j = orders[stage][position[stage]]
                source = chunk - 1 if kind == "F" else chunk + 1
                if 0 <= source < chunks and (kind, source, j) not in sends:
                    break
                wait = sends.get((kind, source, j))
                blocks = steps.forward if kind == "F" else steps.backward
                last = kind == "B" and j == micro - 1
                tag = f"{kind}{j}" + (f"c{chunk}" if chunked else "")
                send, backward = builder.step(blocks, stage, tag, (wait,) if wait is not None else (),
                                              expand=overlap and last, chunk=chunk)
                sends[(kind, chunk, j)] = send
                if last:
                    last_backward.setdefault(stage, []).extend(backward)
                position[stage] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise RuntimeError("pipeline schedule deadlocked; the stage orders are inconsistent")
    add_tail(builder, steps.tail, last_backward, overlap, builder.side_waits())
    return builder.graph
