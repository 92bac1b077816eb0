"""ddlsim's own GPT (`model=gpt`) as a PyTorch training program: Megatron-style tensor
parallelism, 1F1B pipelining with `torch.distributed.pipelining`, data parallelism, full
activation checkpointing, fp16.

    build = make_build(d_model=3072, heads=32, layers=30, seq_len=2048, micro_batch=8, global_batch=512)
    program = ddlsim.capture(build, (pp, dp, tp), ("pp", "dp", "tp"))

The mesh follows Megatron's rank order (tensor parallel fastest, then data, then pipeline
stage). One step: the micro-batches through the 1F1B schedule (with one stage: gradient
accumulation, F B F B ...); the data-parallel all-reduce of the stage's gradients in one piece, from a
contiguous gradient buffer (no bucketing, as in the measured Megatron-DeepSpeed runs); the
all-reduce of the tied word embedding's gradient between the first and last stage; the
found-inf and gradient-norm all-reduces (over the pipeline group with several stages, else the
tensor-parallel group, as `model=gpt` models them); then Megatron's fp16 optimizer: one fused Adam
over fp32 master weights and moments.
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

from .fused import mixed_precision_adam
from .model import GptStage
from .tensor_parallel import vocab_parallel_cross_entropy

GPT2_VOCAB = 50257
VOCAB_MULTIPLE = 128


def padded_vocab(vocab: int, tp: int, multiple: int = VOCAB_MULTIPLE) -> int:
    return math.ceil(vocab / (multiple * tp)) * multiple * tp


class MegatronAdam(torch.optim.Optimizer):
    """Megatron's fp16 optimizer: Megatron's found-inf check and gradient-norm all-reduces (one fp32
    each), then one fused Adam kernel over fp32 master weights and moments that writes the fp16
    weights back (`fused.mixed_precision_adam`), as Megatron-LM's FP16 optimizer with Apex's
    FusedAdam runs it, then zeroes the gradients. `grads` is the flat fp16 gradient buffer of `params`."""

    def __init__(self, params, grads: torch.Tensor, sync_group, lr: float = 1e-4) -> None:
        super().__init__(params, {"lr": lr})
        self.params, self.grads, self.sync_group, self.lr = params, grads, sync_group, lr
        self.master = torch.cat([p.detach().reshape(-1).float() for p in params])
        self.exp_avg, self.exp_avg_sq = torch.zeros_like(self.master), torch.zeros_like(self.master)
        self.steps = 0

    @torch.no_grad()
    def step(self, closure=None) -> None:
        if dist.get_world_size(self.sync_group) > 1:
            found_inf = torch.zeros(1)
            dist.all_reduce(found_inf, op=dist.ReduceOp.MAX, group=self.sync_group)
            norm = torch.stack(torch._foreach_norm([p.grad for p in self.params])).float().pow(2).sum().view(1)
            dist.all_reduce(norm, group=self.sync_group)
        self.steps += 1
        mixed_precision_adam(self.params, self.grads, self.master, self.exp_avg, self.exp_avg_sq, self.steps,
                             self.lr)
        self.grads.zero_()  # Megatron's zero_grad: the gradient buffer starts the next step at zero


def _tied_embedding_group(mesh, pp: int):
    """The group of this rank's first-stage and last-stage peers (same data and tensor coordinates)."""
    stage_ranks = mesh.size() // pp
    mine = None
    for offset in range(stage_ranks):  # every rank creates every group, in the same order
        group = dist.new_group([offset, (pp - 1) * stage_ranks + offset])
        if dist.get_rank() % stage_ranks == offset:
            mine = group
    return mine


def build(mesh, *, d_model: int = 1024, heads: int = 16, layers: int = 4, seq_len: int = 256,
          vocab: int = GPT2_VOCAB, micro_batch: int = 1, global_batch: int = 0, checkpointing: bool = True,
          dtype: torch.dtype = torch.float16):
    """``build(mesh) -> step`` for a mesh named ("pp", "dp", "tp") (see the module docstring)."""
    pp, dp, tp = (mesh.size(mesh.mesh_dim_names.index(name)) for name in ("pp", "dp", "tp"))
    stage, tp_rank = mesh.get_local_rank("pp"), mesh.get_local_rank("tp")
    tp_group, dp_group = mesh["tp"].get_group(), mesh["dp"].get_group()
    global_batch = global_batch or dp * micro_batch
    micro_batches = global_batch // (dp * micro_batch)
    local_vocab = padded_vocab(vocab, tp) // tp
    first, last = stage == 0, stage == pp - 1
    model = GptStage(d_model=d_model, heads=heads, seq_len=seq_len, layers=layers // pp, local_vocab=local_vocab,
                     tp=tp, tp_rank=tp_rank, group=tp_group, first=first, last=last, micro_batch=micro_batch,
                     dtype=dtype, checkpointing=checkpointing)
    params = list(model.parameters())
    buffer = torch.zeros(sum(p.numel() for p in params), dtype=dtype)
    offset = 0
    for p in params:  # gradients live in one contiguous buffer, all-reduced in one piece
        p.grad = buffer[offset: offset + p.numel()].view_as(p)
        offset += p.numel()
    tied_group = _tied_embedding_group(mesh, pp) if pp > 1 else None
    if not (first or last):
        tied_group = None  # middle stages hold no copy of the word embedding
    sync_group = mesh["pp"].get_group() if pp > 1 else tp_group
    optimizer = MegatronAdam(params, buffer, sync_group)  # its fp32 states are created at setup, as Megatron does
    tied = model.embedding.word if first else model.output_weight

    def loss_fn(logits, target):  # logits (s, b, local vocab), target (b, s)
        return vocab_parallel_cross_entropy(logits, target.t().contiguous(), tp_rank * local_vocab, tp_group).mean()

    tokens = torch.randint(0, vocab, (micro_batch * micro_batches, seq_len))
    chunk = (micro_batch * seq_len * d_model // tp,) if tp > 1 else (seq_len, micro_batch, d_model)
    example_in = (torch.randint(0, vocab, (micro_batch, seq_len)) if first
                  else torch.empty(chunk, dtype=dtype, requires_grad=True))
    example_out = torch.empty((seq_len, micro_batch, local_vocab) if last else chunk, dtype=dtype,
                              requires_grad=True)
    pipeline_stage = PipelineStage(model, stage, pp, torch.device("cpu"), input_args=(example_in,),
                                   output_args=example_out, group=mesh["pp"].get_group())
    # Megatron scales the loss, not the gradients, and keeps no logits past the loss
    schedule = Schedule1F1B(pipeline_stage, micro_batches, loss_fn=loss_fn, scale_grads=False)

    def step():
        schedule.step(*((tokens,) if first else ()), **({"target": tokens} if last else {}), return_outputs=False)
        if dp > 1:
            dist.all_reduce(buffer, group=dp_group)
        if tied_group is not None:
            dist.all_reduce(tied.grad, group=tied_group)
        optimizer.step()

    return step


def make_build(**settings):
    """`build` with its GPT settings bound, for ``ddlsim.capture(make_build(...), ...)``."""
    return partial(build, **settings)
