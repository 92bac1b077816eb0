"""A linear layer whose weight gradient is accumulated straight into the gradient buffer.

Megatron-LM's ``gradient_accumulation_fusion``: the weight-gradient GEMM of every micro-batch
adds into the parameter's gradient (one ``addmm_``) instead of producing a new tensor that is
then added, so a GEMM costs two backward kernels (input gradient, weight gradient). Biases go
through autograd as usual. The weight's ``.grad`` must exist before backward (the program points
it into its contiguous gradient buffer).
"""

from __future__ import annotations

import math

import torch
from torch import nn


class _LinearAccumulating(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x)
        ctx.weight = weight  # the parameter itself (checkpointing would hand back a detached copy)
        ctx.has_bias = bias is not None
        return torch.nn.functional.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        (x,), weight = ctx.saved_tensors, ctx.weight
        grad_2d = grad.reshape(-1, grad.shape[-1])
        grad_input = grad_2d.mm(weight).view(*grad.shape[:-1], weight.shape[1])
        weight.grad.addmm_(grad_2d.t(), x.reshape(-1, x.shape[-1]))
        grad_bias = grad_2d.sum(0) if ctx.has_bias else None
        return grad_input, None, grad_bias


class AccumulatingLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype: torch.dtype | None = None,
                 weight: nn.Parameter | None = None) -> None:
        super().__init__()
        self.weight = weight if weight is not None else nn.Parameter(torch.empty(out_features, in_features,
                                                                                  dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype)) if bias else None
        if weight is None:
            nn.init.normal_(self.weight, std=1.0 / math.sqrt(in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight.grad is None:
            self.weight.grad = torch.zeros_like(self.weight)
        return _LinearAccumulating.apply(x, self.weight, self.bias)


def accumulating_linear(x: torch.Tensor, weight: nn.Parameter) -> torch.Tensor:
    """``x @ weight.T`` with the weight gradient accumulated into ``weight.grad``."""
    if weight.grad is None:
        weight.grad = torch.zeros_like(weight)
    return _LinearAccumulating.apply(x, weight, None)
