"""The GPU kernels one rank runs for a Megatron GPT shard: GEMM shapes and bytes moved, per phase.

A roofline over a task's totals cannot tell a large, square GEMM from a thin one, nor a layer
bound by its matrix multiplies from one bound by its attention-score traffic. This module lists
the kernels Megatron-LM (fp16, fused kernels, no flash attention) launches for one signature and
phase, so that `ddlsim.compute.kernel_roofline` can price each on its own: GEMMs with their
(m, n, k, batch) shape, memory-bound kernels with their DRAM bytes, and every kernel's launch.

Counting rules (16-bit activations, 1-byte dropout masks, one read and one write per operand):

- layer forward (and recompute): input norm; fused QKV GEMM (bias in the epilogue);
  scores Q K^T as a batched GEMM over b x heads/t; Megatron's fused causal scale-mask-softmax
  (one read and one write of the scores) when ``b x heads/t`` is a multiple of 4 (Megatron's
  availability rule), else the unfused fp32 path (scale, cast, mask, softmax, cast back);
  attention dropout; probabilities x V; the context's permute copy; attention-output GEMM; the
  fused bias-dropout-residual add; the MLP norm, first GEMM, fused bias-GeLU, second GEMM and
  a second bias-dropout-residual add. Tensor-parallel all-reduces are collectives, not kernels.
- layer backward: for every GEMM a data-gradient and a weight-gradient GEMM plus the fp32
  accumulation of the fp16 weight gradient across micro-batches (read 2 + 2, write 2 bytes per
  weight); the backward of each element-wise kernel (gradient and saved input read, gradient written), bias-gradient
  reductions, norm backward, and the residual gradient sums.
- output layer (``lm_head``): final norm, logits GEMM onto this rank's vocabulary slice, then
  Megatron's vocab-parallel cross-entropy in fp32: cast, max, subtract, exp, sum, divide
  (38 bytes per logit forward), and in backward the one-hot subtraction, the scale by the
  loss gradient and the cast back to fp16 (14 bytes per logit), then the GEMM gradients.
- embedding (``gpt_embedding``): word and position lookups, their sum and dropout; backward
  the dropout gradient, the dense embedding gradients (zeroed, then accumulated) and their
  main-gradient accumulation.
- optimizer (``adam_shard``): Adam with fp32 master weights reading fp16 gradients and writing
  fp16 weights (28 bytes per parameter, as `megatron_tasks.ADAM_BYTES_PER_PARAM`) plus one
  gradient-norm pass (2 bytes per parameter), in multi-tensor kernels.

`launches` counts the framework operations the host issues for a kernel (a jit-fused
bias-dropout-add is two: the random mask and the fused arithmetic). A layer's tensor-parallel
all-reduces are priced on the network, but the host also issues them: each is one host-only
entry (`on_device` False) of the layer's list.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ddlsim.errors import ConfigError
from ddlsim.types import Kernel, KernelClass, Phase, ShardSignature
from ddlsim.workload.transformer_layer import ACTIVATION_BYTES, MASK_BYTES, LayerShape

A = ACTIVATION_BYTES
NORM, ACTIVATION, LOSS = KernelClass.NORM, KernelClass.ACTIVATION, KernelClass.LOSS
EMBEDDING, OPTIMIZER = KernelClass.EMBEDDING, KernelClass.OPTIMIZER
ADAM_BYTES_PER_PARAM = 28  # as megatron_tasks.ADAM_BYTES_PER_PARAM (kept here: this module must not import torch)
GRAD_ACCUMULATION_BYTES_PER_WEIGHT = 6  # a micro-batch's fp16 weight gradient added into .grad: read 2 + 2, write 2
GRAD_NORM_BYTES_PER_PARAM = 2  # one read of the fp16 gradients
FUSED_SOFTMAX_BATCH_MULTIPLE = 4  # Megatron's fused softmax needs b x local heads to be a multiple of 4
FUSED_SOFTMAX_MAX_SEQ = 2048
LOGIT_BYTES = 4
CE_FORWARD_BYTES_PER_LOGIT = 38  # cast 2+4, max 4, subtract 4+4, exp 4+4, sum 4, divide 4+4
CE_BACKWARD_BYTES_PER_LOGIT = 14  # scale by the loss gradient 4+4, cast back 4+2
OPTIMIZER_LAUNCHES = 4  # multi-tensor norm, unscale/inf check, Adam, and the loss-scale update


def gemm(name: str, m: int, n: int, k: int, batch: int = 1, element_bytes: int = A) -> Kernel:
    """A (batched) fp16 GEMM: 2mnk FLOP each; A, B and C read or written once."""
    return Kernel(name, flop=2.0 * m * n * k * batch, bytes=float(element_bytes * batch * (m * k + k * n + m * n)),
                  m=m, n=n, k=k, batch=batch, kernel_class=KernelClass.GEMM)


def memory(name: str, size_bytes: float, launches: int = 1,
           kernel_class: KernelClass = KernelClass.ELEMENTWISE) -> Kernel:
    """A memory-bound kernel moving `size_bytes` through DRAM."""
    return Kernel(name, bytes=float(size_bytes), launches=launches, kernel_class=kernel_class)


def collective_calls(tp: int, count: int) -> list[Kernel]:
    """The host side of a layer's `count` tensor-parallel collective calls (their GPU time is the
    network's): each is one framework operation the host issues between the kernels."""
    return [Kernel("tensor_parallel_collective_call", launches=count, kernel_class=KernelClass.HOST)] if tp > 1 else []


def fused_softmax_available(layer: LayerShape, tp: int, batch: int) -> bool:
    """Megatron's fused causal softmax: fp16, 16 < s <= 2048, s % 4 == 0, b x heads/t % 4 == 0."""
    s = layer.seq_len
    return (16 < s <= FUSED_SOFTMAX_MAX_SEQ and s % 4 == 0
            and (batch * layer.heads // tp) % FUSED_SOFTMAX_BATCH_MULTIPLE == 0)


def _softmax(layer: LayerShape, tp: int, batch: int, scores: float, backward: bool) -> list[Kernel]:
    """Scale, causal mask and softmax of `scores` values: fused kernel or fp32 fallback."""
    if fused_softmax_available(layer, tp, batch) or not layer.causal:
        return [memory("softmax_backward" if backward else "softmax", (3 if backward else 2) * A * scores)]
    if backward:  # gradients of: cast back, softmax, masked fill, cast, scale
        return [memory("softmax_unfused_backward", scores * (6 + 12 + 9 + 6 + 4), launches=5)]
    return [memory("softmax_unfused", scores * (4 + 6 + 9 + 8 + 6), launches=5)]


def attention_core_kernels(layer: LayerShape, tp: int, batch: int, cp: int = 1) -> list[Kernel]:
    """Scores, softmax (and dropout) and probabilities x V: what selective recompute runs again."""
    s, s_q, heads, hd = layer.seq_len, layer.seq_len // cp, layer.heads // tp, layer.head_dim
    scores = float(batch * heads * s_q * s)
    mask = MASK_BYTES if layer.dropout else 0
    return [gemm("scores", s_q, s, hd, batch * heads), *_softmax(layer, tp, batch, scores, backward=False),
            *([memory("attention_dropout", (2 * A + mask) * scores)] if layer.dropout else []),
            gemm("context", s_q, hd, s, batch * heads)]


def layer_forward_kernels(layer: LayerShape, tp: int, batch: int, cp: int = 1) -> list[Kernel]:
    """With context parallelism `cp` the rank holds s / cp query tokens and attends to all s keys."""
    layer.check_tp(tp)
    s, h = layer.seq_len, layer.d_model
    s_q = s // cp
    tokens = batch * s_q
    heads, kv = layer.heads // tp, layer.kv_heads // tp
    hd = layer.head_dim
    qkv_width, attn_width = (heads + 2 * kv) * hd, heads * hd
    mlp_in, mlp_hidden = layer.mlp_in_width // tp, layer.ffn_hidden // tp
    scores = float(batch * heads * s_q * s)
    mask = MASK_BYTES if layer.dropout else 0
    dropout_add = (2 * A + A + mask) * tokens * h + A * h  # x, residual, bias read; output, mask written
    activation = (A * mlp_in + A * mlp_hidden) * tokens  # bias-GeLU or SwiGLU: read the GEMM output, write
    return [
        memory("input_norm", 2 * A * tokens * h, kernel_class=NORM),
        gemm("qkv", tokens, qkv_width, h),
        gemm("scores", s_q, s, hd, batch * heads),
        *_softmax(layer, tp, batch, scores, backward=False),
        *([memory("attention_dropout", (2 * A + mask) * scores)] if layer.dropout else []),
        gemm("context", s_q, hd, s, batch * heads),
        memory("context_permute", 2 * A * tokens * attn_width),
        gemm("attention_out", tokens, h, attn_width),
        memory("bias_dropout_add", dropout_add, launches=2 if layer.dropout else 1),
        memory("mlp_norm", 2 * A * tokens * h, kernel_class=NORM),
        gemm("mlp_in", tokens, mlp_in, h),
        memory("activation", activation, kernel_class=ACTIVATION),
        gemm("mlp_out", tokens, h, mlp_hidden),
        memory("bias_dropout_add", dropout_add, launches=2 if layer.dropout else 1),
        *collective_calls(tp, 2),
    ]


def _linear_backward(name: str, tokens: int, out_width: int, in_width: int) -> list[Kernel]:
    """Data and weight gradients of a (tokens x in) @ (in x out) layer, and the main-gradient update."""
    return [gemm(f"{name}_dgrad", tokens, in_width, out_width), gemm(f"{name}_wgrad", out_width, in_width, tokens),
            memory(f"{name}_grad_accumulation", GRAD_ACCUMULATION_BYTES_PER_WEIGHT * out_width * in_width)]


def layer_backward_kernels(layer: LayerShape, tp: int, batch: int, cp: int = 1) -> list[Kernel]:
    layer.check_tp(tp)
    s, h = layer.seq_len, layer.d_model
    s_q = s // cp
    tokens = batch * s_q
    heads, kv = layer.heads // tp, layer.kv_heads // tp
    hd = layer.head_dim
    qkv_width, attn_width = (heads + 2 * kv) * hd, heads * hd
    mlp_in, mlp_hidden = layer.mlp_in_width // tp, layer.ffn_hidden // tp
    scores = float(batch * heads * s_q * s)
    mask = MASK_BYTES if layer.dropout else 0
    dropout_grad = (2 * A + mask) * tokens * h  # gradient and mask read, gradient written
    bias_grad = A * tokens * h  # column sums of the gradient
    norm_grad = 3 * A * tokens * h  # input and gradient read, gradient written (weight gradients are small)
    residual_sum = 3 * A * tokens * h
    kernels = [memory("bias_dropout_add_backward", dropout_grad + bias_grad, launches=2)]
    kernels += _linear_backward("mlp_out", tokens, h, mlp_hidden)
    kernels.append(memory("activation_backward", A * (2 * mlp_in + mlp_hidden) * tokens + A * mlp_in * tokens,
                          launches=2))
    kernels += _linear_backward("mlp_in", tokens, mlp_in, h)
    kernels += [memory("mlp_norm_backward", norm_grad, launches=2, kernel_class=NORM),
                memory("residual_grad_sum", residual_sum),
                memory("bias_dropout_add_backward", dropout_grad + bias_grad, launches=2)]
    kernels += _linear_backward("attention_out", tokens, h, attn_width)
    kernels += [memory("context_permute_backward", 2 * A * tokens * attn_width),
                gemm("context_dgrad_probs", s_q, s, hd, batch * heads),
                gemm("context_dgrad_values", s, hd, s_q, batch * heads)]
    if layer.dropout:
        kernels.append(memory("attention_dropout_backward", (2 * A + mask) * scores))
    kernels += _softmax(layer, tp, batch, scores, backward=True)
    kernels += [gemm("scores_dgrad_query", s_q, hd, s, batch * heads),
                gemm("scores_dgrad_key", s, hd, s_q, batch * heads)]
    kernels += _linear_backward("qkv", tokens, qkv_width, h)
    kernels += [memory("qkv_bias_grad", A * tokens * qkv_width),
                memory("input_norm_backward", norm_grad, launches=2, kernel_class=NORM),
                memory("residual_grad_sum", residual_sum)]
    return kernels + collective_calls(tp, 2)


def lm_head_kernels(d_model: int, local_vocab: int, seq_len: int, batch: int, phase: Phase) -> list[Kernel]:
    """Final norm, logits GEMM and fp32 vocab-parallel cross-entropy on one rank's vocabulary slice."""
    tokens = batch * seq_len
    logits = float(tokens * local_vocab)
    if phase is Phase.BACKWARD:
        return [memory("cross_entropy_backward", CE_BACKWARD_BYTES_PER_LOGIT * logits, launches=4,
                       kernel_class=LOSS),
                *_linear_backward("logits", tokens, local_vocab, d_model),
                memory("final_norm_backward", 3 * A * tokens * d_model, launches=2, kernel_class=NORM)]
    return [memory("final_norm", 2 * A * tokens * d_model, kernel_class=NORM),
            gemm("logits", tokens, local_vocab, d_model),
            memory("cross_entropy", CE_FORWARD_BYTES_PER_LOGIT * logits, launches=12,
                   kernel_class=LOSS)]


def embedding_kernels(d_model: int, local_vocab: int, seq_len: int, batch: int, tp: int,
                      phase: Phase) -> list[Kernel]:
    """Vocab-parallel word embedding plus learned positions, summed, with dropout."""
    tokens = batch * seq_len
    rows = float(tokens * d_model)
    if phase is Phase.BACKWARD:
        word = local_vocab * d_model
        return [memory("embedding_dropout_backward", (2 * A + MASK_BYTES) * rows),
                memory("word_embedding_backward", 2 * A * rows + A * word, launches=6, kernel_class=EMBEDDING),
                memory("position_embedding_backward", 2 * A * rows + A * seq_len * d_model, launches=6,
                       kernel_class=EMBEDDING),
                memory("embedding_grad_accumulation",
                       GRAD_ACCUMULATION_BYTES_PER_WEIGHT * (word + seq_len * d_model), launches=2)]
    masking = 4 if tp > 1 else 0  # out-of-range token ids masked before and after the lookup
    return [memory("word_embedding", 2 * A * rows, launches=1 + masking, kernel_class=EMBEDDING),
            memory("position_embedding_add", 3 * A * rows + A * seq_len * d_model, launches=2,
                   kernel_class=EMBEDDING),
            memory("embedding_dropout", (2 * A + MASK_BYTES) * rows)]


def optimizer_kernels(params: int) -> list[Kernel]:
    bytes_per_param = ADAM_BYTES_PER_PARAM + GRAD_NORM_BYTES_PER_PARAM
    return [memory("adam_step", bytes_per_param * params, launches=OPTIMIZER_LAUNCHES, kernel_class=OPTIMIZER)]


# ---- dispatch on a signature ------------------------------------------------------------------
KernelLister = Callable[[ShardSignature, Phase], list[Kernel]]
_LISTERS: dict[str, KernelLister] = {}


def register_kernels(kind: str) -> Callable[[KernelLister], KernelLister]:
    def decorator(lister: KernelLister) -> KernelLister:
        _LISTERS[kind] = lister
        return lister

    return decorator


def has_kernels(kind: str) -> bool:
    return kind in _LISTERS


def kernels_for(signature: ShardSignature, phase: Phase | str) -> list[Kernel]:
    """The kernels of one task of `signature` in `phase` (count 1)."""
    lister = _LISTERS.get(signature.model_kind)
    if lister is None:
        raise ConfigError("signature.model_kind", signature.model_kind,
                          f"has no kernel list; known kinds: {', '.join(sorted(_LISTERS))}")
    return lister(signature, Phase(phase))


def _shape_value(signature: ShardSignature, key: str) -> int:
    try:
        return signature.shape_dict[key]
    except KeyError:
        raise ConfigError("signature.shape", signature.shape_dict, f"a {signature.model_kind} needs {key!r}") from None


@register_kernels("gpt_layer")
@register_kernels("megatron_layer")
def _layer(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    layer, tp = LayerShape.from_signature_shape(signature.shape_dict)
    cp = signature.shape_dict.get("cp", 1)
    if phase is Phase.OPTIMIZER:
        return optimizer_kernels(layer.params_per_rank(tp))
    if phase is Phase.BACKWARD:
        return layer_backward_kernels(layer, tp, signature.local_batch, cp)
    return layer_forward_kernels(layer, tp, signature.local_batch, cp)


@register_kernels("attention_core")
def _attention_core(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    layer, tp = LayerShape.from_signature_shape(signature.shape_dict)
    return attention_core_kernels(layer, tp, signature.local_batch, signature.shape_dict.get("cp", 1))


@register_kernels("lm_head")
def _lm_head(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    d_model, vocab = _shape_value(signature, "d_model"), _shape_value(signature, "vocab")
    tp = signature.shape_dict.get("tp", 1)
    local = math.ceil(vocab / tp)
    if phase is Phase.OPTIMIZER:
        return optimizer_kernels(local * d_model + 2 * d_model)
    return lm_head_kernels(d_model, local, _shape_value(signature, "seq_len"), signature.local_batch, phase)


@register_kernels("gpt_embedding")
def _embedding(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    d_model, vocab = _shape_value(signature, "d_model"), _shape_value(signature, "vocab")
    seq_len, tp = _shape_value(signature, "seq_len"), signature.shape_dict.get("tp", 1)
    local = math.ceil(vocab / tp)
    if phase is Phase.OPTIMIZER:
        return optimizer_kernels(local * d_model + seq_len * d_model)
    return embedding_kernels(d_model, local, seq_len, signature.local_batch, tp, phase)


@register_kernels("adam_shard")
def _adam(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    return optimizer_kernels(_shape_value(signature, "params"))


def total_flop(kernels: list[Kernel]) -> float:
    return sum(kernel.flop for kernel in kernels)


def total_bytes(kernels: list[Kernel]) -> float:
    return sum(kernel.bytes for kernel in kernels)
