"""The shape of a decoder-only LLM, dense or mixture-of-experts, and its parameters per rank.

`DecoderShape` generalises the GPT of Megatron-LM (learned positions, tied embeddings, biases,
LayerNorm, GeLU) to today's LLMs: grouped-query attention, SwiGLU, RMSNorm, untied output layers,
Q/K/V-only biases (Qwen2), multi-head latent attention (`MlaShape`, DeepSeek-V3) and MoE layers
(`MoeShape`: routed experts with top-k routing, shared experts, a first run of dense layers).

A layer is norms + attention + MLP. Sharding (Megatron-Core): Q/K/V (or MLA's up-projections),
the attention output and every MLP matrix are split over tensor parallel (TP); norms, biases of
row-parallel matrices, MLA's down-projections and the router are replicated. Routed experts are
split over expert parallel (EP: each rank holds experts / EP of them) and, inside an expert, over
TP (expert tensor parallel = TP). Embeddings are vocab-parallel; the vocabulary is padded to a
multiple of `vocab_multiple` x TP (Megatron pads to 128 x TP; HF shapes use 1, the checkpoint's
own vocabulary split as evenly as possible).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.stages import split_layers

DEFAULT_VOCAB_MULTIPLE = 128
DENSE, MOE = "dense", "moe"
FLASH, MATERIALIZED = "flash", "materialized"
ATTENTION_KINDS = (FLASH, MATERIALIZED)


@dataclass(frozen=True)
class MoeShape:
    """Routed experts of an MoE layer (every layer after the model's first `dense_layers`).

    `shared_ffn` is the total intermediate width of the shared experts (n_shared x width);
    `shared_gate` is Qwen2-MoE's one-output gate on them. `capacity_factor` 0 is dropless
    routing with tokens spread uniformly over the experts; c > 0 pads every expert's buffer to
    c x its uniform share (GShard/Switch capacity), so expert work and all-to-alls grow by c.
    """

    experts: int
    top_k: int
    expert_ffn: int
    shared_ffn: int = 0
    shared_gate: bool = False
    capacity_factor: float = 0.0

    def __post_init__(self) -> None:
        for key in ("experts", "top_k", "expert_ffn"):
            if not isinstance(getattr(self, key), int) or getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be an integer >= 1")
        if self.top_k > self.experts:
            raise ConfigError("top_k", self.top_k, f"must be at most the {self.experts} experts")
        if self.shared_ffn < 0 or not self.capacity_factor >= 0:
            raise ConfigError("capacity_factor", self.capacity_factor, "shared_ffn and capacity_factor must be >= 0")

    @property
    def load_factor(self) -> float:
        """Routed tokens an expert processes, relative to its uniform share."""
        return self.capacity_factor or 1.0


@dataclass(frozen=True)
class MlaShape:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank Q and KV projections.

    `q_lora_rank` 0 means Q is projected directly (no down-projection).
    """

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_dim: int
    qk_rope_dim: int
    v_head_dim: int

    @property
    def qk_dim(self) -> int:
        return self.qk_nope_dim + self.qk_rope_dim


def mlp_params(d_model: int, ffn: int, gated: bool) -> int:
    """Weights of one MLP (two matrices, three when gated)."""
    return d_model * ffn * (3 if gated else 2)


@dataclass(frozen=True)
class DecoderShape:
    """A decoder-only transformer: `layers` causal layers, word (and learned position) embeddings.

    `layer` gives the attention and dense-MLP dimensions (`ffn_hidden` is the dense MLP width);
    `position_rows` is the size of a learned position table (0: the sequence length).
    `attention` is how the attention core runs: ``flash`` (a fused kernel that never stores the
    s x s scores: FlashAttention-2/3, cuDNN) or ``materialized`` (scores and softmax written to
    memory, as Megatron-LM's fused-softmax path of 2021 did). `fused_projections`: Q, K and V
    (and gate and up) are one GEMM each, as Megatron and GPT-2 lay them out; False for
    transformers' Llama-style modules, one GEMM per projection (the kernel lists follow it).
    """

    layer: LayerShape
    layers: int
    vocab: int
    vocab_multiple: int = DEFAULT_VOCAB_MULTIPLE
    tied_embeddings: bool = True
    position_embeddings: bool = True
    moe: MoeShape | None = None
    dense_layers: int = 0
    mla: MlaShape | None = None
    qkv_bias: bool = False
    position_rows: int = 0
    attention: str = MATERIALIZED
    fused_projections: bool = True

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION_KINDS:
            raise ConfigError("attention", self.attention, f"choose one of {', '.join(ATTENTION_KINDS)}")
        for key in ("layers", "vocab", "vocab_multiple"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(key, value, "must be an integer >= 1")
        if not self.layer.causal:
            raise ConfigError("causal", self.layer.causal, "a decoder layer is causal")
        if not 0 <= self.dense_layers <= self.layers:
            raise ConfigError("dense_layers", self.dense_layers, f"must be in [0, {self.layers}]")

    # ---- layers -------------------------------------------------------------------------------
    def layer_counts(self, first: int, count: int) -> tuple[int, int]:
        """(dense, MoE) layers among layers first .. first + count - 1."""
        if self.moe is None:
            return count, 0
        dense = max(0, min(first + count, self.dense_layers) - first)
        return dense, count - dense

    @property
    def kv_heads(self) -> int:
        return self.layer.heads if self.mla is not None else self.layer.kv_heads

    # ---- parameters per tensor-parallel rank ------------------------------------------------------
    def attention_params_per_rank(self, tp: int) -> int:
        """Attention weights and biases of one layer on one TP rank (norms excluded)."""
        layer, h = self.layer, self.layer.d_model
        if self.mla is not None:
            m, a = self.mla, layer.heads
            q = (h * m.q_lora_rank + m.q_lora_rank if m.q_lora_rank else 0)
            q_up = (m.q_lora_rank or h) * a * m.qk_dim
            kv = h * (m.kv_lora_rank + m.qk_rope_dim) + m.kv_lora_rank
            kv_up = m.kv_lora_rank * a * (m.qk_nope_dim + m.v_head_dim)
            return q + kv + (q_up + kv_up + a * m.v_head_dim * h) // tp
        qkv_out = h + 2 * layer.kv_dim
        sharded = h * qkv_out + h * h + (qkv_out if layer.bias or self.qkv_bias else 0)
        return sharded // tp + (h if layer.bias else 0)

    def dense_mlp_params_per_rank(self, tp: int) -> int:
        layer = self.layer
        sharded = mlp_params(layer.d_model, layer.ffn_hidden, layer.gated_mlp)
        if layer.bias:
            sharded += layer.mlp_in_width
        return sharded // tp + (layer.d_model if layer.bias else 0)

    def moe_dense_params_per_rank(self, tp: int) -> int:
        """The replicated router and the TP-split shared experts of one MoE layer."""
        assert self.moe is not None
        h, moe = self.layer.d_model, self.moe
        shared = mlp_params(h, moe.shared_ffn, self.layer.gated_mlp) // tp if moe.shared_ffn else 0
        return h * moe.experts + shared + (h if moe.shared_gate else 0)

    def expert_params_per_rank(self, tp: int, ep: int) -> int:
        """Routed-expert weights of one MoE layer on one rank (experts / EP experts, split over TP)."""
        assert self.moe is not None
        return (self.moe.experts // ep) * (mlp_params(self.layer.d_model, self.moe.expert_ffn,
                                                      self.layer.gated_mlp) // tp)

    def layer_params_per_rank(self, kind: str, tp: int, ep: int = 1) -> tuple[int, int]:
        """(dense, expert) parameters of one layer of `kind` on one rank."""
        common = self.layer.norm_params() + self.attention_params_per_rank(tp)
        if kind == MOE:
            return common + self.moe_dense_params_per_rank(tp), self.expert_params_per_rank(tp, ep)
        return common + self.dense_mlp_params_per_rank(tp), 0

    def layer_params(self, kind: str) -> int:
        dense, expert = self.layer_params_per_rank(kind, 1, 1)
        return dense + expert

    # ---- embeddings ---------------------------------------------------------------------------------
    def padded_vocab(self, tp: int) -> int:
        multiple = self.vocab_multiple * tp
        return math.ceil(self.vocab / multiple) * multiple

    def local_vocab(self, tp: int) -> int:
        return self.padded_vocab(tp) // tp

    def embedding_params_per_rank(self, tp: int) -> int:
        """Word embedding rows of one rank plus the (replicated) position embeddings."""
        rows = self.position_rows or self.layer.seq_len
        positions = rows * self.layer.d_model if self.position_embeddings else 0
        return self.local_vocab(tp) * self.layer.d_model + positions

    def head_params_per_rank(self, tp: int, pipeline: int) -> int:
        """Final norm plus the output layer's own copy when it is untied or on another stage."""
        norm = self.layer.norm_params() // 2
        own_output = not self.tied_embeddings or pipeline > 1
        return norm + (self.local_vocab(tp) * self.layer.d_model if own_output else 0)

    # ---- totals ---------------------------------------------------------------------------------------
    def params(self) -> int:
        """All parameters (padded vocabulary at TP 1, one copy of tied embeddings)."""
        dense, moe = self.layer_counts(0, self.layers)
        layers = dense * self.layer_params(DENSE) + (moe * self.layer_params(MOE) if moe else 0)
        return layers + self.embedding_params_per_rank(1) + self.head_params_per_rank(1, 1)

    def active_params(self) -> int:
        """Parameters one token passes through: the top-k routed experts instead of all of them."""
        if self.moe is None:
            return self.params()
        _, moe_layers = self.layer_counts(0, self.layers)
        unused = (self.moe.experts - self.moe.top_k) * mlp_params(self.layer.d_model, self.moe.expert_ffn,
                                                                   self.layer.gated_mlp)
        return self.params() - moe_layers * unused

    def chunk_params_per_rank(self, chunk: int, chunks: int, tp: int, ep: int = 1,
                              chunk_layers: tuple[int, ...] = ()) -> tuple[int, int]:
        """(dense, expert) parameters of model chunk `chunk` of `chunks` on one rank.

        `chunk_layers` gives every chunk's layers (`stages.split_layers`; empty: an even split);
        chunk c holds the layers after those of chunks 0 .. c - 1. The first chunk adds the
        embeddings, the last the final norm and output layer. With one chunk per stage this is a stage.
        """
        counts = chunk_layers or split_layers(self.layers, chunks)
        first = sum(counts[:chunk])
        dense_layers, moe_layers = self.layer_counts(first, counts[chunk])
        dense = dense_layers * self.layer_params_per_rank(DENSE, tp)[0]
        expert = 0
        if moe_layers:
            moe_dense, moe_expert = self.layer_params_per_rank(MOE, tp, ep)
            dense += moe_layers * moe_dense
            expert = moe_layers * moe_expert
        if chunk == 0:
            dense += self.embedding_params_per_rank(tp)
        if chunk == chunks - 1:
            dense += self.head_params_per_rank(tp, chunks)
        return dense, expert

    def stage_params_per_rank(self, stage: int, tp: int, pipeline: int, ep: int = 1,
                              virtual_stages: int = 1, chunk_layers: tuple[int, ...] = ()) -> int:
        """All parameters one rank of pipeline stage `stage` holds (its `virtual_stages` chunks)."""
        chunks = pipeline * virtual_stages
        counts = chunk_layers or split_layers(self.layers, pipeline, virtual_stages)
        return sum(sum(self.chunk_params_per_rank(stage + v * pipeline, chunks, tp, ep, counts))
                   for v in range(virtual_stages))
