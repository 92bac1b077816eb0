"""torchrec's own planner, for the DLRM embedding placement (CPU is enough: it only plans).

`torchrec_partition` asks torchrec's `EmbeddingShardingPlanner` to shard the tables over
`world` devices of `memory_bytes` each, allowing the sharding types ddlsim's 3D partitioner uses
(``table_wise`` and ``column_wise``) with fused kernels, and turns the busiest rank of its plan
into a `DlrmPlan`. The planner runs on CPU with a CUDA topology (it never touches a GPU), but
it searches every table's options, so it is for small jobs (tens of GPUs) and for checking the
ddlsim partitioner, not for 65,536-GPU sweeps.
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter, defaultdict

import torch

from ddlsim.core.errors import InfeasibleError
from ddlsim.workload.dlrm_arch import DlrmShape, DlrmShard
from ddlsim.workload.dlrm_partition import DENSE_STATE_BYTES_PER_PARAM, DlrmPlan, EmbeddingSharding, plan_with_batch
from ddlsim.workload.torchrec_names import DataType, EmbeddingBagCollection, EmbeddingBagConfig

PLANNER_BATCH = 512  # batch size hint when the local batch is not fixed
GPUS_PER_HOST = 8
ALLOWED = ("table_wise", "column_wise")


def torchrec_sharding(model: DlrmShape, world: int, memory_bytes: int, *, batch_size: int = PLANNER_BATCH,
                      min_shard_dim: int = 1,
                      sharding_types: tuple[str, ...] = ALLOWED) -> dict[str, tuple[str, list[tuple[int, int, int]]]]:
    """torchrec's plan: table name -> (sharding type, [(rows, columns, rank) per shard])."""
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology
    from torchrec.distributed.planner.types import PlannerError

    tables = [EmbeddingBagConfig(name=f"t{i}", embedding_dim=model.embedding_dim, num_embeddings=model.rows,
                                 feature_names=[f"f{i}"], data_type=DataType.FP16) for i in range(model.num_tables)]
    collection = EmbeddingBagCollection(tables=tables, device=torch.device("meta"))
    budget = memory_bytes - DENSE_STATE_BYTES_PER_PARAM * model.dense_params()
    min_partition = min_shard_dim if min_shard_dim > 1 else None  # None: torchrec's default column width
    constraints = {t.name: ParameterConstraints(sharding_types=list(sharding_types), compute_kernels=["fused"],
                                                min_partition=min_partition, pooling_factors=[float(model.pooling)])
                   for t in tables}
    quiet = logging.getLogger("torchrec")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # GPUs per host: torchrec names a device cuda:<rank % local_world_size>, and torch device
            # indices stop at 127, so a flat topology of more than 128 ranks cannot be planned
            topology = Topology(world_size=world, compute_device="cuda", hbm_cap=int(budget),
                                local_world_size=min(world, GPUS_PER_HOST))
            planner = EmbeddingShardingPlanner(topology=topology, constraints=constraints, batch_size=batch_size)
            plan = planner.plan(collection, [EmbeddingBagCollectionSharder()])
    except PlannerError as error:
        raise InfeasibleError(f"torchrec's planner found no plan on {world} GPUs: {str(error).splitlines()[0]}") \
            from None
    finally:
        quiet.setLevel(level)
    result = {}
    for name, option in plan.plan[""].items():
        shards = [(s.shard_sizes[0], s.shard_sizes[1], s.placement.rank()) for s in option.sharding_spec.shards]
        result[name] = (option.sharding_type, shards)
    return result


def torchrec_partition(model: DlrmShape, world: int, memory_bytes: int, *, global_batch: int = 0,
                       local_batch: int = 0, min_shard_dim: int = 1) -> DlrmPlan:
    """A `DlrmPlan` from torchrec's plan: the shards of its busiest rank."""
    sharding = torchrec_sharding(model, world, memory_bytes, batch_size=local_batch or PLANNER_BATCH,
                                 min_shard_dim=min_shard_dim)
    per_rank: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for _, shards in sharding.values():
        for rows, columns, rank in shards:
            per_rank[rank].append((rows, columns))
    busiest = max(per_rank.values(), key=lambda shards: (sum(r * c for r, c in shards), len(shards)))
    kind = Counter(kind for kind, _ in sharding.values()).most_common(1)[0][0]
    shards_per_table = max(len(shards) for _, shards in sharding.values())
    shard = DlrmShard(model, len(busiest), max(r for r, _ in busiest), max(c for _, c in busiest), world)
    return plan_with_batch(shard, EmbeddingSharding(kind), shards_per_table, memory_bytes,
                           global_batch=global_batch, local_batch=local_batch)
