"""Tiny user programs for the capture tests (the examples/ directory has the real ones)."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

IN, HIDDEN, BATCH, LAYERS = 64, 256, 8, 3


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(IN, HIDDEN), nn.Linear(HIDDEN, IN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def fsdp_tp_mlp(mesh):
    """LAYERS MLPs, Megatron TP over ``tp`` and FSDP2 over ``dp``; fp32."""
    model = nn.Sequential(*[Mlp() for _ in range(LAYERS)])
    for block in model:
        parallelize_module(block, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
        fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    optimizer = torch.optim.Adam(model.parameters(), foreach=True)

    def step() -> None:
        model(torch.randn(BATCH, IN)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


MICRO_BATCHES, WIDTH = 4, 64


def pipeline(kind: str, micro_batches: int = MICRO_BATCHES, stage_module=None):
    """A `kind` schedule (gpipe, 1f1b, interleaved) over the ``pp`` mesh; each stage a Linear and
    ReLU, or ``stage_module()``."""

    def build(mesh):
        ranks, rank = mesh.size(0), mesh.get_local_rank("pp")
        virtual = 2 if kind == "interleaved" else 1
        stages = []
        for index in (rank + v * ranks for v in range(virtual)):
            module = stage_module() if stage_module else nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU())
            stages.append(PipelineStage(module, index, ranks * virtual, torch.device("cpu"),
                                        input_args=(torch.empty(2, WIDTH, requires_grad=index > 0),),
                                        output_args=torch.empty(2, WIDTH, requires_grad=True), group=mesh.get_group()))

        def loss(out, target):
            return out.sum()

        if kind == "interleaved":
            schedule = ScheduleInterleaved1F1B(stages, micro_batches, loss_fn=loss)
        else:
            schedule = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[kind](stages[0], micro_batches, loss_fn=loss)
        optimizer = torch.optim.SGD([p for stage in stages for p in stage.submod.parameters()], lr=0.1)
        batch = torch.randn(2 * micro_batches, WIDTH)

        def step():
            target = {"target": batch} if rank == ranks - 1 or kind == "interleaved" else {}
            schedule.step(*((batch,) if rank == 0 else ()), **target)
            optimizer.step()
            optimizer.zero_grad()

        return step

    return build
