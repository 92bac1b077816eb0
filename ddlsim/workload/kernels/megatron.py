"""The kernels Megatron-LM of 2021 launches for a GPT shard (fp16, fused kernels, MATERIALISED
attention): the measured A100 runs of ``../shared/validation/vtrain`` and the RAMP Megatron.

GEMMs carry their (m, n, k, batch) shape, memory-bound kernels their DRAM bytes (16-bit
activations, 1-byte dropout masks, one read and one write per operand), every kernel its
launches. `spec.LayerSpec` flags a layer of another shape (RMSNorm, no biases, SwiGLU, rotary
positions, separate projections) run the same way, as ``model.attention=materialized`` asks.

- layer forward (and recompute): input norm; fused QKV GEMM (bias in the epilogue); scores
  Q K^T as a batched GEMM over b x heads/t; Megatron's fused causal scale-mask-softmax (one
  read and one write of the scores) when ``b x heads/t`` is a multiple of 4 (Megatron's
  availability rule), else the unfused fp32 path (scale, cast, mask, softmax, cast back);
  attention dropout; probabilities x V; the context's permute copy; attention-output GEMM; the
  fused bias-dropout-residual add; the MLP norm, first GEMM, fused bias-GeLU, second GEMM and a
  second bias-dropout-residual add. Tensor-parallel all-reduces are collectives, not kernels.
- layer backward: for every GEMM a data-gradient GEMM and a weight-gradient GEMM that adds into
  the main gradient (Megatron's gradient-accumulation fusion: the GEMM reads and writes the
  16-bit main gradient, as the measured runs all-reduce fp16 gradients); the backward of each
  element-wise kernel (gradient and saved input read, gradient written), bias-gradient
  reductions, norm backward, the residual gradient sums, and one accumulation (``add_``: read
  2 + 2, write 2 bytes per element) into the main gradient for every bias and norm parameter,
  which autograd produces apart from the GEMMs (8 per GPT layer).
- output layer (``lm_head``): final norm, logits GEMM onto this rank's vocabulary slice, then
  Megatron's vocab-parallel cross-entropy in fp32: cast, max, subtract, exp, sum, divide
  (38 bytes per logit forward), and in backward the one-hot subtraction, the scale by the
  loss gradient and the cast back to fp16 (14 bytes per logit), then the GEMM gradients.
- embedding (``gpt_embedding``): word and position lookups, their sum and dropout; backward
  the dropout gradient, the dense embedding gradients (zeroed, then accumulated) and their
  main-gradient accumulation.
- optimizer (``adam_shard``): Adam with fp32 master weights reading fp16 gradients and writing
  fp16 weights (28 bytes per parameter) plus one gradient-norm pass (2 bytes per parameter),
  in multi-tensor kernels.

`launches` counts the framework operations the host issues for a kernel (a jit-fused
bias-dropout-add is two: the random mask and the fused arithmetic). A layer's tensor-parallel
all-reduces are priced on the network, but the host also issues them: each is one host-only
entry of the layer's list.
"""

from __future__ import annotations

from ddlsim.core.types import Phase
from ddlsim.core.work import Kernel, KernelClass
from ddlsim.workload.kernels.primitives import A, collective_calls, gemm, memory
from ddlsim.workload.kernels.spec import LayerSpec
from ddlsim.workload.transformer.layer import MASK_BYTES, LayerShape

NORM, ACTIVATION, LOSS = KernelClass.NORM, KernelClass.ACTIVATION, KernelClass.LOSS
EMBEDDING, OPTIMIZER = KernelClass.EMBEDDING, KernelClass.OPTIMIZER
ADAM_BYTES_PER_PARAM = 28  # read the fp16 gradient; read and write fp32 master and two moments; write fp16 weights
GRAD_ACCUMULATION_BYTES_PER_WEIGHT = 6  # a 16-bit gradient added into the main gradient: read 2 + 2, write 2
GRAD_NORM_BYTES_PER_PARAM = 2  # one read of the fp16 gradients
FUSED_SOFTMAX_BATCH_MULTIPLE = 4  # Megatron's fused softmax needs b x local heads to be a multiple of 4
FUSED_SOFTMAX_MAX_SEQ = 2048
CE_FORWARD_BYTES_PER_LOGIT = 38  # cast 2+4, max 4, subtract 4+4, exp 4+4, sum 4, divide 4+4
CE_BACKWARD_BYTES_PER_LOGIT = 14  # scale by the loss gradient 4+4, cast back 4+2
OPTIMIZER_LAUNCHES = 4  # multi-tensor norm, unscale/inf check, Adam, and the loss-scale update


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


def attention_core_kernels(spec: LayerSpec) -> list[Kernel]:
    """Scores, softmax (and dropout) and probabilities x V: what selective recompute runs again.
    With context parallelism the rank's s / CP queries attend to all s keys."""
    layer, batch, heads = spec.layer, spec.batch, spec.heads
    s, s_q = layer.seq_len, spec.queries
    scores = float(batch * heads * s_q * s)
    mask = MASK_BYTES if layer.dropout else 0
    return [gemm("scores", s_q, s, spec.qk_dim, batch * heads), *_softmax(layer, spec.tp, batch, scores, False),
            *([memory("attention_dropout", (2 * A + mask) * scores)] if layer.dropout else []),
            gemm("context", s_q, spec.v_dim, s, batch * heads)]


def attention_core_backward(spec: LayerSpec) -> list[Kernel]:
    layer, batch, heads = spec.layer, spec.batch, spec.heads
    s, s_q, hd = layer.seq_len, spec.queries, spec.qk_dim
    scores = float(batch * heads * s_q * s)
    kernels = [gemm("context_dgrad_probs", s_q, s, spec.v_dim, batch * heads),
               gemm("context_dgrad_values", s, spec.v_dim, s_q, batch * heads)]
    if layer.dropout:
        kernels.append(memory("attention_dropout_backward", (2 * A + MASK_BYTES) * scores))
    kernels += _softmax(layer, spec.tp, batch, scores, backward=True)
    return kernels + [gemm("scores_dgrad_query", s_q, hd, s, batch * heads),
                      gemm("scores_dgrad_key", s, hd, s_q, batch * heads)]


def projections(name: str, tokens: int, widths: tuple[int, ...], d_in: int, split: bool, bias: bool) -> list[Kernel]:
    """The column-parallel GEMMs of one block: one fused GEMM, or one per projection (`split`)."""
    if split:
        return [gemm(f"{name}_{index}", tokens, width, d_in, bias=bias) for index, width in enumerate(widths)]
    return [gemm(name, tokens, sum(widths), d_in, bias=bias)]


def projections_backward(name: str, tokens: int, widths: tuple[int, ...], d_in: int, split: bool) -> list[Kernel]:
    """Data and weight gradients of `projections`, the weight gradient accumulated into the main
    gradient; split projections add their input gradients (one add per extra projection)."""
    parts = [(f"{name}_{index}", (width,)) for index, width in enumerate(widths)] if split else [(name, widths)]
    kernels = []
    for part, part_widths in parts:
        kernels += linear_backward(part, tokens, sum(part_widths), d_in)
    kernels += [memory(f"{name}_dgrad_sum", 3 * A * tokens * d_in) for _ in parts[1:]]
    return kernels


def linear_backward(name: str, tokens: int, out_width: int, in_width: int) -> list[Kernel]:
    """Data and weight gradients of a (tokens x in) @ (in x out) layer; the weight gradient adds
    into the main gradient inside the GEMM (gradient-accumulation fusion)."""
    return [gemm(f"{name}_dgrad", tokens, in_width, out_width),
            gemm(f"{name}_wgrad", out_width, in_width, tokens, accumulate_bytes=A)]


def grad_accumulations(name: str, sizes: list[int]) -> list[Kernel]:
    """One ``add_`` into the main gradient per parameter of `sizes` elements (biases, norms)."""
    return [memory(f"{name}_grad_accumulation", GRAD_ACCUMULATION_BYTES_PER_WEIGHT * size) for size in sizes]


def norm_params(layer: LayerShape) -> list[int]:
    """A norm's parameters: the weight, and LayerNorm's bias."""
    return [layer.d_model] if layer.rmsnorm else [layer.d_model, layer.d_model]


def rope(spec: LayerSpec, backward: bool = False) -> list[Kernel]:
    """Rotary positions applied to Q and K (read and written once, with the cos and sin tables)."""
    if not spec.rope:
        return []
    table = 2 * A * spec.queries * spec.qk_dim
    return [memory("rope_backward" if backward else "rope",
                   2 * A * spec.tokens * (spec.q_width + spec.kv_width) + table)]


def layer_forward_kernels(spec: LayerSpec) -> list[Kernel]:
    layer, tokens, h = spec.layer, spec.tokens, spec.layer.d_model
    mask = MASK_BYTES if layer.dropout else 0
    bias = A * h if layer.bias else 0
    dropout_add = (2 * A + A + mask) * tokens * h + bias  # x, residual (and bias) read; output, mask written
    mlp_in, mlp_hidden = layer.mlp_in_width // spec.tp, spec.ffn
    activation = (A * mlp_in + A * mlp_hidden) * tokens  # bias-GeLU or SwiGLU: read the GEMM output, write
    launches = 2 if layer.dropout else 1
    return [
        memory("input_norm", 2 * A * tokens * h, kernel_class=NORM),
        *projections("qkv", tokens, (spec.q_width, spec.kv_width, spec.kv_width), h, spec.split, False),
        *rope(spec),
        *attention_core_kernels(spec),
        memory("context_permute", 2 * A * tokens * spec.context_width),
        gemm("attention_out", tokens, h, spec.context_width),
        memory("bias_dropout_add", dropout_add, launches=launches),
        memory("mlp_norm", 2 * A * tokens * h, kernel_class=NORM),
        *projections("mlp_in", tokens, (spec.ffn, spec.ffn) if layer.gated_mlp else (spec.ffn,), h,
                     spec.split, False),
        memory("activation", activation, kernel_class=ACTIVATION),
        gemm("mlp_out", tokens, h, mlp_hidden),
        memory("bias_dropout_add", dropout_add, launches=launches),
        *collective_calls(spec.tp, 2),
    ]


def layer_backward_kernels(spec: LayerSpec) -> list[Kernel]:
    layer, tokens, h, tp = spec.layer, spec.tokens, spec.layer.d_model, spec.tp
    mlp_in, mlp_hidden = layer.mlp_in_width // tp, spec.ffn
    mask = MASK_BYTES if layer.dropout else 0
    bias_grad = A * tokens * h if layer.bias else 0  # column sums of the gradient
    dropout_grad = (2 * A + mask) * tokens * h if layer.dropout else 0  # gradient and mask read, gradient written
    launches = int(layer.dropout) + int(layer.bias)
    norm_grad = 3 * A * tokens * h  # input and gradient read, gradient written (weight gradients are small)
    residual_sum = 3 * A * tokens * h
    branch = ([memory("bias_dropout_add_backward", dropout_grad + bias_grad, launches=launches)] if launches else []) \
        + (grad_accumulations("branch_bias", [h]) if layer.bias else [])
    mlp_bias = A * mlp_in * tokens if layer.bias else 0
    qkv_widths = (spec.q_width, spec.kv_width, spec.kv_width)
    kernels = [*branch, *linear_backward("mlp_out", tokens, h, mlp_hidden),
               memory("activation_backward", A * (2 * mlp_in + mlp_hidden) * tokens + mlp_bias,
                      launches=2 if layer.bias else 1, kernel_class=ACTIVATION),
               *(grad_accumulations("mlp_in_bias", [mlp_in]) if layer.bias else []),
               *projections_backward("mlp_in", tokens, (spec.ffn, spec.ffn) if layer.gated_mlp else (spec.ffn,), h,
                                     spec.split),
               memory("mlp_norm_backward", norm_grad, kernel_class=NORM),
               *grad_accumulations("mlp_norm", norm_params(layer)),
               memory("residual_grad_sum", residual_sum), *branch,
               *linear_backward("attention_out", tokens, h, spec.context_width),
               *attention_core_backward(spec), *rope(spec, backward=True),
               # Q, K and V are views of one GEMM output (Megatron splits it along the last
               # dimension): their gradients are stacked back into one tensor, one copy (the
               # context's permute needs none backward: its gradient is a view)
               memory("qkv_grad_stack", 2 * A * tokens * sum(qkv_widths)),
               *projections_backward("qkv", tokens, qkv_widths, h, spec.split)]
    if spec.any_qkv_bias:
        kernels += [memory("qkv_bias_grad", A * tokens * sum(qkv_widths)),
                    *grad_accumulations("qkv_bias", [sum(qkv_widths)])]
    kernels += [memory("input_norm_backward", norm_grad, kernel_class=NORM),
                *grad_accumulations("input_norm", norm_params(layer)),
                memory("residual_grad_sum", residual_sum)]
    return kernels + collective_calls(tp, 2)


def layer_kernels(spec: LayerSpec, phase: Phase) -> list[Kernel]:
    return layer_backward_kernels(spec) if phase is Phase.BACKWARD else layer_forward_kernels(spec)


def lm_head_kernels(d_model: int, local_vocab: int, seq_len: int, batch: int, phase: Phase) -> list[Kernel]:
    """Final norm, logits GEMM and fp32 vocab-parallel cross-entropy on one rank's vocabulary slice."""
    tokens = batch * seq_len
    logits = float(tokens * local_vocab)
    if phase is Phase.BACKWARD:
        return [memory("cross_entropy_backward", CE_BACKWARD_BYTES_PER_LOGIT * logits, launches=4,
                       kernel_class=LOSS),
                *linear_backward("logits", tokens, local_vocab, d_model),
                memory("final_norm_backward", 3 * A * tokens * d_model, kernel_class=NORM),
                *grad_accumulations("final_norm", [d_model, d_model])]
    return [memory("final_norm", 2 * A * tokens * d_model, kernel_class=NORM),
            gemm("logits", tokens, local_vocab, d_model),
            memory("cross_entropy", CE_FORWARD_BYTES_PER_LOGIT * logits, launches=12, kernel_class=LOSS)]


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
