"""`torch.distributed.pipelining` schedules: one captured rank per stage, sends matched to receives,
the schedule's own order of chunks (GPipe, 1F1B, interleaved 1F1B with two stages per rank)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

import ddlsim

MICRO_BATCHES, WIDTH = 4, 64


def pipeline(kind: str):
    def build(mesh):
        ranks, rank = mesh.size(0), mesh.get_local_rank("pp")
        virtual = 2 if kind == "interleaved" else 1
        stages = []
        for index in (rank + v * ranks for v in range(virtual)):
            module = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU())
            stages.append(PipelineStage(module, index, ranks * virtual, torch.device("cpu"),
                                        input_args=(torch.empty(2, WIDTH, requires_grad=index > 0),),
                                        output_args=torch.empty(2, WIDTH, requires_grad=True), group=mesh.get_group()))

        def loss(out, target):
            return out.sum()

        if kind == "interleaved":
            schedule = ScheduleInterleaved1F1B(stages, MICRO_BATCHES, loss_fn=loss)
        else:
            schedule = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[kind](stages[0], MICRO_BATCHES, loss_fn=loss)
        optimizer = torch.optim.SGD([p for stage in stages for p in stage.submod.parameters()], lr=0.1)
        batch = torch.randn(2 * MICRO_BATCHES, WIDTH)

        def step():
            target = {"target": batch} if rank == ranks - 1 or kind == "interleaved" else {}
            schedule.step(*((batch,) if rank == 0 else ()), **target)
            optimizer.step()
            optimizer.zero_grad()

        return step

    return build


@pytest.mark.parametrize("kind", ["gpipe", "1f1b", "interleaved"])
def test_pipeline_schedules_capture_and_match_sends(kind):
    program = ddlsim.capture(pipeline(kind), (2,), ("pp",))
    assert program.ranks == (0, 1) and program.stages == (0, 1)
    p2p = program.events[program.events.op == "send_recv"]
    boundaries = 3 if kind == "interleaved" else 1  # stage boundaries a micro-batch crosses each way
    assert len(p2p[~p2p.receives.astype(bool)]) == len(p2p[p2p.receives.astype(bool)]) == 2 * boundaries * MICRO_BATCHES
    result = ddlsim.simulate(program, fabric="superpod")
    assert {op.stage for op in result.graph.ops} == {0, 1}
    assert result.iteration_time_s > result.compute_time_s > 0
