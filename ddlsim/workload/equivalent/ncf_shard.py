"""One GPU's NCF shard (kind ``"ncf_shard"``): torchrec embedding bags with its whole tables, the
GMF products, the MLP tower and the prediction layer, fed random ids for the whole global batch.
The all-to-all is stood in for by a reshape, as in the DLRM shard."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ddlsim.compute.equivalent_registry import EquivalentShard, register_equivalent
from ddlsim.core.work import ShardSignature
from ddlsim.workload.equivalent.dlrm_shard import (
    embedding_bags,
    exchanged,
    random_sparse_batch,
    sparse_optimizer,
    table_dtype,
)
from ddlsim.workload.ncf import NcfShard
from ddlsim.workload.torchrec_names import EmbeddingBagConfig, KeyedJaggedTensor


class NcfShardModule(nn.Module):
    def __init__(self, shard: NcfShard, precision, device: torch.device) -> None:
        super().__init__()
        self.shard = shard
        tables = [EmbeddingBagConfig(name=f"table{i}", embedding_dim=dim, num_embeddings=shard.model.rows,
                                     feature_names=[f"feature{i}"], data_type=table_dtype(precision))
                  for i, dim in enumerate(shard.local_dims())]
        self.embedding_bags, self.fused_embeddings = embedding_bags(tables, device)
        dims = shard.model.tower_dims()
        layers: list[nn.Module] = []
        for i, o in zip(dims, dims[1:]):
            layers += [nn.Linear(i, o, device=device), nn.ReLU()]
        self.tower = nn.Sequential(*layers)
        self.predict = nn.Linear(shard.model.gmf_width + shard.model.hidden, 1, device=device)

    def forward(self, sparse: KeyedJaggedTensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m, batch = self.shard.model, labels.shape[0]
        vectors = exchanged(self.embedding_bags(sparse).values(), batch, m.sample_width)
        mlp_width = 2 * m.mlp_tables * m.mlp_dim
        tower = self.tower(vectors[:, :mlp_width])
        user_mf, item_mf = vectors[:, mlp_width:].chunk(2, dim=1)
        logits = self.predict(torch.cat([user_mf * item_mf, tower], dim=1)).squeeze(1)
        return logits, labels


@register_equivalent("ncf_shard")
def build_ncf_shard(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    shard = NcfShard.from_signature_shape(signature.shape_dict)
    module = NcfShardModule(shard, signature.precision, device)
    batch = signature.local_batch
    keys = [f"feature{i}" for i in range(shard.local_tables)]

    def make_batch() -> tuple:
        sparse = random_sparse_batch(keys, [shard.model.rows] * len(keys), batch * shard.world, 1, device)
        return sparse, torch.randint(0, 2, (batch,), device=device).float()

    return EquivalentShard(
        module=module, make_batch=make_batch,
        loss=lambda out: F.binary_cross_entropy_with_logits(out[0].float(), out[1]),
        make_optimizer=sparse_optimizer(module.embedding_bags, module.fused_embeddings),
        precision=signature.precision, checkpointing=False)
