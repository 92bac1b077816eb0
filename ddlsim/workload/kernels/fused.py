"""A decoder layer as today's training stacks run it: flash attention (`attention.py`), and the
memory-bound work between two GEMMs fused into one kernel, as torch.compile's Inductor
generates it (and Megatron-Core with Transformer Engine fuses the same runs: norm, rotary
positions, bias-dropout-add, SwiGLU).

A fused kernel's bytes are the values that enter it (read once) and the values that leave it
(written once): what its consumers, and the backward pass, read later. Saved activations are
those a compiled step keeps: the inputs of each fused region (a norm keeps its input and the
fp32 reciprocal RMS per token, an activation function its GEMM inputs); intermediates are
recomputed inside the backward kernels. Per layer (T = tokens of the GEMMs, b s / CP; the
norms, residual adds and dropouts see T / TP of them with sequence parallelism):

forward
    ``input_norm`` (the previous layer's residual add, with its row-parallel bias and dropout,
    fused into this layer's norm: reads the residual and the branch, writes the new residual and
    the normed activation), Q/K/V GEMMs (one fused GEMM, or one per projection where the model
    lays them out so: ``split``), ``rope`` (rotary positions on Q and K), flash attention, the
    output GEMM, ``mlp_norm`` (the attention branch's residual add and this norm), the MLP
    (dense: gate/up GEMMs, ``activation``, down GEMM; MoE: `moe.py`); the MLP branch's residual
    add runs in the next layer's ``input_norm`` (the last layer's in the output layer's norm).
backward
    the mirror image: data- and weight-gradient GEMMs (the weight gradient written once, in
    16 bits), the activation's backward (bias gradients reduced inside it), each norm's backward
    with the residual gradient's sum (and the dropout mask's backward for the branch before it),
    flash attention's backward, the rotary backward, whose kernel also assembles the fused QKV
    GEMM's gradient (and reduces the Q/K/V bias gradients).

With ``flash`` off, the attention core is Megatron's materialised one (`megatron.py`) and the
context is copied into the output GEMM's layout, as Megatron does.
"""

from __future__ import annotations

from ddlsim.types import Kernel, Phase
from ddlsim.workload.kernels import megatron
from ddlsim.workload.kernels.attention import flash_kernels
from ddlsim.workload.kernels.mla import mla_in, mla_in_backward
from ddlsim.workload.kernels.moe import moe_mlp, moe_mlp_backward
from ddlsim.workload.kernels.parts import (
    add_norm,
    add_norm_backward,
    dense_mlp,
    dense_mlp_backward,
    linear_backward,
    projections,
    projections_backward,
    tp_calls,
)
from ddlsim.workload.kernels.primitives import A, gemm, memory
from ddlsim.workload.kernels.spec import LayerSpec


# ---- attention ----------------------------------------------------------------------------------
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


def attention_in_backward(spec: LayerSpec) -> tuple[list[Kernel], int]:
    if spec.mla is not None:
        return mla_in_backward(spec)
    tokens, h = spec.tokens, spec.layer.d_model
    widths = (spec.q_width, spec.kv_width, spec.kv_width)
    kernels = []
    if not spec.split:  # dQ, dK, dV into the fused GEMM's gradient (rotary backward on the way)
        kernels.append(memory("qkv_grad", 2 * A * tokens * sum(widths) + _rope_table(spec)))
    else:
        if spec.rope:
            kernels.append(memory("rope_backward", 2 * A * tokens * (spec.q_width + spec.kv_width)
                                  + _rope_table(spec)))
        if spec.any_qkv_bias:  # the V bias gradient (Q's and K's are reduced in the rotary backward)
            kernels.append(memory("v_bias_grad", A * tokens * spec.kv_width))
    kernels += projections_backward("qkv", tokens, widths, h, spec.split)
    return kernels, 3 if spec.split else 1


def attention_core(spec: LayerSpec, backward: bool = False) -> list[Kernel]:
    if spec.flash:
        return flash_kernels(spec, backward)
    permute = memory("context_permute_backward" if backward else "context_permute",
                     2 * A * spec.tokens * spec.context_width)
    if backward:
        return [permute, *megatron.attention_core_backward(spec)]
    return [*megatron.attention_core_kernels(spec), permute]


# ---- the layer ------------------------------------------------------------------------------------
def layer_forward_kernels(spec: LayerSpec) -> list[Kernel]:
    mlp = moe_mlp(spec) if spec.moe is not None else dense_mlp(spec)
    return [add_norm(spec, "input_norm"), *attention_in(spec), *attention_core(spec),
            gemm("attention_out", spec.tokens, spec.layer.d_model, spec.context_width),
            add_norm(spec, "mlp_norm"), *mlp, *tp_calls(spec)]


def layer_backward_kernels(spec: LayerSpec) -> list[Kernel]:
    mlp, mlp_partials = moe_mlp_backward(spec) if spec.moe is not None else dense_mlp_backward(spec)
    attention, attention_partials = attention_in_backward(spec)
    return [*mlp, add_norm_backward(spec, "mlp_norm_backward", mlp_partials),
            *linear_backward("attention_out", spec.tokens, spec.layer.d_model, spec.context_width),
            *attention_core(spec, backward=True), *attention,
            add_norm_backward(spec, "input_norm_backward", attention_partials), *tp_calls(spec)]


def layer_kernels(spec: LayerSpec, phase: Phase) -> list[Kernel]:
    return layer_backward_kernels(spec) if phase is Phase.BACKWARD else layer_forward_kernels(spec)


def attention_core_recompute(spec: LayerSpec) -> list[Kernel]:
    """What selective recompute runs again: the attention core's forward."""
    return attention_core(spec)
