"""Equivalent models: real `torch.nn.Module`s with exactly one rank's shard, for profiling.

`build_equivalent_shard(signature, device)` returns an `EquivalentShard` for a
`ShardSignature` produced by a workload. It dispatches on `signature.model_kind`:

- ``"megatron_layer"``: one tensor-parallel shard of one transformer layer
  (`ddlsim.workload.equivalent.megatron_layer`);
- ``"dlrm_shard"``: one GPU's DLRM shard, torchrec embedding bags plus the MLPs and the
  interaction (`ddlsim.workload.equivalent.dlrm_shard`).

Other rooms add kinds with `register_equivalent("kind")`. Building on ``device="meta"`` gives
shapes and parameter counts without allocating memory.

The registry itself does not load torch: the built-in kinds' modules (which do) are imported by
`build_equivalent_shard` and `equivalent_kinds`, the first time a shard is built or listed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Precision
from ddlsim.core.work import ShardSignature

if TYPE_CHECKING:
    import torch

_BUILTIN_KINDS = ("dense_models", "dlrm_shard", "gpt", "lm_head", "megatron_layer", "ncf_shard")


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
_BUILDERS: dict[str, Builder] = {}


def register_equivalent(kind: str) -> Callable[[Builder], Builder]:
    """Register the builder of equivalent shards of `kind` (a `ShardSignature.model_kind`)."""

    def decorator(builder: Builder) -> Builder:
        if kind in _BUILDERS and _BUILDERS[kind] is not builder:
            raise TypeError(f"equivalent model kind {kind!r} is registered twice")
        _BUILDERS[kind] = builder
        return builder

    return decorator


def _load_builtin_kinds() -> None:
    for module in _BUILTIN_KINDS:  # each registers its kinds when first imported
        importlib.import_module(f"{__name__}.{module}")


def equivalent_kinds() -> list[str]:
    _load_builtin_kinds()
    return sorted(_BUILDERS)


def build_equivalent_shard(signature: ShardSignature, device: str | torch.device = "cpu") -> EquivalentShard:
    """The equivalent model of `signature` on `device` (``"meta"`` for shapes only)."""
    import torch

    _load_builtin_kinds()
    builder = _BUILDERS.get(signature.model_kind)
    if builder is None:
        raise ConfigError("signature.model_kind", signature.model_kind,
                          f"has no equivalent model; choose one of {', '.join(equivalent_kinds())}")
    return builder(signature, torch.device(device))


__all__ = ["EquivalentShard", "build_equivalent_shard", "equivalent_kinds", "register_equivalent"]
