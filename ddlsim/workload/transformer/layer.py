"""Arithmetic of one transformer layer and of its Megatron tensor-parallel shard.

Parameters, FLOPs, activation bytes and tensor-parallel message sizes of a layer, for any
tensor-parallel degree `tp`. The encoder/decoder difference (causal mask) and the common
variants (grouped-query attention, gated MLP such as SwiGLU, RMSNorm, no biases, no dropout)
are fields of `LayerShape`, so BERT, GPT and Llama layers share one formula.

Megatron sharding (Shoeybi et al. 2019, Sec. 3): Q, K, V and the first MLP matrix (and gate)
are column-parallel (weights and biases split over `tp`); the attention output projection and
the second MLP matrix are row-parallel (weights split, biases replicated, added after the
all-reduce); LayerNorms are replicated on every rank.

Activation bytes follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", Sec. 4 (per layer, 16-bit activations, 1-byte dropout masks):
``sbh(34 + 5as/h)`` without parallelism, ``sbh(10 + 24/t + 5as/(ht))`` with tensor parallelism,
``sbh/t (34 + 5as/h)`` with sequence parallelism, ``2sbh`` stored per layer under full
recomputation. They are built here term by term, so the same code covers gated MLPs and
grouped-query attention, and reduces to those closed forms for a standard layer (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError, InfeasibleError

ACTIVATION_BYTES = 2  # fp16/bf16 activations, as in Korthikanti et al.
MASK_BYTES = 1  # dropout masks are stored as bytes


@dataclass(frozen=True)
class LayerShape:
    """Hyper-parameters of one transformer layer (all tensor-parallel ranks together).

    `ffn_hidden` 0 means 4 x d_model; `kv_heads` 0 means `heads` (no grouped-query attention).
    """

    d_model: int
    heads: int
    seq_len: int
    ffn_hidden: int = 0
    kv_heads: int = 0
    causal: bool = False
    gated_mlp: bool = False
    bias: bool = True
    rmsnorm: bool = False
    dropout: bool = True

    def __post_init__(self) -> None:
        for key in ("d_model", "heads", "seq_len"):
            if not isinstance(getattr(self, key), int) or getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be an integer >= 1")
        if self.ffn_hidden == 0:
            object.__setattr__(self, "ffn_hidden", 4 * self.d_model)
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.ffn_hidden < 1:
            raise ConfigError("ffn_hidden", self.ffn_hidden, "must be >= 1 (0 means 4 x d_model)")
        if self.d_model % self.heads:
            raise ConfigError("heads", self.heads, f"must divide d_model = {self.d_model}")
        if self.kv_heads < 1 or self.heads % self.kv_heads:
            raise ConfigError("kv_heads", self.kv_heads, f"must divide heads = {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V): kv_heads x head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def mlp_in_width(self) -> int:
        """Output width of the column-parallel MLP matrix (gate and up stacked when gated)."""
        return 2 * self.ffn_hidden if self.gated_mlp else self.ffn_hidden

    def check_tp(self, tp: int) -> None:
        """Raise InfeasibleError unless `tp` shards this layer into whole heads and columns."""
        if tp < 1:
            raise ConfigError("tp", tp, "must be >= 1")
        if self.heads % tp or self.kv_heads % tp or self.ffn_hidden % tp:
            raise InfeasibleError(
                f"tensor-parallel degree {tp} does not divide the layer: heads = {self.heads}, "
                f"kv_heads = {self.kv_heads}, ffn_hidden = {self.ffn_hidden} must all be multiples of it")

    # ---- parameters -------------------------------------------------------------------------
    def norm_params(self) -> int:
        """Both norms of the layer (replicated on every tensor-parallel rank)."""
        return 2 * (self.d_model if self.rmsnorm else 2 * self.d_model)

    def column_parallel_params(self) -> int:
        """Q, K, V and first-MLP weights and biases: split evenly over tensor-parallel ranks."""
        d = self.d_model
        qkv_out = d + 2 * self.kv_dim
        weights = d * qkv_out + d * self.mlp_in_width
        biases = (qkv_out + self.mlp_in_width) if self.bias else 0
        return weights + biases

    def row_parallel_weight_params(self) -> int:
        """Attention output and second-MLP weights: split over tensor-parallel ranks."""
        return self.d_model * self.d_model + self.ffn_hidden * self.d_model

    def row_parallel_bias_params(self) -> int:
        """Biases of the two row-parallel matrices: replicated on every rank."""
        return 2 * self.d_model if self.bias else 0

    def matmul_params(self) -> int:
        """Weights that take part in GEMMs (no biases, no norms): 12 d^2 for a standard layer."""
        d = self.d_model
        return d * (d + 2 * self.kv_dim) + d * self.mlp_in_width + self.row_parallel_weight_params()

    def params(self) -> int:
        """All parameters of the layer, on all tensor-parallel ranks together."""
        return (self.norm_params() + self.column_parallel_params() + self.row_parallel_weight_params()
                + self.row_parallel_bias_params())

    def params_per_rank(self, tp: int, *, check: bool = True) -> int:
        """Parameters one tensor-parallel rank holds, counted the Megatron way.

        With ``check=False`` a degree that does not divide the layer gives the rounded-down
        share (used while searching for the degree, before divisibility is enforced).
        """
        if check:
            self.check_tp(tp)
        sharded = self.column_parallel_params() + self.row_parallel_weight_params()
        return sharded // tp + self.norm_params() + self.row_parallel_bias_params()

    # ---- FLOPs ------------------------------------------------------------------------------
    def forward_flop(self, batch: int, tp: int = 1) -> float:
        """Forward FLOPs of one rank's shard for `batch` sequences (a multiply-add is 2 FLOPs).

        GEMMs: 2 x tokens x matmul weights / tp; attention scores and their product with V:
        4 x batch x s^2 x d / tp (Narayanan et al. 2021, Eq. 2: 24bsh^2 + 4bs^2h per layer).
        A causal mask is counted as full attention, as Megatron's formula does.
        """
        self.check_tp(tp)
        tokens = batch * self.seq_len
        gemm = 2.0 * tokens * self.matmul_params() / tp
        attention = 4.0 * batch * self.seq_len * self.seq_len * self.d_model / tp
        return gemm + attention

    def backward_flop(self, batch: int, tp: int = 1) -> float:
        """Backward FLOPs: gradients with respect to inputs and to weights, 2 x forward."""
        return 2.0 * self.forward_flop(batch, tp)

    # ---- activations --------------------------------------------------------------------------
    def activation_bytes(self, batch: int, tp: int = 1, sequence_parallel: bool = False) -> float:
        """Bytes of activations one rank keeps for the backward pass of one layer (no recompute).

        Korthikanti et al. 2022, Sec. 4.1-4.2.3, term by term. Replicated terms (norm inputs,
        QKV and MLP inputs, dropout masks after the row-parallel matrices) are divided by `tp`
        only with sequence parallelism.
        """
        self.check_tp(tp)
        s, b, h, f = self.seq_len, batch, self.d_model, self.ffn_hidden
        a = ACTIVATION_BYTES
        mask = MASK_BYTES if self.dropout else 0
        replicated = s * b * h * (2 * a + a + a) + s * b * h * 2 * mask  # 2 norms, QKV in, MLP in, 2 masks
        sharded = s * b * (a * h + 2 * a * self.kv_dim + a * h)  # Q, K, V, output-projection input
        sharded += s * b * f * (4 * a if self.gated_mlp else 2 * a)  # activation-function inputs/outputs
        sharded += self.heads * s * s * b * (a + mask + (a if self.dropout else 0))  # softmax out, mask, dropout out
        replicated_share = replicated / tp if sequence_parallel else replicated
        return replicated_share + sharded / tp

    def checkpoint_bytes(self, batch: int, tp: int = 1, sequence_parallel: bool = False) -> float:
        """Bytes kept per layer under full activation recomputation: the layer input (2sbh)."""
        stored = ACTIVATION_BYTES * self.seq_len * batch * self.d_model
        return stored / tp if sequence_parallel else stored

    # ---- tensor-parallel communication ---------------------------------------------------------
    def tp_message_bytes(self, batch: int) -> int:
        """Bytes of one tensor-parallel all-reduce (attention or MLP block): b x s x h x 2."""
        return ACTIVATION_BYTES * batch * self.seq_len * self.d_model

    # ---- bytes moved, for a roofline ------------------------------------------------------------
    def forward_memory_bytes(self, batch: int, tp: int = 1, param_bytes: int = 2) -> float:
        """Approximate device-memory traffic of a forward pass: weights read once, activations
        written once (the Korthikanti activation bytes) and the layer input read."""
        weights = param_bytes * self.params_per_rank(tp)
        return weights + self.activation_bytes(batch, tp) + self.checkpoint_bytes(batch)

    def backward_memory_bytes(self, batch: int, tp: int = 1, param_bytes: int = 2) -> float:
        """Approximate traffic of a backward pass: twice the forward (saved activations read,
        activation and weight gradients written)."""
        return 2.0 * self.forward_memory_bytes(batch, tp, param_bytes)

    # ---- the signature vocabulary ---------------------------------------------------------------
    def signature_shape(self, tp: int) -> dict[str, int]:
        """The `ShardSignature.shape` of this layer's shard on a `tp`-way tensor-parallel group."""
        return {
            "d_model": self.d_model, "heads": self.heads, "kv_heads": self.kv_heads, "ffn": self.ffn_hidden,
            "seq_len": self.seq_len, "tp": tp, "causal": int(self.causal), "gated": int(self.gated_mlp),
            "bias": int(self.bias), "rmsnorm": int(self.rmsnorm), "dropout": int(self.dropout),
        }

    @classmethod
    def from_signature_shape(cls, shape: dict[str, int]) -> tuple[LayerShape, int]:
        """Inverse of `signature_shape`: (layer, tp). Missing flags take the class defaults."""
        try:
            layer = cls(d_model=shape["d_model"], heads=shape["heads"], seq_len=shape["seq_len"],
                        ffn_hidden=shape.get("ffn", 0), kv_heads=shape.get("kv_heads", 0),
                        causal=bool(shape.get("causal", 0)), gated_mlp=bool(shape.get("gated", 0)),
                        bias=bool(shape.get("bias", 1)), rmsnorm=bool(shape.get("rmsnorm", 0)),
                        dropout=bool(shape.get("dropout", 1)))
        except KeyError as missing:
            raise ConfigError("signature.shape", dict(shape), f"a transformer layer needs {missing}") from None
        return layer, int(shape.get("tp", 1))
