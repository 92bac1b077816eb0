"""What a layer's kernel list needs to know, read from (and written into) a `ShardSignature`.

The signature's shape keys are `LayerShape.signature_shape` (d_model, heads, kv_heads, ffn,
seq_len, tp, causal, gated, bias, rmsnorm, dropout) plus, each only when it differs from the
Megatron-LM GPT of 2021 (so that its signatures, and profiles keyed by them, stay as they were):
``cp`` (context parallel), ``sp`` (sequence parallel, TP > 1), ``flash`` (flash attention),
``rope`` (rotary positions applied in the layer), ``qkv_bias`` (biases on Q, K, V only),
``split`` (separate Q/K/V and gate/up GEMMs, as transformers' modules are laid out), MLA's
``q_lora``, ``kv_lora``, ``qk_nope``, ``qk_rope``, ``v_head`` and MoE's ``experts``,
``top_k``, ``expert_ffn``, ``shared_ffn``, ``shared_gate``, ``ep``, ``capacity_permille``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.work import ShardSignature
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.shape import FLASH, DecoderShape, MlaShape, MoeShape

MOE_KEYS = ("experts", "top_k", "expert_ffn", "shared_ffn", "shared_gate", "ep", "capacity_permille")


def layer_keys(shape: DecoderShape, tp: int, cp: int = 1, sp: bool = False, moe: bool = False,
               ep: int = 1) -> dict[str, int]:
    """The signature shape of one layer of `shape` on one rank (module docstring)."""
    keys = dict(shape.layer.signature_shape(tp))
    flags = {"cp": cp if cp > 1 else 0, "sp": int(sp and tp > 1), "flash": int(shape.attention == FLASH),
             "rope": int(not shape.position_embeddings), "qkv_bias": int(shape.qkv_bias),
             "split": int(not shape.fused_projections)}
    keys.update({key: value for key, value in flags.items() if value})
    if shape.mla is not None:
        m = shape.mla
        keys.update(q_lora=m.q_lora_rank, kv_lora=m.kv_lora_rank, qk_nope=m.qk_nope_dim, qk_rope=m.qk_rope_dim,
                    v_head=m.v_head_dim)
    if moe:
        m = shape.moe
        assert m is not None
        keys.update(experts=m.experts, top_k=m.top_k, expert_ffn=m.expert_ffn, shared_ffn=m.shared_ffn, ep=ep,
                    capacity_permille=round(1000 * m.capacity_factor))
        if m.shared_gate:
            keys["shared_gate"] = 1
    return keys


def head_keys(shape: DecoderShape, tp: int, sp: bool, chunks: int) -> dict[str, int]:
    """Extra signature keys of the embedding and the output layer of a flash-attention decoder
    (today's fused kernels, `heads.py`); none for Megatron's of 2021."""
    if shape.attention != FLASH:
        return {}
    layer = shape.layer
    flags = {"fused_runs": 1, "sp": int(sp and tp > 1), "positions": int(shape.position_embeddings),
             "dropout": int(layer.dropout), "rmsnorm": int(layer.rmsnorm),
             "tied": int(shape.tied_embeddings and chunks == 1)}
    return {key: value for key, value in flags.items() if value}


@dataclass(frozen=True)
class LayerSpec:
    """One layer's shard on one rank for one micro-batch of `batch` sequences."""

    layer: LayerShape
    tp: int
    batch: int
    cp: int = 1
    sp: bool = False
    flash: bool = False
    rope: bool = False
    qkv_bias: bool = False
    split: bool = False
    mla: MlaShape | None = None
    moe: MoeShape | None = None
    ep: int = 1

    @classmethod
    def from_signature(cls, signature: ShardSignature) -> LayerSpec:
        keys = signature.shape_dict
        layer, tp = LayerShape.from_signature_shape(keys)
        mla = None
        if "kv_lora" in keys:
            mla = MlaShape(keys.get("q_lora", 0), keys["kv_lora"], keys["qk_nope"], keys["qk_rope"], keys["v_head"])
        moe = None
        if "experts" in keys:
            moe = MoeShape(keys["experts"], keys["top_k"], keys["expert_ffn"], keys.get("shared_ffn", 0),
                           bool(keys.get("shared_gate", 0)), keys.get("capacity_permille", 0) / 1000)
        return cls(layer, tp, signature.local_batch, max(keys.get("cp", 1), 1), bool(keys.get("sp", 0)),
                   bool(keys.get("flash", 0)), bool(keys.get("rope", 0)), bool(keys.get("qkv_bias", 0)),
                   bool(keys.get("split", 0)), mla, moe, keys.get("ep", 1))

    # ---- tokens -------------------------------------------------------------------------------
    @property
    def queries(self) -> int:
        """Query tokens of one sequence on this rank (s / CP)."""
        return self.layer.seq_len // self.cp

    @property
    def tokens(self) -> int:
        """Tokens a tensor-parallel GEMM sees: batch x s / CP."""
        return self.batch * self.queries

    @property
    def norm_tokens(self) -> int:
        """Tokens of the norms, residual adds and dropouts: / TP with sequence parallelism."""
        return self.tokens // self.tp if self.sp else self.tokens

    # ---- local widths ---------------------------------------------------------------------------
    @property
    def heads(self) -> int:
        return self.layer.heads // self.tp

    @property
    def kv_heads(self) -> int:
        return self.heads if self.mla is not None else self.layer.kv_heads // self.tp

    @property
    def qk_dim(self) -> int:
        return self.mla.qk_dim if self.mla is not None else self.layer.head_dim

    @property
    def v_dim(self) -> int:
        return self.mla.v_head_dim if self.mla is not None else self.layer.head_dim

    @property
    def q_width(self) -> int:
        return self.heads * self.qk_dim

    @property
    def kv_width(self) -> int:
        """Width of K (= of V for standard attention) on this rank."""
        return self.kv_heads * self.qk_dim

    @property
    def context_width(self) -> int:
        """Width of the attention output (the input of the output projection) on this rank."""
        return self.heads * self.v_dim

    @property
    def ffn(self) -> int:
        return self.layer.ffn_hidden // self.tp

    @property
    def any_qkv_bias(self) -> bool:
        return self.layer.bias or self.qkv_bias
