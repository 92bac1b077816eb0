"""Arithmetic of a DLRM (Naumov et al. 2019) and of one GPU's shard of it.

A DLRM has `num_tables` embedding tables of `rows` x `embedding_dim` (one sparse feature per
table, sum-pooled over `pooling` indices per sample), a bottom MLP from the dense features
through `bottom_layers` Linear layers (`hidden` wide) to `embedding_dim`, the pairwise
dot-product interaction of the T + 1 vectors, and a top MLP from ``embedding_dim + T(T+1)/2``
through `top_layers` Linear layers (`top_hidden` wide, default `hidden`) to one logit. Tables
are uniform (all rows and widths equal), as in RAMP Table 10 and TopoOpt List 1.

A GPU's shard (`DlrmShard`) holds `local_tables` embedding pieces of `shard_rows` x
`shard_dim` (whole tables when table-wise, column slices when column-wise, row slices when
row-wise) and a full replica of both MLPs (data parallel). Model-parallel embeddings see the
whole global batch: each shard pools its features for ``local_batch x world`` samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ShardSignature


def mlp_params(dims: list[int]) -> int:
    """Weights and biases of a stack of Linear layers through `dims`."""
    return sum(i * o + o for i, o in zip(dims, dims[1:]))


def mlp_matmul_params(dims: list[int]) -> int:
    return sum(i * o for i, o in zip(dims, dims[1:]))


@dataclass(frozen=True)
class DlrmShape:
    """The whole model (all GPUs together)."""

    num_tables: int
    rows: int
    embedding_dim: int
    dense_features: int
    hidden: int
    bottom_layers: int
    top_layers: int
    pooling: int = 1
    top_hidden: int = 0

    def __post_init__(self) -> None:
        if self.top_hidden == 0:
            object.__setattr__(self, "top_hidden", self.hidden)
        for key in ("num_tables", "rows", "embedding_dim", "dense_features", "hidden", "bottom_layers",
                    "top_layers", "pooling", "top_hidden"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(key, value, "must be an integer >= 1")

    @property
    def interaction_width(self) -> int:
        """Top-MLP input: the bottom output plus one dot product per pair of the T + 1 vectors."""
        t = self.num_tables
        return self.embedding_dim + t * (t + 1) // 2

    def bottom_dims(self) -> list[int]:
        return [self.dense_features, *[self.hidden] * (self.bottom_layers - 1), self.embedding_dim]

    def top_dims(self) -> list[int]:
        return [self.interaction_width, *[self.top_hidden] * (self.top_layers - 1), 1]

    def dense_params(self) -> int:
        """Both MLPs: the data-parallel part, replicated on every GPU."""
        return mlp_params(self.bottom_dims()) + mlp_params(self.top_dims())

    def embedding_params(self) -> int:
        return self.num_tables * self.rows * self.embedding_dim

    def params(self) -> int:
        return self.embedding_params() + self.dense_params()

    def dense_forward_flop(self, batch: int) -> float:
        """Both MLPs (2 FLOPs per multiply-add) and the interaction's batched matrix product."""
        mlps = 2.0 * (mlp_matmul_params(self.bottom_dims()) + mlp_matmul_params(self.top_dims()))
        vectors = self.num_tables + 1
        interaction = 2.0 * vectors * vectors * self.embedding_dim
        return batch * (mlps + interaction)


@dataclass(frozen=True)
class DlrmShard:
    """One GPU's piece of a `DlrmShape`, in a job of `world` GPUs."""

    model: DlrmShape
    local_tables: int
    shard_rows: int
    shard_dim: int
    world: int

    def __post_init__(self) -> None:
        for key in ("local_tables", "shard_rows", "shard_dim", "world"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(key, value, "must be an integer >= 1")

    def embedding_params(self) -> int:
        return self.local_tables * self.shard_rows * self.shard_dim

    def params(self) -> int:
        return self.embedding_params() + self.model.dense_params()

    def lookup_samples(self, local_batch: int) -> int:
        """Samples this shard pools embeddings for: the whole global batch."""
        return local_batch * self.world

    def pooled_elements(self, local_batch: int) -> int:
        """Pooled embedding values this shard produces per iteration (the all-to-all input)."""
        return self.lookup_samples(local_batch) * self.local_tables * self.shard_dim

    def received_elements(self, local_batch: int) -> int:
        """Pooled embedding values this GPU's samples need for the interaction (all-to-all output)."""
        return local_batch * self.model.num_tables * self.model.embedding_dim

    def embedding_forward_flop(self, local_batch: int) -> float:
        """Sum pooling: one add per looked-up value."""
        return float(self.pooled_elements(local_batch) * self.model.pooling)

    def forward_flop(self, local_batch: int) -> float:
        return self.embedding_forward_flop(local_batch) + self.model.dense_forward_flop(local_batch)

    def signature_shape(self) -> dict[str, int]:
        m = self.model
        return {"tables": self.local_tables, "rows": self.shard_rows, "shard_dim": self.shard_dim,
                "pooling": m.pooling, "world": self.world, "features": m.num_tables,
                "embedding_dim": m.embedding_dim, "dense_in": m.dense_features, "hidden": m.hidden,
                "top_hidden": m.top_hidden, "bottom_layers": m.bottom_layers, "top_layers": m.top_layers,
                "table_rows": m.rows}

    @classmethod
    def from_signature_shape(cls, shape: dict[str, int]) -> DlrmShard:
        try:
            model = DlrmShape(num_tables=shape["features"], rows=shape.get("table_rows", shape["rows"]),
                              embedding_dim=shape["embedding_dim"], dense_features=shape["dense_in"],
                              hidden=shape["hidden"], bottom_layers=shape["bottom_layers"],
                              top_layers=shape["top_layers"], pooling=shape.get("pooling", 1),
                              top_hidden=shape.get("top_hidden", 0))
            return cls(model, shape["tables"], shape["rows"], shape["shard_dim"], shape["world"])
        except KeyError as missing:
            raise ConfigError("signature.shape", dict(shape), f"a DLRM shard needs {missing}") from None

    def signature(self, local_batch: int, precision: str = "fp16") -> ShardSignature:
        return ShardSignature("dlrm_shard", tuple(self.signature_shape().items()), local_batch, precision, False)
