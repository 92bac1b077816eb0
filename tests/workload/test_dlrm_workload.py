"""DLRM 3D partitioning: RAMP Table 10 shard shapes, hand-computed all-to-alls, torchrec's planner."""

import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import CollectiveOp, GroupLayout, Phase
from ddlsim.workload.dlrm_arch import DlrmShape
from ddlsim.workload.dlrm_partition import EmbeddingSharding, partition_dlrm
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.ramp_reference import TABLE10, agrees_as_printed
from ddlsim.workload.torchrec_planner import torchrec_partition, torchrec_sharding

GiB = 2**30


def table10_model(row):
    return MODELS.make("dlrm", num_tables=row.tables, rows=int(row.rows_total) // row.tables,
                       embedding_dim=row.sparse_feature_size, dense_features=row.dense_features,
                       hidden=row.mlp_hidden, bottom_layers=row.bottom_layers, top_layers=row.top_layers,
                       num_gpus=row.gpus)


@pytest.mark.parametrize("row", TABLE10, ids=[f"{r.gpus}gpus" for r in TABLE10])
def test_table10_shards_and_parameter_counts(row):
    plan = table10_model(row).build_workload(ParallelConfig(micro_batch=row.batch_per_gpu), 80 * GiB).plan
    assert plan["embedding_sharding"] == "column_wise" and plan["tables_per_gpu"] == 1
    assert plan["shard_dim"] == row.partitioned_feature_size
    assert agrees_as_printed(plan["params_total"], row.params)
    assert agrees_as_printed(plan["params_per_gpu"], row.params_per_gpu)
    assert plan["local_batch"] == row.batch_per_gpu and plan["global_batch"] == row.batch_per_gpu * row.gpus


def test_all_to_all_and_all_reduce_sizes_by_hand():
    # 4 tables x 64 columns on 8 GPUs: column-wise, 2 shards of 32 columns per table, one per GPU
    model = MODELS.make("dlrm", num_tables=4, rows=1000, embedding_dim=64, dense_features=13, hidden=32,
                        bottom_layers=2, top_layers=2, num_gpus=8)
    workload = model.build_workload(ParallelConfig(micro_batch=10), GiB)
    plan = workload.plan
    assert (plan["embedding_sharding"], plan["shard_dim"], plan["shards_per_table"]) == ("column_wise", 32, 2)
    a2a_bytes = 10 * 8 * 1 * 32 * 2  # local batch x GPUs x shards per GPU x shard width x 2 bytes
    assert a2a_bytes == 10 * 4 * 64 * 2  # = what each GPU receives: local batch x tables x width x 2 bytes
    dense = (13 * 32 + 32) + (32 * 64 + 64) + (64 + 4 * 5 // 2) * 32 + 32 + (32 + 1)
    assert model.shape.dense_params() == dense
    calls = list(workload.collective_calls())
    assert [(c.op, c.phase, c.size_bytes) for c in calls] == [
        (CollectiveOp.ALL_TO_ALL, Phase.FORWARD, a2a_bytes), (CollectiveOp.ALL_TO_ALL, Phase.BACKWARD, a2a_bytes),
        (CollectiveOp.ALL_REDUCE, Phase.BACKWARD, 2 * dense)]
    assert all(c.group == GroupLayout(8, 1, 8) for c in calls)


def test_table_wise_first_when_every_gpu_gets_whole_tables():
    shape = DlrmShape(16, 1000, 64, 13, 32, 2, 2)
    plan = partition_dlrm(shape, 8, GiB)
    assert plan.sharding.value == "table_wise" and plan.shard.local_tables == 2 and plan.shard.shard_dim == 64
    assert plan.all_to_all_bytes() == 2 * plan.local_batch * 8 * 2 * 64


def test_column_wise_when_whole_tables_do_not_fit():
    shape = DlrmShape(3, 1_171_875, 64, 13, 32, 2, 2)  # 150 MB tables: two on one GPU exceed 260 MB
    plan = partition_dlrm(shape, 2, 260 * 10**6)
    assert plan.sharding.value == "column_wise" and plan.shard.shard_dim == 32 and plan.shard.local_tables == 3
    assert plan.embedding_bytes <= 260 * 10**6
    with pytest.raises(InfeasibleError, match="whole tables"):
        partition_dlrm(shape, 2, 260 * 10**6, sharding="table_wise")


def test_memory_fill_and_fixed_batches():
    shape = DlrmShape(8, 1000, 64, 13, 32, 2, 2)
    filled = partition_dlrm(shape, 8, GiB)
    assert filled.local_batch == filled.max_local_batch and filled.memory_per_gpu_bytes <= GiB
    assert partition_dlrm(shape, 8, GiB, global_batch=800).local_batch == 100
    with pytest.raises(InfeasibleError, match="local batch of"):
        partition_dlrm(shape, 8, GiB, local_batch=filled.max_local_batch + 1)
    with pytest.raises(InfeasibleError, match="do not fit"):
        partition_dlrm(DlrmShape(2, 10**9, 64, 13, 32, 2, 2), 2, GiB)


def test_torchrec_planner_checks_the_ddlsim_plan():
    shape = DlrmShape(4, 10**5, 256, 13, 64, 2, 2)
    ours = partition_dlrm(shape, 8, GiB)
    sharding = torchrec_sharding(shape, 8, GiB, min_shard_dim=ours.shard.shard_dim,
                                 sharding_types=(ours.sharding.value,))
    widths = {columns for _, shards in sharding.values() for _, columns, _ in shards}
    ranks = [rank for _, shards in sharding.values() for _, _, rank in shards]
    assert widths == {ours.shard.shard_dim} and sorted(ranks) == list(range(8))
    theirs = torchrec_partition(shape, 8, GiB, min_shard_dim=ours.shard.shard_dim)
    assert (theirs.sharding, theirs.shard) == (ours.sharding, ours.shard)


def test_the_partitioners_sharding_names_are_torchrecs():
    """The analytic partitioner spells torchrec's ShardingType without importing torchrec."""
    from ddlsim.workload.torchrec_names import ShardingType

    assert [(s.name, s.value) for s in EmbeddingSharding] == [(s.name, s.value) for s in ShardingType]


def test_torchrec_planner_as_the_model_planner():
    model = MODELS.make("dlrm", num_tables=16, rows=1000, embedding_dim=64, num_gpus=8, planner="torchrec")
    plan = model.build_workload(ParallelConfig(), GiB).plan
    assert plan["planner"] == "torchrec" and plan["embedding_sharding"] in ("table_wise", "column_wise")
    assert 64 % plan["shard_dim"] == 0 and plan["memory_per_gpu_bytes"] <= GiB


def test_bad_configs():
    with pytest.raises(ConfigError, match="model.planner"):
        MODELS.build({"name": "dlrm", "planner": "magic"})
    with pytest.raises(ConfigError, match="model.total_params"):
        MODELS.build({"name": "dlrm", "rows": 0})
    assert MODELS.make("dlrm", rows=0, total_params=8 * 4096 * 1e7).shape.rows == 10**7
    with pytest.raises(InfeasibleError, match="max_gpus"):
        MODELS.make("dlrm").build_workload(ParallelConfig(max_gpus=128), 80 * GiB)
