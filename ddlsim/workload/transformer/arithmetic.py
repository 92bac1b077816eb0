"""FLOPs and activation bytes of one decoder layer's shard, per micro-batch, on one rank.

With context parallelism (CP) a rank holds s / CP of the sequence's tokens (queries) and
attends to all s keys (ring attention), so token-linear terms scale with s / CP and attention
scores with (s / CP) x s. A causal mask is counted as full attention, as Megatron's FLOP
formula does (Narayanan et al. 2021, Eq. 2).

Activations follow Korthikanti et al. 2022, Sec. 4, term by term (`LayerShape.activation_bytes`,
which this reduces to for a dense layer without CP): replicated terms (norm inputs, the inputs of
QKV and of the MLP, dropout masks after row-parallel matrices) are divided by TP only with
sequence parallelism; the rest by TP. The attention-core terms (softmax output, its dropout mask
and output: heads x s_q x s values) are what selective recompute drops (Korthikanti Sec. 5).
No flash attention: the scores are materialised, as in the measured Megatron runs.

MoE layers (uniform routing, `MoeShape.load_factor` for a capacity factor): the router keeps
fp32 probabilities (4 bytes x experts per token); each rank keeps the dispatched tokens it
receives (tokens x top-k, gathered over TP as Megatron-Core's all-to-all dispatcher does), the
experts' intermediate activations (split over TP) and the experts' outputs for the combine's
backward; shared experts keep what a dense MLP of their width keeps.
"""

from __future__ import annotations

from ddlsim.workload.transformer.layer import ACTIVATION_BYTES, MASK_BYTES
from ddlsim.workload.transformer.shape import FLASH, MOE, DecoderShape, mlp_params

A = ACTIVATION_BYTES
ROUTER_BYTES_PER_EXPERT = 4  # fp32 routing probabilities, one per expert per token
LSE_BYTES = 4  # flash attention's fp32 log-sum-exp, one per query and head (FlashAttention-2, Alg. 1)


def query_tokens(shape: DecoderShape, batch: int, cp: int = 1) -> int:
    """Tokens of one micro-batch on one context-parallel rank."""
    return batch * (shape.layer.seq_len // cp)


def attention_matmul_flop(shape: DecoderShape, tokens: int, tp: int) -> float:
    """Forward FLOPs of the attention projections (Q, K, V, output) for `tokens` tokens."""
    layer, h = shape.layer, shape.layer.d_model
    if shape.mla is None:
        return 2.0 * tokens * (h * (h + 2 * layer.kv_dim) + h * h) / tp
    m, a = shape.mla, layer.heads
    replicated = h * m.q_lora_rank + h * (m.kv_lora_rank + m.qk_rope_dim)
    sharded = (m.q_lora_rank or h) * a * m.qk_dim + m.kv_lora_rank * a * (m.qk_nope_dim + m.v_head_dim) \
        + a * m.v_head_dim * h
    return 2.0 * tokens * (replicated + sharded / tp)


def attention_core_flop(shape: DecoderShape, batch: int, tp: int, cp: int = 1) -> float:
    """Scores Q K^T and their product with V: 4 b s_q s h / t for standard attention."""
    layer = shape.layer
    s, s_q = layer.seq_len, layer.seq_len // cp
    if shape.mla is None:
        return 4.0 * batch * s_q * s * layer.d_model / tp
    return 2.0 * batch * s_q * s * layer.heads * (shape.mla.qk_dim + shape.mla.v_head_dim) / tp


def mlp_flop(shape: DecoderShape, kind: str, tokens: int, tp: int) -> float:
    layer, h = shape.layer, shape.layer.d_model
    if kind != MOE:
        return 2.0 * tokens * mlp_params(h, layer.ffn_hidden, layer.gated_mlp) / tp
    moe = shape.moe
    assert moe is not None
    router = 2.0 * tokens * h * moe.experts
    shared = 2.0 * tokens * mlp_params(h, moe.shared_ffn, layer.gated_mlp) / tp
    routed = 2.0 * tokens * moe.top_k * moe.load_factor * mlp_params(h, moe.expert_ffn, layer.gated_mlp) / tp
    return router + shared + routed


def layer_forward_flop(shape: DecoderShape, kind: str, batch: int, tp: int, cp: int = 1) -> float:
    """Forward FLOPs of one layer's shard for one micro-batch of `batch` sequences.

    For a dense standard layer without CP this is `LayerShape.forward_flop`, evaluated the same way.
    """
    layer = shape.layer
    tokens = query_tokens(shape, batch, cp)
    if shape.mla is None and kind != MOE:
        gemm = 2.0 * tokens * layer.matmul_params() / tp
        return gemm + 4.0 * batch * (layer.seq_len // cp) * layer.seq_len * layer.d_model / tp
    return attention_matmul_flop(shape, tokens, tp) + attention_core_flop(shape, batch, tp, cp) + \
        mlp_flop(shape, kind, tokens, tp)


def attention_core_bytes(shape: DecoderShape, batch: int, tp: int, cp: int = 1, *, saved: bool = False) -> float:
    """Kept attention-core activations: softmax output, dropout mask and dropout output.

    `saved`: what the core keeps as `shape.attention` runs it (`memory.py`): flash keeps only its
    fp32 log-sum-exp per query and head (its output is the output projection's input, counted
    with the layer); materialised keeps the terms above.
    """
    layer = shape.layer
    if saved and shape.attention == FLASH:
        return LSE_BYTES * layer.heads * (layer.seq_len // cp) * batch / tp
    mask = MASK_BYTES if layer.dropout else 0
    return layer.heads * (layer.seq_len // cp) * layer.seq_len * batch * (A + mask + (A if layer.dropout else 0)) / tp


def layer_activation_bytes(shape: DecoderShape, kind: str, batch: int, tp: int, cp: int = 1,
                           sequence_parallel: bool = False, attention_core: bool = True, *, saved: bool = False
                           ) -> float:
    """Bytes one rank keeps for the backward pass of one layer (no recompute; see the module doc).

    `attention_core` False leaves out the attention-core terms (what selective recompute keeps).
    `saved` counts what Megatron-Core's kernels save (`memory.py`): the attention core as
    `shape.attention` runs it (`attention_core_bytes`) and, for a gated MLP, the fused SwiGLU's
    input (gate and up) and the down projection's input, 3 values per MLP column
    (megatron/core/fusions/fused_bias_swiglu.py saves only its input); without it the terms the
    roofline's traffic estimate reads (4 values per gated column, the materialised core).
    """
    layer = shape.layer
    s, b, h = layer.seq_len // cp, batch, layer.d_model
    mask = MASK_BYTES if layer.dropout else 0
    replicated = s * b * h * (2 * A + A + A) + s * b * h * 2 * mask  # 2 norms, QKV in, MLP in, 2 masks
    if shape.mla is None:
        sharded = s * b * (A * h + 2 * A * layer.kv_dim + A * h)  # Q, K, V, output-projection input
    else:
        m = shape.mla
        replicated += s * b * A * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_dim)  # compressed Q and KV
        sharded = s * b * A * layer.heads * (2 * m.qk_dim + 2 * m.v_head_dim)  # Q, K, V, output-projection input
    gated = (3 if saved else 4) * A if layer.gated_mlp else 2 * A
    if kind == MOE:
        moe = shape.moe
        assert moe is not None
        routed_tokens = s * b * moe.top_k * moe.load_factor
        replicated += s * b * ROUTER_BYTES_PER_EXPERT * moe.experts
        sharded += s * b * moe.shared_ffn * gated + routed_tokens * moe.expert_ffn * gated
        unsplit = 2 * A * routed_tokens * h  # dispatched tokens and expert outputs, whole on every TP rank
    else:
        sharded += s * b * layer.ffn_hidden * gated  # activation-function inputs/outputs
        unsplit = 0.0
    replicated_share = replicated / tp if sequence_parallel else replicated
    total = replicated_share + sharded / tp + unsplit
    if attention_core:
        total += attention_core_bytes(shape, batch, tp, cp, saved=saved)
    return total


def layer_input_bytes(shape: DecoderShape, batch: int, tp: int, cp: int = 1, sequence_parallel: bool = False) -> float:
    """The layer input, what full recompute keeps per layer (2 s b h, / t with sequence parallelism)."""
    stored = A * (shape.layer.seq_len // cp) * batch * shape.layer.d_model
    return stored / tp if sequence_parallel else stored


def layer_memory_bytes(shape: DecoderShape, kind: str, batch: int, tp: int, cp: int, ep: int,
                       param_bytes: int = 2) -> float:
    """Approximate device-memory traffic of a forward pass (for a roofline): weights read once,
    activations written once and the layer input read (as `LayerShape.forward_memory_bytes`)."""
    dense, expert = shape.layer_params_per_rank(kind, tp, ep)
    return param_bytes * (dense + expert) + layer_activation_bytes(shape, kind, batch, tp, cp) + \
        layer_input_bytes(shape, batch, 1, cp)
