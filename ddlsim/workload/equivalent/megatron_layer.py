"""One tensor-parallel shard of one transformer layer, as a `torch.nn.Module`.

Megatron sharding (Shoeybi et al. 2019): the fused QKV projection and the first MLP matrix are
column-parallel (this rank holds heads/tp heads and ffn/tp columns); the attention output
projection and the second MLP matrix are row-parallel (this rank holds their input rows and a
full, replicated bias); both norms are replicated. The all-reduces that would follow the two
row-parallel matrices are not run here: the network model prices them separately.

Signature shape keys (see `LayerShape.signature_shape`): d_model, heads, kv_heads, ffn, seq_len,
tp, causal, gated, bias, rmsnorm, dropout. The data loader yields random embeddings of shape
(local_batch, seq_len, d_model) that require grad, so the backward pass includes the input
gradient a middle layer computes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ddlsim.compute.equivalent_registry import EquivalentShard, register_equivalent
from ddlsim.core.work import ShardSignature
from ddlsim.workload.transformer.layer import LayerShape

DROPOUT_P = 0.1


class TensorParallelLayerShard(nn.Module):
    """Pre-norm transformer layer holding one tensor-parallel rank's weights."""

    def __init__(self, layer: LayerShape, tp: int, *, checkpointing: bool = False,
                 device: torch.device | None = None) -> None:
        super().__init__()
        layer.check_tp(tp)
        self.layer, self.tp, self.checkpointing = layer, tp, checkpointing
        h, hd = layer.d_model, layer.head_dim
        self.local_heads, self.local_kv_heads = layer.heads // tp, layer.kv_heads // tp
        norm = (lambda: nn.RMSNorm(h, device=device)) if layer.rmsnorm else (lambda: nn.LayerNorm(h, device=device))
        self.attention_norm = norm()
        self.qkv = nn.Linear(h, (self.local_heads + 2 * self.local_kv_heads) * hd, bias=layer.bias, device=device)
        self.attention_out = nn.Linear(self.local_heads * hd, h, bias=layer.bias, device=device)
        self.mlp_norm = norm()
        self.mlp_in = nn.Linear(h, layer.mlp_in_width // tp, bias=layer.bias, device=device)
        self.mlp_out = nn.Linear(layer.ffn_hidden // tp, h, bias=layer.bias, device=device)
        self.dropout_p = DROPOUT_P if layer.dropout else 0.0

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        hd = self.layer.head_dim
        q, k, v = self.qkv(x).split([self.local_heads * hd, self.local_kv_heads * hd, self.local_kv_heads * hd], -1)
        q = q.view(batch, seq, self.local_heads, hd).transpose(1, 2)
        k = k.view(batch, seq, self.local_kv_heads, hd).transpose(1, 2)
        v = v.view(batch, seq, self.local_kv_heads, hd).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.layer.causal,
                                             dropout_p=self.dropout_p if self.training else 0.0,
                                             enable_gqa=self.local_kv_heads != self.local_heads)
        return self.attention_out(out.transpose(1, 2).reshape(batch, seq, self.local_heads * hd))

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.mlp_in(x)
        if self.layer.gated_mlp:
            gate, up = hidden.chunk(2, dim=-1)
            hidden = F.silu(gate) * up
        else:
            hidden = F.gelu(hidden)
        return self.mlp_out(hidden)

    def _layer(self, x: torch.Tensor) -> torch.Tensor:
        x = x + F.dropout(self._attention(self.attention_norm(x)), self.dropout_p, self.training)
        return x + F.dropout(self._mlp(self.mlp_norm(x)), self.dropout_p, self.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checkpointing and torch.is_grad_enabled():
            return checkpoint(self._layer, x, use_reentrant=False)
        return self._layer(x)


@register_equivalent("megatron_layer")
def build_megatron_layer(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    layer, tp = LayerShape.from_signature_shape(signature.shape_dict)
    module = TensorParallelLayerShard(layer, tp, checkpointing=signature.checkpointing, device=device)
    shape = (signature.local_batch, layer.seq_len, layer.d_model)

    def make_batch() -> tuple[torch.Tensor]:
        return (torch.randn(shape, device=device, requires_grad=True),)

    return EquivalentShard(
        module=module,
        make_batch=make_batch,
        loss=lambda out: out.float().mean(),
        make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-4),
        precision=signature.precision,
        checkpointing=signature.checkpointing,
    )
