"""Megatron's two fused kernels as PyTorch custom ops (one kernel each, with fake implementations).

- ``megatron::scaled_causal_softmax(scores, scale)``: scale, causal mask and softmax in one pass
  (Megatron's ``scaled_upper_triang_masked_softmax``), and its backward;
- ``megatron::bias_dropout_add(x, bias, residual, mask, scale)``: ``residual + dropout(x + bias)``
  after the dropout mask is drawn (Megatron's jit-fused bias-dropout-add: two launches).

On real tensors they run as plain PyTorch; under a capture the fake implementations give the
shapes, and each records as one kernel reading its inputs and writing its outputs.

Megatron uses its fused softmax only where the kernel supports the shape
(`fused_softmax_available`: 16 < s <= 2048, s and batch x local heads multiples of 4); elsewhere
it runs the softmax in fp32 with PyTorch ops (`unfused_causal_softmax`).
"""

from __future__ import annotations

import torch

FUSED_SOFTMAX_MAX_SEQ = 2048


def fused_softmax_available(seq: int, batch_heads: int) -> bool:
    """Megatron's availability rule for the fused upper-triangular softmax kernel (fp16)."""
    return 16 < seq <= FUSED_SOFTMAX_MAX_SEQ and seq % 4 == 0 and batch_heads % 4 == 0


def unfused_causal_softmax(scores: torch.Tensor, scale: float, mask: torch.Tensor) -> torch.Tensor:
    """Megatron's fallback (FusedScaleMaskSoftmax.forward_torch_softmax) as five kernels, in the
    order `ddlsim.workload.kernels.megatron` counts them: scale, cast to fp32, mask (`mask`: the
    s x s causal mask, True above the diagonal), softmax, cast back."""
    probs = torch.softmax((scores * scale).float().masked_fill(mask, -10000.0), dim=-1)
    return probs.to(scores.dtype)


@torch.library.custom_op("megatron::scaled_causal_softmax", mutates_args=())
def scaled_causal_softmax(scores: torch.Tensor, scale: float) -> torch.Tensor:
    seq_q, seq_k = scores.shape[-2:]
    mask = torch.ones(seq_q, seq_k, dtype=torch.bool, device=scores.device).triu(1)
    return torch.softmax((scores.float() * scale).masked_fill(mask, float("-inf")), dim=-1).to(scores.dtype)


@scaled_causal_softmax.register_fake
def _(scores: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(scores)


@torch.library.custom_op("megatron::scaled_causal_softmax_backward", mutates_args=())
def scaled_causal_softmax_backward(grad: torch.Tensor, probs: torch.Tensor, scale: float) -> torch.Tensor:
    grad32, probs32 = grad.float(), probs.float()
    return (scale * probs32 * (grad32 - (grad32 * probs32).sum(-1, keepdim=True))).to(grad.dtype)


@scaled_causal_softmax_backward.register_fake
def _(grad: torch.Tensor, probs: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(grad)


def _softmax_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(output)
    ctx.set_materialize_grads(False)
    ctx.scale = inputs[1]


def _softmax_backward(ctx, grad):
    (probs,) = ctx.saved_tensors
    return scaled_causal_softmax_backward(grad, probs, ctx.scale), None


scaled_causal_softmax.register_autograd(_softmax_backward, setup_context=_softmax_context)


@torch.library.custom_op("megatron::bias_dropout_add", mutates_args=())
def _bias_dropout_add(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, mask: torch.Tensor,
                      scale: float) -> torch.Tensor:
    return residual + (x + bias) * mask * scale


@_bias_dropout_add.register_fake
def _(x, bias, residual, mask, scale):
    return torch.empty_like(x)


def _bda_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[3])
    ctx.scale = inputs[4]


def _bda_backward(ctx, grad):
    (mask,) = ctx.saved_tensors
    grad_x = torch.ops.aten.native_dropout_backward(grad, mask, ctx.scale)
    return grad_x, grad_x.sum(dim=tuple(range(grad_x.dim() - 1))), grad, None, None


_bias_dropout_add.register_autograd(_bda_backward, setup_context=_bda_context)


def bias_dropout_add(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, p: float,
                     training: bool) -> torch.Tensor:
    """``residual + dropout(x + bias)``: the random mask, then one fused kernel (as Megatron's jit)."""
    if not training or p == 0:
        return _bias_dropout_add(x, bias, residual, torch.ones_like(x, dtype=torch.bool), 1.0)
    mask = torch.empty_like(x, dtype=torch.bool).bernoulli_(1.0 - p)
    return _bias_dropout_add(x, bias, residual, mask, 1.0 / (1.0 - p))


@torch.library.custom_op("megatron::mixed_precision_adam",
                         mutates_args=("params", "master", "exp_avg", "exp_avg_sq"))
def mixed_precision_adam(params: list[torch.Tensor], grads: torch.Tensor, master: torch.Tensor,
                         exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, step: int, lr: float) -> None:
    """Megatron's fp16 optimizer step as one multi-tensor kernel (Apex FusedAdam over fp32 master
    weights): read the fp16 gradients (one flat buffer), update the fp32 master weights and two
    moments, write the fp16 weights. `master`, `exp_avg`, `exp_avg_sq` are flat fp32 buffers."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    grad = grads.float()
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = (exp_avg_sq / (1 - beta2 ** step)).sqrt_().add_(eps)
    master.addcdiv_(exp_avg, denom, value=-lr / (1 - beta1 ** step))
    offset = 0
    for param in params:
        param.copy_(master[offset: offset + param.numel()].view_as(param))
        offset += param.numel()


@mixed_precision_adam.register_fake
def _(params, grads, master, exp_avg, exp_avg_sq, step, lr) -> None:
    return None
