"""Tiny user programs for the capture tests (the examples/ directory has the real ones)."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.fsdp import fully_shard
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
