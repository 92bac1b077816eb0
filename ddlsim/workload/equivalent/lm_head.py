"""One tensor-parallel shard of a transformer's output layer and loss (kind ``"lm_head"``).

Megatron's vocab-parallel output layer: the final norm (replicated), then a projection onto this
rank's vocab/tp slice of the vocabulary, then the cross-entropy of the local logits in fp32. The
three small all-reduces of the vocab-parallel cross-entropy are priced by the network model, not
run here. Signature shape keys: d_model, vocab, seq_len, tp.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ddlsim.errors import ConfigError
from ddlsim.types import ShardSignature
from ddlsim.workload.equivalent import EquivalentShard, register_equivalent

LOGIT_BYTES = 4


def _shape(signature: ShardSignature) -> tuple[int, int, int, int]:
    shape = signature.shape_dict
    try:
        return shape["d_model"], shape["vocab"], shape["seq_len"], shape.get("tp", 1)
    except KeyError as missing:
        raise ConfigError("signature.shape", shape, f"an output layer needs {missing}") from None


def lm_head_signature(d_model: int, vocab: int, seq_len: int, tp: int, local_batch: int,
                      precision: str = "fp16") -> ShardSignature:
    shape = {"d_model": d_model, "vocab": vocab, "seq_len": seq_len, "tp": tp}
    return ShardSignature("lm_head", tuple(shape.items()), local_batch, precision, False)


def local_vocab(vocab: int, tp: int) -> int:
    """Rows of the vocabulary one rank holds (Megatron pads the vocabulary to a multiple of tp)."""
    return math.ceil(vocab / tp)


def lm_head_flop(signature: ShardSignature) -> float:
    d_model, vocab, seq_len, tp = _shape(signature)
    return 2.0 * signature.local_batch * seq_len * d_model * local_vocab(vocab, tp)


def lm_head_memory_bytes(signature: ShardSignature) -> float:
    d_model, vocab, seq_len, tp = _shape(signature)
    rows = local_vocab(vocab, tp)
    return 2.0 * d_model * rows + LOGIT_BYTES * signature.local_batch * seq_len * rows


class VocabParallelHead(nn.Module):
    def __init__(self, d_model: int, rows: int, device: torch.device) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, device=device)
        self.projection = nn.Linear(d_model, rows, bias=False, device=device)

    def forward(self, hidden: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.projection(self.norm(hidden)), targets


@register_equivalent("lm_head")
def build_lm_head(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    d_model, vocab, seq_len, tp = _shape(signature)
    rows = local_vocab(vocab, tp)
    module = VocabParallelHead(d_model, rows, device)
    batch = signature.local_batch

    def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
        hidden = torch.randn(batch, seq_len, d_model, device=device, requires_grad=True)
        return hidden, torch.randint(0, rows, (batch, seq_len), device=device)

    def loss(out: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        logits, targets = out
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())

    return EquivalentShard(module=module, make_batch=make_batch, loss=loss,
                           make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-4),
                           precision=signature.precision, checkpointing=False)
