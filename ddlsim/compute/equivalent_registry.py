"""Equivalent models: real `torch.nn.Module`s with exactly one rank's shard, for profiling.

`build_equivalent_shard(signature, device)` returns an `EquivalentShard` for a `ShardSignature`
produced by a workload, from the builder registered for `signature.model_kind`. The workload
room registers the builders (`ddlsim.workload.equivalent`) with `register_equivalent("kind")`;
`ddlsim.core.catalog` (group ``equivalent``) names the module of each built-in kind, imported
the first time a shard of that kind is built. Building on ``device="meta"`` gives shapes and
parameter counts without allocating memory.

The registry itself does not load torch: the builders' modules (which do) load it when a shard
is first built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddlsim.compute.kinds import KindTable
from ddlsim.core.catalog import OPTIONS
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Precision
from ddlsim.core.work import ShardSignature

if TYPE_CHECKING:
    import torch


@dataclass
class EquivalentShard:
    """One rank's shard as a runnable module, with its data loader, loss and optimizer."""

    module: torch.nn.Module
    make_batch: Callable[[], tuple]
    loss: Callable[[Any], torch.Tensor]
    make_optimizer: Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]
    precision: Precision
    checkpointing: bool

    def step(self, optimizer: torch.optim.Optimizer | None = None) -> torch.Tensor:
        """One forward, backward and (if given) optimizer step on a fresh batch; returns the loss."""
        batch = self.make_batch()
        loss = self.loss(self.module(*batch))
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss.detach()


Builder = Callable[[ShardSignature, "torch.device"], EquivalentShard]
EQUIVALENT_BUILDERS: KindTable[Builder] = KindTable("equivalent model", OPTIONS["equivalent"])


def register_equivalent(kind: str) -> Callable[[Builder], Builder]:
    """Register the builder of equivalent shards of `kind` (a `ShardSignature.model_kind`)."""
    return EQUIVALENT_BUILDERS.register(kind)


def equivalent_kinds() -> list[str]:
    """Every kind with an equivalent model (registered or listed in the catalog)."""
    return EQUIVALENT_BUILDERS.kinds()


def build_equivalent_shard(signature: ShardSignature, device: str | torch.device = "cpu") -> EquivalentShard:
    """The equivalent model of `signature` on `device` (``"meta"`` for shapes only)."""
    import torch

    builder = EQUIVALENT_BUILDERS.get(signature.model_kind)
    if builder is None:
        raise ConfigError("signature.model_kind", signature.model_kind,
                          f"has no equivalent model; choose one of {', '.join(equivalent_kinds())}")
    return builder(signature, torch.device(device))
