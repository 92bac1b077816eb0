"""One tensor-parallel shard of a transformer's output layer and loss (kind ``"lm_head"``).

Megatron's vocab-parallel output layer: the final norm (replicated), then a projection onto this
rank's vocab/tp slice of the vocabulary, then the cross-entropy of the local logits in fp32. The
three small all-reduces of the vocab-parallel cross-entropy are priced by the network model, not
run here. Signature shape keys: d_model, vocab, seq_len, tp.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ddlsim.compute.equivalent_registry import EquivalentShard, register_equivalent
from ddlsim.core.work import ShardSignature
from ddlsim.workload.shard_signatures import lm_head_shape, local_vocab


class VocabParallelHead(nn.Module):
    def __init__(self, d_model: int, rows: int, device: torch.device) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, device=device)
        self.projection = nn.Linear(d_model, rows, bias=False, device=device)

    def forward(self, hidden: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.projection(self.norm(hidden)), targets


@register_equivalent("lm_head")
def build_lm_head(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    d_model, vocab, seq_len, tp = lm_head_shape(signature)
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
