"""Megatron-LM's tensor-parallel building blocks, written with `torch.distributed` calls.

- `copy_to_tp` (Megatron's f): identity forward, all-reduce of the gradient backward;
- `reduce_from_tp` (g): all-reduce forward, identity backward;
- `split_to_tp` / `gather_from_tp`: the scatter-gather of activations between pipeline stages
  (each tensor-parallel rank sends 1/t of the activation; the receiver all-gathers it), in
  both directions;
- `vocab_parallel_cross_entropy`: the loss over a vocabulary split across the tensor-parallel
  ranks, with its three all-reduces (maximum logit, target logit, sum of exponentials) of one
  fp32 value per token.

Every call blocks the computation that follows, as Megatron's do.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class _CopyToTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _ReduceFromTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        dist.all_reduce(x, group=group)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _chunk(flat: torch.Tensor, group) -> torch.Tensor:
    size = flat.numel() // dist.get_world_size(group)
    return flat.narrow(0, dist.get_rank(group) * size, size)


def _all_gather(chunk: torch.Tensor, group) -> torch.Tensor:
    out = chunk.new_empty(chunk.numel() * dist.get_world_size(group))
    dist.all_gather_into_tensor(out, chunk.contiguous(), group=group)
    return out


class _SplitToTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.shape = group, x.shape
        return _chunk(x.reshape(-1), group).clone()

    @staticmethod
    def backward(ctx, grad):
        return _all_gather(grad, ctx.group).view(ctx.shape), None


class _GatherFromTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, chunk, shape, group):
        ctx.group = group
        return _all_gather(chunk, group).view(shape)

    @staticmethod
    def backward(ctx, grad):
        return _chunk(grad.reshape(-1), ctx.group).clone(), None, None


def copy_to_tp(x, group):
    return _CopyToTP.apply(x, group) if dist.get_world_size(group) > 1 else x


def reduce_from_tp(x, group):
    return _ReduceFromTP.apply(x, group) if dist.get_world_size(group) > 1 else x


def split_to_tp(x, group):
    return _SplitToTP.apply(x, group)


def gather_from_tp(chunk, shape, group):
    return _GatherFromTP.apply(chunk, shape, group)


def _all_reduce(x, group, op=dist.ReduceOp.SUM):
    if dist.get_world_size(group) > 1:
        dist.all_reduce(x, op=op, group=group)


class _VocabParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, vocab_start, group):
        logits = logits.float()
        logits_max = logits.max(dim=-1)[0]
        _all_reduce(logits_max, group, dist.ReduceOp.MAX)
        logits.sub_(logits_max.unsqueeze(-1))
        local_vocab = logits.shape[-1]
        outside = (target < vocab_start) | (target >= vocab_start + local_vocab)
        local_target = (target - vocab_start).masked_fill_(outside, 0).view(-1)
        logits_2d = logits.view(-1, local_vocab)
        rows = torch.arange(logits_2d.shape[0], device=logits.device)
        predicted = logits_2d[rows, local_target].masked_fill_(outside.view(-1), 0.0)
        _all_reduce(predicted, group)
        exp_logits = logits.exp_()
        sum_exp = exp_logits.sum(dim=-1)
        _all_reduce(sum_exp, group)
        loss = torch.log(sum_exp).view(-1) - predicted
        exp_logits.div_(sum_exp.unsqueeze(-1))
        ctx.save_for_backward(exp_logits, outside, local_target)
        return loss.view(target.shape)

    @staticmethod
    def backward(ctx, grad):
        softmax, outside, local_target = ctx.saved_tensors
        grad_2d = softmax.view(-1, softmax.shape[-1])
        rows = torch.arange(grad_2d.shape[0], device=grad_2d.device)
        grad_2d[rows, local_target] -= 1.0 - outside.view(-1).float()
        softmax.mul_(grad.unsqueeze(-1))
        return softmax, None, None, None


def vocab_parallel_cross_entropy(logits, target, vocab_start, group):
    return _VocabParallelCrossEntropy.apply(logits, target, vocab_start, group)
