"""Neural collaborative filtering (He et al. 2017) as TopoOpt List 1 sizes it, and one GPU's shard.

Embedding tables: `mf_tables` user and `mf_tables` item tables `mf_dim` wide (the GMF branch,
element-wise products of matching user and item vectors) and `mlp_tables` user and `mlp_tables`
item tables `mlp_dim` wide (concatenated into the MLP tower of `layers` Linear + ReLU layers,
`hidden` wide). A final Linear maps the GMF products and the tower output to one logit.
Tables are placed whole (table-wise) round-robin over the GPUs, MLP tables first; the MLPs are
data parallel. The shard of the busiest GPU (GPU 0) is what a signature describes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ShardSignature
from ddlsim.workload.dlrm_arch import mlp_matmul_params, mlp_params


@dataclass(frozen=True)
class NcfShape:
    mf_tables: int = 32
    mlp_tables: int = 32
    rows: int = 10**6
    mf_dim: int = 64
    mlp_dim: int = 128
    hidden: int = 4096
    layers: int = 8

    def __post_init__(self) -> None:
        for key in ("mf_tables", "mlp_tables", "rows", "mf_dim", "mlp_dim", "hidden", "layers"):
            if not isinstance(getattr(self, key), int) or getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be an integer >= 1")

    @property
    def num_tables(self) -> int:
        return 2 * (self.mf_tables + self.mlp_tables)

    def table_dims(self) -> list[int]:
        """Every table's width, MLP tables (user, then item) first."""
        return [self.mlp_dim] * (2 * self.mlp_tables) + [self.mf_dim] * (2 * self.mf_tables)

    def tower_dims(self) -> list[int]:
        return [2 * self.mlp_tables * self.mlp_dim, *[self.hidden] * self.layers]

    @property
    def gmf_width(self) -> int:
        return self.mf_tables * self.mf_dim

    def dense_params(self) -> int:
        return mlp_params(self.tower_dims()) + (self.gmf_width + self.hidden) + 1

    def embedding_params(self) -> int:
        return self.rows * sum(self.table_dims())

    def params(self) -> int:
        return self.embedding_params() + self.dense_params()

    @property
    def sample_width(self) -> int:
        """Embedding values one sample needs after the all-to-all."""
        return sum(self.table_dims())

    def dense_forward_flop(self, batch: int) -> float:
        return batch * (2.0 * (mlp_matmul_params(self.tower_dims()) + self.gmf_width + self.hidden) + self.gmf_width)


@dataclass(frozen=True)
class NcfShard:
    model: NcfShape
    world: int

    def local_dims(self, rank: int = 0) -> list[int]:
        return self.model.table_dims()[rank::self.world]

    @property
    def local_tables(self) -> int:
        return len(self.local_dims())

    def embedding_params(self) -> int:
        return self.model.rows * sum(self.local_dims())

    def params(self) -> int:
        return self.embedding_params() + self.model.dense_params()

    def pooled_elements(self, local_batch: int) -> int:
        return local_batch * self.world * sum(self.local_dims())

    def received_elements(self, local_batch: int) -> int:
        return local_batch * self.model.sample_width

    def forward_flop(self, local_batch: int) -> float:
        return self.pooled_elements(local_batch) + self.model.dense_forward_flop(local_batch)

    def signature(self, local_batch: int, precision: str = "fp32") -> ShardSignature:
        m = self.model
        shape = {"mf_tables": m.mf_tables, "mlp_tables": m.mlp_tables, "rows": m.rows, "mf_dim": m.mf_dim,
                 "mlp_dim": m.mlp_dim, "hidden": m.hidden, "layers": m.layers, "world": self.world}
        return ShardSignature("ncf_shard", tuple(shape.items()), local_batch, precision, False)

    @classmethod
    def from_signature_shape(cls, shape: dict[str, int]) -> NcfShard:
        try:
            model = NcfShape(shape["mf_tables"], shape["mlp_tables"], shape["rows"], shape["mf_dim"],
                             shape["mlp_dim"], shape["hidden"], shape["layers"])
            return cls(model, shape["world"])
        except KeyError as missing:
            raise ConfigError("signature.shape", dict(shape), f"an NCF shard needs {missing}") from None

    def busiest_tables(self) -> int:
        return math.ceil(self.model.num_tables / self.world)
