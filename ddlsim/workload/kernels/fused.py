"""A decoder layer as today's training stacks run it (Megatron-Core with Transformer Engine,
and the same kernels under torchtitan): flash attention (`attention.py`), one fused kernel for
each memory-bound step between two GEMMs, and autograd's own gradient additions.

A fused kernel's bytes are the values it reads and the values it writes once each; what it
keeps for the backward pass is what the fused kernel keeps (a norm its input and fp32
statistics, SwiGLU its two inputs, recomputing the product in backward, flash attention the
log-sum-exp). Per layer (T = tokens of the GEMMs, b s / CP; norms, residual adds and dropouts
see T / TP of them with sequence parallelism):

forward
    ``input_norm``; Q/K/V GEMMs (one fused GEMM, or one per projection where the model lays
    them out so: ``split``, transformers' Llama-style modules), biases in the GEMM epilogue;
    ``rope`` (rotary positions on Q and K); flash attention; the output GEMM;
    ``attention_residual_add`` (Megatron's bias-dropout-add: reads the branch, its bias and the
    residual, writes the sum and the dropout mask); ``mlp_norm``; the MLP (dense: gate/up GEMMs,
    ``activation``, down GEMM; MoE: `moe.py`); ``mlp_residual_add``.
backward
    the mirror image: each GEMM's data- and weight-gradient GEMMs (the weight gradient written
    once, in 16 bits), the dropout masks' and activation's backward, the bias gradients (column
    sums), each norm's backward, then autograd's sum of the residual stream's two gradients; the
    flash backward, the rotary backward (with a fused QKV GEMM, the copy of dQ, dK, dV into its
    gradient); split projections' input gradients are added up (one add per extra projection).

With ``flash`` off, the attention core is Megatron's materialised one (`megatron.py`) and the
context is copied into the output GEMM's layout, as Megatron does.
"""

from __future__ import annotations

from ddlsim.core.types import Phase
from ddlsim.core.work import Kernel
from ddlsim.workload.kernels import megatron
from ddlsim.workload.kernels.attention import flash_kernels
from ddlsim.workload.kernels.mla import mla_in, mla_in_backward
from ddlsim.workload.kernels.moe import moe_mlp, moe_mlp_backward
from ddlsim.workload.kernels.parts import (
    bias_grads,
    dense_mlp,
    dense_mlp_backward,
    grad_sums,
    linear_backward,
    norm,
    norm_backward,
    projections,
    projections_backward,
    residual_add,
    residual_add_backward,
    tp_calls,
)
from ddlsim.workload.kernels.primitives import A, gemm, memory
from ddlsim.workload.kernels.spec import LayerSpec


def _rope_table(spec: LayerSpec) -> int:
    return 2 * A * spec.queries * spec.qk_dim if spec.rope else 0


def attention_in(spec: LayerSpec) -> list[Kernel]:
    """Projections to Q, K, V and the rotary positions: standard (GQA) or MLA (`mla.py`)."""
    if spec.mla is not None:
        return mla_in(spec)
    tokens, h = spec.tokens, spec.layer.d_model
    widths = (spec.q_width, spec.kv_width, spec.kv_width)
    kernels = projections("qkv", tokens, widths, h, spec.split, spec.any_qkv_bias)
    if spec.rope:
        kernels.append(memory("rope", 2 * A * tokens * (spec.q_width + spec.kv_width) + _rope_table(spec)))
    return kernels


def attention_in_backward(spec: LayerSpec) -> list[Kernel]:
    if spec.mla is not None:
        return mla_in_backward(spec)
    tokens, h = spec.tokens, spec.layer.d_model
    widths = (spec.q_width, spec.kv_width, spec.kv_width)
    kernels = []
    if not spec.split:  # dQ, dK, dV into the fused GEMM's gradient (rotary backward on the way)
        kernels.append(memory("qkv_grad", 2 * A * tokens * sum(widths) + _rope_table(spec)))
    elif spec.rope:
        kernels.append(memory("rope_backward", 2 * A * tokens * (spec.q_width + spec.kv_width) + _rope_table(spec)))
    if spec.any_qkv_bias:
        kernels += bias_grads("qkv", tokens, widths, spec.split)
    return kernels + projections_backward("qkv", tokens, widths, h, spec.split)


def attention_core(spec: LayerSpec, backward: bool = False) -> list[Kernel]:
    if spec.flash:
        return flash_kernels(spec, backward)
    permute = memory("context_permute_backward" if backward else "context_permute",
                     2 * A * spec.tokens * spec.context_width)
    if backward:
        return [permute, *megatron.attention_core_backward(spec)]
    return [*megatron.attention_core_kernels(spec), permute]


def layer_forward_kernels(spec: LayerSpec) -> list[Kernel]:
    mlp = moe_mlp(spec) if spec.moe is not None else dense_mlp(spec)
    return [norm(spec, "input_norm"), *attention_in(spec), *attention_core(spec),
            gemm("attention_out", spec.tokens, spec.layer.d_model, spec.context_width),
            residual_add(spec, "attention_residual_add"), norm(spec, "mlp_norm"), *mlp,
            residual_add(spec, "mlp_residual_add"), *tp_calls(spec)]


def layer_backward_kernels(spec: LayerSpec) -> list[Kernel]:
    mlp = moe_mlp_backward(spec) if spec.moe is not None else dense_mlp_backward(spec)
    h, tokens = spec.layer.d_model, spec.norm_tokens
    return [*residual_add_backward(spec, "mlp_residual"), *mlp, norm_backward(spec, "mlp_norm_backward"),
            *grad_sums("residual_grad_sum", tokens, h, 1), *residual_add_backward(spec, "attention_residual"),
            *linear_backward("attention_out", spec.tokens, h, spec.context_width),
            *attention_core(spec, backward=True), *attention_in_backward(spec),
            norm_backward(spec, "input_norm_backward"), *grad_sums("residual_grad_sum", tokens, h, 1),
            *tp_calls(spec)]


def layer_kernels(spec: LayerSpec, phase: Phase) -> list[Kernel]:
    return layer_backward_kernels(spec) if phase is Phase.BACKWARD else layer_forward_kernels(spec)
