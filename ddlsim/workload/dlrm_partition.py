"""The DLRM 3D partitioner (RAMP Sec. 7.2.2, after Mudigere et al. 2022, "Software-hardware
co-design for fast and scalable training of deep learning recommendation models").

All `world` GPUs train together: the MLPs are data parallel on every GPU (torchrec's
``data_parallel``) and the embedding tables are spread over all GPUs:

1. Table-wise (``table_wise``) first: whole tables, ceil(T / G) on the busiest GPU, when there
   are at least as many tables as GPUs and they fit the busiest GPU's embedding budget. (With
   fewer tables than GPUs, table-wise would leave GPUs without embeddings and put the lookups of
   the whole global batch on T of them; 3D partitioning spreads the tables over every GPU.)
2. Otherwise ("greater partitioning due to memory constraints", RAMP) column-wise
   (``column_wise``): each table is cut into k column shards of width D / k, with k the smallest
   divisor of D that gives every GPU a shard (T k >= G) and fits the busiest GPU's ceil(T k / G)
   shards in its budget (if D is too narrow to give every GPU a shard, the finest split that
   fits). RAMP Table 10 is this rule: 8 tables x 4096 columns that do not fit one 80 GB GPU, on
   256 GPUs, give k = 32 shards of 128 columns, one per GPU.
3. If no column split down to `min_shard_dim` columns fits, the plan is infeasible.
   `sharding` = ``table_wise`` or ``column_wise`` forces rule 1 or rule 2 instead.
   (torchrec's ``row_wise`` and ``table_row_wise`` are not chosen by this rule; torchrec's own
   planner can produce them, see `torchrec_plan`.)

Memory per GPU: embedding weights at `value_bytes` (2, fp16, by default; sparse SGD keeps no
optimizer state and its fused kernel updates rows in place), dense model states at `DENSE_STATE_BYTES_PER_PARAM`, and
activations per local sample (`activation_bytes_per_sample`). The local batch fills what is left
unless the global batch (local = global / G) or `parallel.micro_batch` fixes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from ddlsim.core import units
from ddlsim.core.errors import InfeasibleError
from ddlsim.workload.dlrm_arch import DlrmShape, DlrmShard

VALUE_BYTES = 2  # fp16 tables, activations and messages (RAMP: half precision); sparse SGD keeps no state
DENSE_STATE_BYTES_PER_PARAM = 8  # fp16 weights and gradients, fp32 master weights (SGD has no moments)
INDEX_BYTES = 8  # int64 embedding ids
OFFSET_BYTES = 4  # int32 lengths, one per (feature, sample)


class EmbeddingSharding(Enum):
    """The values of torchrec's ``ShardingType``, spelled alike (a test compares the two), so that the
    analytic partitioner speaks torchrec's vocabulary without importing torchrec (and torch)."""

    DATA_PARALLEL = "data_parallel"
    TABLE_WISE = "table_wise"
    COLUMN_WISE = "column_wise"
    ROW_WISE = "row_wise"
    TABLE_ROW_WISE = "table_row_wise"
    TABLE_COLUMN_WISE = "table_column_wise"
    GRID_SHARD = "grid_shard"


@dataclass(frozen=True)
class DlrmPlan:
    model: DlrmShape
    world: int
    sharding: EmbeddingSharding
    shards_per_table: int
    shard: DlrmShard
    local_batch: int
    max_local_batch: int
    memory_bytes: int
    value_bytes: int = VALUE_BYTES

    @property
    def global_batch(self) -> int:
        return self.local_batch * self.world

    @property
    def embedding_bytes(self) -> int:
        return self.value_bytes * self.shard.embedding_params()

    @property
    def dense_state_bytes(self) -> int:
        return DENSE_STATE_BYTES_PER_PARAM * self.model.dense_params()

    @property
    def activation_bytes(self) -> int:
        return math.ceil(self.local_batch * activation_bytes_per_sample(self.shard, self.value_bytes))

    @property
    def memory_per_gpu_bytes(self) -> int:
        return self.embedding_bytes + self.dense_state_bytes + self.activation_bytes

    def all_to_all_bytes(self) -> int:
        """Per-rank buffer of one pooled-embedding all-to-all (the busiest rank's larger side)."""
        elements = max(self.shard.pooled_elements(self.local_batch), self.shard.received_elements(self.local_batch))
        return self.value_bytes * elements

    def dense_all_reduce_bytes(self) -> int:
        return self.value_bytes * self.model.dense_params()


def activation_bytes_per_sample(shard: DlrmShard, value_bytes: int = VALUE_BYTES) -> float:
    """Device bytes one local sample needs at the peak of an iteration.

    The shard's lookups for its `world` share of samples (ids, lengths, pooled output and its
    gradient), the exchanged embeddings and their gradient, the interaction (stacked vectors,
    their gram matrix, the top-MLP input) and each MLP layer's output kept for backward (twice:
    before and after the ReLU), all in 16-bit except ids and lengths.
    """
    model = shard.model
    lookups = shard.world * shard.local_tables
    sparse = lookups * (model.pooling * INDEX_BYTES + OFFSET_BYTES) + 2 * value_bytes * lookups * shard.shard_dim
    exchanged = 2 * value_bytes * model.num_tables * model.embedding_dim
    vectors = model.num_tables + 1
    interaction = value_bytes * (vectors * model.embedding_dim + vectors * vectors + model.interaction_width)
    mlps = 2 * value_bytes * (sum(model.bottom_dims()[1:]) + sum(model.top_dims()[1:]))
    return sparse + exchanged + interaction + mlps


SHARDING_CHOICES = ("auto", EmbeddingSharding.TABLE_WISE.value, EmbeddingSharding.COLUMN_WISE.value)


def _embedding_placement(model: DlrmShape, world: int, budget_bytes: float, min_shard_dim: int,
                         sharding: str = "auto", value_bytes: int = VALUE_BYTES) -> tuple[EmbeddingSharding, int, int]:
    """(sharding type, shards per table, shards on the busiest GPU) by rules 1-3, or as forced."""
    table_bytes = value_bytes * model.rows * model.embedding_dim
    show = units.format_size_bytes
    busiest_tables = math.ceil(model.num_tables / world)
    if sharding == EmbeddingSharding.TABLE_WISE.value:
        if busiest_tables * table_bytes > budget_bytes:
            raise InfeasibleError(f"{busiest_tables} whole tables of {show(table_bytes)} exceed the embedding budget "
                                  f"of {show(budget_bytes)} per GPU")
        return EmbeddingSharding.TABLE_WISE, 1, busiest_tables
    if sharding == "auto" and model.num_tables >= world and busiest_tables * table_bytes <= budget_bytes:
        return EmbeddingSharding.TABLE_WISE, 1, busiest_tables
    splits = [k for k in range(2, model.embedding_dim // min_shard_dim + 1) if model.embedding_dim % k == 0]
    fitting = [k for k in splits if math.ceil(model.num_tables * k / world) * table_bytes / k <= budget_bytes]
    spreading = [k for k in fitting if model.num_tables * k >= world]
    if spreading or fitting:
        k = spreading[0] if spreading else fitting[-1]
        return EmbeddingSharding.COLUMN_WISE, k, math.ceil(model.num_tables * k / world)
    raise InfeasibleError(
        f"embedding tables of {model.rows:,} x {model.embedding_dim} do not fit {show(budget_bytes)} per GPU on "
        f"{world} GPUs, even cut into column shards of {min_shard_dim} columns")


def partition_dlrm(model: DlrmShape, world: int, memory_bytes: int, *, global_batch: int = 0,
                   local_batch: int = 0, min_shard_dim: int = 1, sharding: str = "auto",
                   value_bytes: int = VALUE_BYTES) -> DlrmPlan:
    """Place the embeddings (rules 1-3), then choose the local batch (module docstring)."""
    dense_states = DENSE_STATE_BYTES_PER_PARAM * model.dense_params()
    if dense_states >= memory_bytes:
        show = units.format_size_bytes
        raise InfeasibleError(f"the MLPs' model states ({show(dense_states)}) exceed the device memory "
                              f"({show(memory_bytes)})")
    kind, k, per_gpu = _embedding_placement(model, world, memory_bytes - dense_states, min_shard_dim, sharding,
                                            value_bytes)
    shard = DlrmShard(model, per_gpu, model.rows, model.embedding_dim // k, world)
    return plan_with_batch(shard, kind, k, memory_bytes, global_batch=global_batch, local_batch=local_batch,
                           value_bytes=value_bytes)


def plan_with_batch(shard: DlrmShard, sharding: EmbeddingSharding, shards_per_table: int, memory_bytes: int, *,
                    global_batch: int = 0, local_batch: int = 0, value_bytes: int = VALUE_BYTES) -> DlrmPlan:
    """The plan for a placed `shard`: the local batch fills the memory left, unless fixed."""
    model, world = shard.model, shard.world
    show = units.format_size_bytes
    left = (memory_bytes - DENSE_STATE_BYTES_PER_PARAM * model.dense_params()
            - value_bytes * shard.embedding_params())
    per_sample = activation_bytes_per_sample(shard, value_bytes)
    max_local = int(max(left, 0) // per_sample)
    if local_batch:
        chosen = local_batch
    elif global_batch:
        chosen = math.ceil(global_batch / world)
    else:
        chosen = max_local
    if chosen < 1 or chosen > max_local:
        raise InfeasibleError(
            f"a local batch of {max(chosen, 1)} needs {show(max(chosen, 1) * per_sample)} of activations but only "
            f"{show(max(left, 0))} remain after the embedding shards and MLP states ({max_local} samples fit)")
    return DlrmPlan(model, world, sharding, shards_per_table, shard, chosen, max_local, memory_bytes, value_bytes)
