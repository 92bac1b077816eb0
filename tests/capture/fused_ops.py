"""The fused kernels a production training stack runs, as PyTorch custom ops, for the
capture-vs-analytic compute test (`compute_cases.py`).

transformers' modules are written for clarity, not speed: an eager RMSNorm is eight kernels and
keeps an fp32 copy of its input for backward, SwiGLU keeps the activation's output, the loss
keeps fp32 log-probabilities of every logit. Megatron-Core with Transformer Engine (and
torchtitan's compiled blocks) run one kernel for each, keeping only what that kernel's backward
needs. Each op here is one such kernel: it reads its arguments and writes its results once, and
its backward is another op of the same kind:

- ``rms_norm(x, weight, eps) -> (y, rstd)``: keeps x and the fp32 reciprocal RMS per token;
- ``swiglu(gate, up) -> silu(gate) * up``: keeps gate and up, recomputes silu in backward
  (``swiglu_packed`` takes them as one [gate | up] GEMM output and returns its gradient so, as
  Megatron's grouped experts do);
- ``cross_entropy(logits, labels) -> (loss, lse)``: an online softmax over the 16-bit logits
  (labels -100 ignored, mean over the rest); keeps the logits and the log-sum-exp, and its
  backward writes the logits' gradient in 16 bits.

On real tensors they compute what they say in plain PyTorch; in a capture the fake
implementations give the shapes. `productionize(model)` swaps them into a transformers model.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

IGNORE = -100


# ---- RMSNorm ----------------------------------------------------------------------------------
@torch.library.custom_op("ddlsim_test::rms_norm", mutates_args=())
def rms_norm(x: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    x32 = x.float()
    rstd = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return ((x32 * rstd) * weight.float()).to(x.dtype), rstd.squeeze(-1)


@rms_norm.register_fake
def _(x, weight, eps):
    return torch.empty_like(x), x.new_empty(x.shape[:-1], dtype=torch.float32)


@torch.library.custom_op("ddlsim_test::rms_norm_backward", mutates_args=())
def rms_norm_backward(grad: Tensor, x: Tensor, rstd: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
    normed = x.float() * rstd.unsqueeze(-1)
    grad_normed = grad.float() * weight.float()
    grad_x = rstd.unsqueeze(-1) * (grad_normed - normed * (grad_normed * normed).mean(-1, keepdim=True))
    grad_weight = (grad.float() * normed).reshape(-1, x.shape[-1]).sum(0)
    return grad_x.to(x.dtype), grad_weight.to(weight.dtype)


@rms_norm_backward.register_fake
def _(grad, x, rstd, weight):
    return torch.empty_like(x), torch.empty_like(weight)


def _rms_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0], output[1], inputs[1])
    ctx.set_materialize_grads(False)  # no zero gradient for rstd


def _rms_backward(ctx, grad, _grad_rstd):
    x, rstd, weight = ctx.saved_tensors
    grad_x, grad_weight = rms_norm_backward(grad, x, rstd, weight)
    return grad_x, grad_weight, None


rms_norm.register_autograd(_rms_backward, setup_context=_rms_setup)


# ---- SwiGLU -----------------------------------------------------------------------------------
@torch.library.custom_op("ddlsim_test::swiglu", mutates_args=())
def swiglu(gate: Tensor, up: Tensor) -> Tensor:
    return F.silu(gate) * up


@swiglu.register_fake
def _(gate, up):
    return gate.new_empty(gate.shape)


@torch.library.custom_op("ddlsim_test::swiglu_backward", mutates_args=())
def swiglu_backward(grad: Tensor, gate: Tensor, up: Tensor) -> tuple[Tensor, Tensor]:
    sigmoid = torch.sigmoid(gate.float())
    silu = gate.float() * sigmoid
    grad_gate = grad.float() * up.float() * sigmoid * (1 + gate.float() * (1 - sigmoid))
    return grad_gate.to(gate.dtype), (grad.float() * silu).to(up.dtype)


@swiglu_backward.register_fake
def _(grad, gate, up):
    return gate.new_empty(gate.shape), up.new_empty(up.shape)


def _swiglu_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _swiglu_backward(ctx, grad):
    return swiglu_backward(grad, *ctx.saved_tensors)


swiglu.register_autograd(_swiglu_backward, setup_context=_swiglu_setup)


@torch.library.custom_op("ddlsim_test::swiglu_packed", mutates_args=())
def swiglu_packed(gate_up: Tensor) -> Tensor:
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


@swiglu_packed.register_fake
def _(gate_up):
    return gate_up.new_empty((*gate_up.shape[:-1], gate_up.shape[-1] // 2))


@torch.library.custom_op("ddlsim_test::swiglu_packed_backward", mutates_args=())
def swiglu_packed_backward(grad: Tensor, gate_up: Tensor) -> Tensor:
    gate, up = gate_up.chunk(2, dim=-1)
    return torch.cat(swiglu_backward(grad, gate.contiguous(), up.contiguous()), dim=-1)


@swiglu_packed_backward.register_fake
def _(grad, gate_up):
    return torch.empty_like(gate_up)


def _packed_backward(ctx, grad):
    return swiglu_packed_backward(grad, *ctx.saved_tensors)


swiglu_packed.register_autograd(_packed_backward, setup_context=_swiglu_setup)


# ---- cross-entropy ------------------------------------------------------------------------------
@torch.library.custom_op("ddlsim_test::cross_entropy", mutates_args=())
def cross_entropy(logits: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    flat = logits.float().reshape(-1, logits.shape[-1])
    lse = torch.logsumexp(flat, -1)
    targets = labels.reshape(-1)
    kept = targets != IGNORE
    picked = flat.gather(1, targets.clamp(min=0)[:, None]).squeeze(1)
    loss = ((lse - picked) * kept).sum() / kept.sum().clamp(min=1)
    return loss, lse.reshape(labels.shape)


@cross_entropy.register_fake
def _(logits, labels):
    return logits.new_empty((), dtype=torch.float32), labels.new_empty(labels.shape, dtype=torch.float32)


@torch.library.custom_op("ddlsim_test::cross_entropy_backward", mutates_args=())
def cross_entropy_backward(grad: Tensor, logits: Tensor, labels: Tensor, lse: Tensor) -> Tensor:
    kept = (labels != IGNORE)
    probabilities = torch.exp(logits.float() - lse.unsqueeze(-1))
    one_hot = F.one_hot(labels.clamp(min=0), logits.shape[-1]).float()
    scale = grad / kept.sum().clamp(min=1)
    return ((probabilities - one_hot) * kept.unsqueeze(-1) * scale).to(logits.dtype)


@cross_entropy_backward.register_fake
def _(grad, logits, labels, lse):
    return torch.empty_like(logits)


def _ce_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0], inputs[1], output[1])
    ctx.set_materialize_grads(False)


def _ce_backward(ctx, grad, _grad_lse):
    logits, labels, lse = ctx.saved_tensors
    return cross_entropy_backward(grad, logits, labels, lse), None


cross_entropy.register_autograd(_ce_backward, setup_context=_ce_setup)


# ---- swapping them into transformers' modules --------------------------------------------------
def _rms_forward(module: nn.Module, hidden: Tensor) -> Tensor:
    return rms_norm(hidden, module.weight, module.variance_epsilon)[0]


def _gated_mlp_forward(module: nn.Module, x: Tensor) -> Tensor:
    return module.down_proj(swiglu(module.gate_proj(x), module.up_proj(x)))


def _experts_gate(module: nn.Module, gate_up: Tensor) -> Tensor:
    return swiglu_packed(gate_up)


class TanhGelu(nn.Module):
    """GPT-2's GeLU (tanh approximation) as one kernel, keeping its input for backward."""

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate="tanh")


def productionize(model: nn.Module) -> nn.Module:
    """Swap the fused kernels into a transformers decoder (RMSNorm, SwiGLU MLPs and experts,
    GPT-2's GeLU); the loss is `cross_entropy`, called by the training step."""
    for module in model.modules():
        kind = type(module).__name__
        if kind.endswith("RMSNorm"):
            module.forward = partial(_rms_forward, module)
        elif kind.endswith("MLP") and hasattr(module, "gate_proj"):
            module.forward = partial(_gated_mlp_forward, module)
        elif kind.endswith("Experts") and hasattr(module, "gate_up_proj"):
            module._apply_gate = partial(_experts_gate, module)
        elif kind == "GPT2MLP":
            module.act = TanhGelu()
    return model
