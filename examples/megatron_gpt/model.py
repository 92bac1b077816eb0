"""The modules of one pipeline stage of ddlsim's GPT (`model=gpt`) on one tensor-parallel rank.

Megatron-LM's layout: activations sequence-first (s, b, h); a pre-norm causal layer whose
fused QKV and first MLP matrices are column-parallel and whose attention-output and second MLP
matrices are row-parallel (their biases replicated, added after the all-reduce); the
vocabulary-parallel word embedding plus learned positions on the first stage; the final norm
and the output layer (tied to the word embedding) on the last. Attention is Megatron's
non-flash path: Q K^T as a batched GEMM on strided views, the fused scaled causal softmax (or,
where Megatron cannot use it, its fp32 PyTorch path), dropout, probabilities times V, the
context's permute copy; the residual branches end in the fused bias-dropout-add (`fused.py`);
weight gradients accumulate in the GEMM (`linear.py`, Megatron's gradient-accumulation fusion).
Every layer is checkpointed (full recomputation) when `checkpointing` is set.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .fused import (
    bias_dropout_add,
    fused_softmax_available,
    scaled_causal_softmax,
    unfused_causal_softmax,
)
from .linear import AccumulatingLinear, accumulating_linear
from .tensor_parallel import copy_to_tp, gather_from_tp, reduce_from_tp, split_to_tp

DROPOUT = 0.1


class ParallelLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, tp: int, group, dtype: torch.dtype, seq_len: int,
                 micro_batch: int) -> None:
        super().__init__()
        self.group, self.heads, self.head_dim = group, heads // tp, d_model // heads
        self.fused_softmax = fused_softmax_available(seq_len, micro_batch * self.heads)
        if not self.fused_softmax:  # the causal mask, made once as Megatron's data loader does
            self.register_buffer("causal_mask", torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1),
                                 persistent=False)
        self.attention_norm = nn.LayerNorm(d_model, dtype=dtype)
        self.qkv = AccumulatingLinear(d_model, 3 * d_model // tp, dtype=dtype)
        self.attention_out = AccumulatingLinear(d_model // tp, d_model, bias=False, dtype=dtype)
        self.attention_bias = nn.Parameter(torch.zeros(d_model, dtype=dtype))
        self.mlp_norm = nn.LayerNorm(d_model, dtype=dtype)
        self.mlp_in = AccumulatingLinear(d_model, 4 * d_model // tp, dtype=dtype)
        self.mlp_out = AccumulatingLinear(4 * d_model // tp, d_model, bias=False, dtype=dtype)
        self.mlp_bias = nn.Parameter(torch.zeros(d_model, dtype=dtype))

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        seq, batch, _ = x.shape
        qkv = self.qkv(copy_to_tp(x, self.group)).view(seq, batch * self.heads, 3, self.head_dim)
        q, k, v = (part.transpose(0, 1) for part in qkv.unbind(2))  # (b np, s, hn) strided views
        probs = self._softmax(torch.bmm(q, k.transpose(1, 2)), 1.0 / math.sqrt(self.head_dim))
        probs = F.dropout(probs, DROPOUT, self.training)
        context = torch.bmm(probs, v).view(batch, self.heads, seq, self.head_dim).permute(2, 0, 1, 3)
        return self.attention_out(context.reshape(seq, batch, self.heads * self.head_dim))

    def _softmax(self, scores: torch.Tensor, scale: float) -> torch.Tensor:
        """The fused kernel where Megatron can use it (`fused.fused_softmax_available`), else its fp32
        PyTorch path (`fused.unfused_causal_softmax`: five kernels each way)."""
        if self.fused_softmax:
            return scaled_causal_softmax(scores, scale)
        return unfused_causal_softmax(scores, scale, self.causal_mask)

    def _layer(self, x: torch.Tensor) -> torch.Tensor:
        attention = reduce_from_tp(self._attention(self.attention_norm(x)), self.group)
        x = bias_dropout_add(attention, self.attention_bias, x, DROPOUT, self.training)
        hidden = F.gelu(self.mlp_in(copy_to_tp(self.mlp_norm(x), self.group)))
        mlp = reduce_from_tp(self.mlp_out(hidden), self.group)
        return bias_dropout_add(mlp, self.mlp_bias, x, DROPOUT, self.training)

    def forward(self, x: torch.Tensor, checkpointing: bool) -> torch.Tensor:
        if checkpointing:
            return checkpoint(self._layer, x, use_reentrant=False)
        return self._layer(x)


class VocabParallelEmbedding(nn.Module):
    def __init__(self, local_vocab: int, d_model: int, seq_len: int, tp_rank: int, group, dtype) -> None:
        super().__init__()
        self.group, self.start = group, tp_rank * local_vocab
        self.word = nn.Parameter(torch.empty(local_vocab, d_model, dtype=dtype).normal_(0, 0.02))
        self.position = nn.Parameter(torch.empty(seq_len, d_model, dtype=dtype).normal_(0, 0.02))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = tokens.t()  # (s, b)
        outside = (tokens < self.start) | (tokens >= self.start + self.word.shape[0])
        local = (tokens - self.start).masked_fill_(outside, 0)
        words = F.embedding(local, self.word).masked_fill_(outside.unsqueeze(-1), 0.0)
        words = reduce_from_tp(words, self.group)
        return F.dropout(words + self.position.unsqueeze(1), DROPOUT, self.training)


class GptStage(nn.Module):
    """Layers `first_layer` .. of one stage; the embedding on the first stage, the head on the last.

    Between stages the activation travels as this tensor-parallel rank's 1/t chunk (`split_to_tp`,
    `gather_from_tp`) when `scatter_gather` is set.
    """

    def __init__(self, *, d_model: int, heads: int, seq_len: int, layers: int, local_vocab: int, tp: int,
                 tp_rank: int, group, first: bool, last: bool, micro_batch: int, dtype: torch.dtype,
                 checkpointing: bool = True, scatter_gather: bool = True) -> None:
        super().__init__()
        self.group, self.first, self.last, self.checkpointing = group, first, last, checkpointing
        self.scatter_gather = scatter_gather and tp > 1
        self.activation_shape = (seq_len, micro_batch, d_model)
        self.embedding = VocabParallelEmbedding(local_vocab, d_model, seq_len, tp_rank, group, dtype) if first else None
        self.layers = nn.ModuleList(ParallelLayer(d_model, heads, tp, group, dtype, seq_len, micro_batch)
                                    for _ in range(layers))
        self.final_norm = nn.LayerNorm(d_model, dtype=dtype) if last else None
        self.output_weight = None
        if last and not first:  # the last stage's own copy of the tied word embedding
            self.output_weight = nn.Parameter(torch.empty(local_vocab, d_model, dtype=dtype).normal_(0, 0.02))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first:
            x = self.embedding(x)
        elif self.scatter_gather:
            x = gather_from_tp(x, self.activation_shape, self.group)
        for layer in self.layers:
            x = layer(x, self.checkpointing)
        if not self.last:
            return split_to_tp(x, self.group) if self.scatter_gather else x
        weight = self.embedding.word if self.first else self.output_weight
        return accumulating_linear(copy_to_tp(self.final_norm(x), self.group), weight)
