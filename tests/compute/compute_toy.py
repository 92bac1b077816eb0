"""A small module of the tests' own, shaped like the workload's EquivalentShard contract."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from ddlsim.core.types import Precision


class TwoLinear(torch.nn.Module):
    """x -> x + W2 gelu(W1 x), optionally under activation checkpointing."""

    def __init__(self, width: int, hidden: int, checkpointing: bool, reentrant: bool = False) -> None:
        super().__init__()
        self.first = torch.nn.Linear(width, hidden, bias=False)
        self.second = torch.nn.Linear(hidden, width, bias=False)
        self.checkpointing, self.reentrant = checkpointing, reentrant

    def block(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.second(torch.nn.functional.gelu(self.first(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checkpointing and torch.is_grad_enabled():
            return checkpoint(self.block, x, use_reentrant=self.reentrant)
        return self.block(x)


@dataclass
class ToyShard:
    module: torch.nn.Module
    make_batch: Callable[[], tuple]
    loss: Callable[[Any], torch.Tensor]
    make_optimizer: Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]
    precision: Precision
    checkpointing: bool


def toy_shard(batch: int = 4, width: int = 64, hidden: int = 256, tokens: int = 32, *, checkpointing: bool = False,
              reentrant: bool = False, device: str = "cpu") -> ToyShard:
    torch.manual_seed(0)
    module = TwoLinear(width, hidden, checkpointing, reentrant).to(device)

    def make_batch() -> tuple[torch.Tensor]:
        return (torch.randn(batch, tokens, width, device=device, requires_grad=True),)

    return ToyShard(module, make_batch, lambda out: out.float().mean(), lambda params: torch.optim.Adam(params),
                    Precision.FP16, checkpointing)


def toy_flop(batch: int, width: int, hidden: int, tokens: int) -> float:
    """Forward FLOPs of the two matrix products (2 per multiply-add)."""
    return 2.0 * 2 * batch * tokens * width * hidden
