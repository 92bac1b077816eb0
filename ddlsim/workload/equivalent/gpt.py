"""Equivalent shards of a decoder-only GPT (`model=gpt`): kinds ``gpt_layer``, ``gpt_embedding``
and ``adam_shard``.

- ``gpt_layer``: one tensor-parallel shard of a causal layer; the module is the Megatron layer
  shard of `megatron_layer.py` (the signature's ``causal`` key is 1).
- ``gpt_embedding``: Megatron's vocab-parallel word embedding (this rank's ceil(vocab/tp) rows),
  learned position embeddings and embedding dropout. Shape keys: d_model, vocab, seq_len, tp.
  The data loader yields token ids of this rank's slice (out-of-slice ids are masked to zero
  rows in Megatron; here every id is in range, which moves the same bytes).
- ``adam_shard``: the optimizer step of one pipeline stage's parameters on one rank, as
  `tensors` parameter tensors holding `params` values in all. Shape keys: params, tensors.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ddlsim.compute.equivalent_registry import EquivalentShard, register_equivalent
from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ShardSignature
from ddlsim.workload.equivalent.megatron_layer import DROPOUT_P, build_megatron_layer


@register_equivalent("gpt_layer")
def build_gpt_layer(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    if not signature.shape_dict.get("causal", 0):
        raise ConfigError("signature.shape.causal", signature.shape_dict.get("causal"), "a GPT layer is causal (1)")
    return build_megatron_layer(signature, device)


def _keys(signature: ShardSignature, *names: str) -> list[int]:
    shape = signature.shape_dict
    missing = [name for name in names if name not in shape]
    if missing:
        raise ConfigError("signature.shape", shape, f"a {signature.model_kind} needs {', '.join(missing)}")
    return [shape[name] for name in names]


class GptEmbeddingShard(nn.Module):
    def __init__(self, d_model: int, rows: int, seq_len: int, device: torch.device) -> None:
        super().__init__()
        self.word = nn.Embedding(rows, d_model, device=device)
        self.position = nn.Embedding(seq_len, d_model, device=device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return F.dropout(self.word(tokens) + self.position(positions), DROPOUT_P, self.training)


@register_equivalent("gpt_embedding")
def build_gpt_embedding(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    d_model, vocab, seq_len = _keys(signature, "d_model", "vocab", "seq_len")
    rows = math.ceil(vocab / signature.shape_dict.get("tp", 1))
    module = GptEmbeddingShard(d_model, rows, seq_len, device)
    batch = signature.local_batch
    return EquivalentShard(
        module=module,
        make_batch=lambda: (torch.randint(0, rows, (batch, seq_len), device=device),),
        loss=lambda out: out.float().mean(),
        make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-4),
        precision=signature.precision,
        checkpointing=False,
    )


class ParameterShard(nn.Module):
    """`tensors` parameter tensors of `params` values in all; forward touches each once."""

    def __init__(self, params: int, tensors: int, device: torch.device) -> None:
        super().__init__()
        base, extra = divmod(params, tensors)
        sizes = [base + 1] * extra + [base] * (tensors - extra)
        self.weights = nn.ParameterList([nn.Parameter(torch.zeros(size, device=device)) for size in sizes])

    def forward(self) -> torch.Tensor:
        return torch.stack([weight.sum() for weight in self.weights]).sum()


@register_equivalent("adam_shard")
def build_adam_shard(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    params, tensors = _keys(signature, "params", "tensors")
    if params < 1 or not 1 <= tensors <= params:
        raise ConfigError("signature.shape", signature.shape_dict, "needs params >= tensors >= 1")
    return EquivalentShard(
        module=ParameterShard(params, tensors, device),
        make_batch=lambda: (),
        loss=lambda out: out,
        make_optimizer=lambda parameters: torch.optim.Adam(parameters, lr=1e-4),
        precision=signature.precision,
        checkpointing=False,
    )
