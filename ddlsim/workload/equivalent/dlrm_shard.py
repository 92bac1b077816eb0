"""One GPU's DLRM shard: torchrec embedding bags with exactly its shards, both MLPs and the
dot interaction, fed by a data loader of random `KeyedJaggedTensor` batches.

The data loader is RAMP's custom loader (Sec. 7.2.2): it generates, for this shard only, the
sparse features of the whole global batch (``local_batch x world`` samples, `pooling`
indices each), plus the dense features and labels of this GPU's `local_batch` samples, so no
input all-to-all is needed.

Between the embedding lookup and the interaction, a real job runs the pooled-embedding
all-to-all. Here the pooled output (``local_batch x world x local_tables x shard_dim`` values)
is reshaped into the interaction input (``local_batch x features x embedding_dim`` values):
both hold the same number of elements when the shards are balanced, so the reshape moves
exactly the data the all-to-all would (if they differ, the values are truncated or tiled),
and gradients flow back into the embedding bags as they would after the backward all-to-all.

Optimizer: the embeddings use torchrec's fused sparse SGD (`FusedEmbeddingBagCollection`, an
fbgemm kernel that updates only the looked-up rows inside backward); it builds on CPU with
``fbgemm-gpu-cpu`` and on CUDA with the GPU build. Where it cannot be built (the meta device),
a plain `EmbeddingBagCollection` is used and the returned optimizer covers its weights too. The
MLPs use dense SGD. Tables are stored in fp16 (bf16) when the signature's precision is 16-bit.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from ddlsim.compute.equivalent_registry import EquivalentShard, register_equivalent
from ddlsim.core.types import Precision
from ddlsim.core.work import ShardSignature
from ddlsim.workload.dlrm_arch import DlrmShard
from ddlsim.workload.torchrec_names import DataType, EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

LEARNING_RATE = 0.01
_TABLE_DTYPE = {Precision.FP16: DataType.FP16, Precision.BF16: DataType.BF16}


def _mlp(dims: list[int], device: torch.device, last_relu: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for index, (i, o) in enumerate(zip(dims, dims[1:])):
        layers.append(nn.Linear(i, o, device=device))
        if index < len(dims) - 2 or last_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def embedding_bags(tables: list[EmbeddingBagConfig], device: torch.device) -> tuple[nn.Module, bool]:
    """(module, fused): torchrec's fused-SGD collection where it builds, else the plain one."""
    if device.type != "meta":
        try:
            from torchrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fused = FusedEmbeddingBagCollection(tables=tables, optimizer_type=torch.optim.SGD,
                                                    optimizer_kwargs={"lr": LEARNING_RATE}, device=device)
            return fused, True
        except Exception as error:  # noqa: BLE001  (fbgemm raises several types when a kernel is missing)
            warnings.warn(f"torchrec's fused embedding bags are unavailable on {device} ({error}); using "
                          "EmbeddingBagCollection with a dense SGD step instead", stacklevel=3)
    return EmbeddingBagCollection(tables=tables, device=device), False


def table_dtype(precision: Precision) -> DataType:
    return _TABLE_DTYPE.get(precision, DataType.FP32)


def exchanged(pooled: torch.Tensor, rows: int, width: int) -> torch.Tensor:
    """Stand-in for the pooled-embedding all-to-all: the same values reshaped to (rows, width),
    truncated or tiled when the shard's output and the GPU's input differ in size."""
    needed = rows * width
    flat = pooled.reshape(-1)
    if flat.numel() < needed:
        flat = flat.repeat(math.ceil(needed / flat.numel()))
    return flat[:needed].view(rows, width)


def sparse_optimizer(bags: nn.Module, fused: bool):
    """Dense SGD over every parameter the fused embedding kernel does not already update."""
    fused_ids = {id(p) for p in bags.parameters()} if fused else set()

    def make_optimizer(params) -> torch.optim.Optimizer:
        return torch.optim.SGD([p for p in params if id(p) not in fused_ids], lr=LEARNING_RATE)

    return make_optimizer


def random_sparse_batch(keys: list[str], rows: list[int], samples: int, pooling: int,
                        device: torch.device) -> KeyedJaggedTensor:
    """`pooling` random ids per sample for each feature in `keys` (feature i indexes `rows[i]` rows)."""
    lengths = torch.full((len(keys) * samples,), pooling, dtype=torch.int32, device=device)
    values = torch.cat([torch.randint(0, r, (samples * pooling,), device=device) for r in rows])
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=lengths)


class DlrmShardModule(nn.Module):
    """This GPU's embedding shards, the replicated MLPs and the dot interaction."""

    def __init__(self, shard: DlrmShard, precision: Precision, device: torch.device) -> None:
        super().__init__()
        self.shard = shard
        model = shard.model
        tables = [EmbeddingBagConfig(name=f"shard{i}", embedding_dim=shard.shard_dim,
                                     num_embeddings=shard.shard_rows, feature_names=[f"feature{i}"],
                                     data_type=table_dtype(precision)) for i in range(shard.local_tables)]
        self.embedding_bags, self.fused_embeddings = embedding_bags(tables, device)
        self.bottom_mlp = _mlp(model.bottom_dims(), device, last_relu=True)
        self.top_mlp = _mlp(model.top_dims(), device, last_relu=False)
        rows, cols = torch.tril_indices(model.num_tables + 1, model.num_tables + 1, offset=-1)
        self.register_buffer("pair_rows", rows.to(device), persistent=False)
        self.register_buffer("pair_cols", cols.to(device), persistent=False)

    def forward(self, dense: torch.Tensor, sparse: KeyedJaggedTensor,
                labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        model, local_batch = self.shard.model, dense.shape[0]
        bottom = self.bottom_mlp(dense)
        pooled = self.embedding_bags(sparse).values()
        embeddings = exchanged(pooled, local_batch, model.num_tables * model.embedding_dim)
        embeddings = embeddings.view(local_batch, model.num_tables, model.embedding_dim).to(bottom.dtype)
        vectors = torch.cat([bottom.unsqueeze(1), embeddings], dim=1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))[:, self.pair_rows, self.pair_cols]
        logits = self.top_mlp(torch.cat([bottom, dots], dim=1)).squeeze(1)
        return logits, labels


@register_equivalent("dlrm_shard")
def build_dlrm_shard(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    shard = DlrmShard.from_signature_shape(signature.shape_dict)
    module = DlrmShardModule(shard, signature.precision, device)
    batch = signature.local_batch
    keys = [f"feature{i}" for i in range(shard.local_tables)]

    def make_batch() -> tuple:
        dense = torch.randn(batch, shard.model.dense_features, device=device)
        labels = torch.randint(0, 2, (batch,), device=device).float()
        sparse = random_sparse_batch(keys, [shard.shard_rows] * len(keys), shard.lookup_samples(batch),
                                     shard.model.pooling, device)
        return dense, sparse, labels

    return EquivalentShard(
        module=module,
        make_batch=make_batch,
        loss=lambda out: F.binary_cross_entropy_with_logits(out[0].float(), out[1]),
        make_optimizer=sparse_optimizer(module.embedding_bags, module.fused_embeddings),
        precision=signature.precision,
        checkpointing=False,
    )
