"""One training iteration of a 3D-partitioned DLRM as tasks and collective calls.

Forward: this GPU pools its embedding shards for the whole global batch, the pooled-embedding
all-to-all gives every GPU its samples' embeddings, then the interaction and MLPs run on the
local batch. Backward mirrors it: the MLPs, then the all-to-all of the pooled-embedding
gradients, then the sparse gradient of the shards. Then the data-parallel all-reduce of the MLP
gradients over all GPUs, and the optimizer step (sparse SGD on the looked-up rows, dense SGD on
the MLPs). Messages carry values of the plan's `value_bytes` (2 bytes, fp16, by default).
"""

from __future__ import annotations

from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout, Phase, Precision
from ddlsim.core.work import ComputeTask, TaskBlock
from ddlsim.workload.dlrm_arch import mlp_params
from ddlsim.workload.dlrm_partition import DlrmPlan

SGD_FLOP_PER_PARAM = 2.0
SGD_BYTES_PER_DENSE_PARAM = 12.0  # read the fp16 gradient, read and write the fp32 master, write fp16 weights


def _task_cost(plan: DlrmPlan) -> dict[str, tuple[float, float]]:
    """(flop, bytes moved) of the forward, backward and optimizer tasks of one GPU."""
    shard, model, batch = plan.shard, plan.model, plan.local_batch
    gathered = shard.pooled_elements(batch) * model.pooling  # embedding values read (forward) or written
    embedding_bytes = plan.value_bytes * gathered
    dense = plan.value_bytes * (mlp_params(model.bottom_dims()) + mlp_params(model.top_dims()))
    forward_bytes = embedding_bytes + dense + plan.activation_bytes
    forward_flop = shard.forward_flop(batch)
    backward_flop = 2.0 * model.dense_forward_flop(batch) + shard.embedding_forward_flop(batch)
    optimizer_flop = SGD_FLOP_PER_PARAM * (model.dense_params() + gathered)
    optimizer_bytes = SGD_BYTES_PER_DENSE_PARAM * model.dense_params() + 2.0 * embedding_bytes
    return {"forward": (forward_flop, forward_bytes), "backward": (backward_flop, 2.0 * forward_bytes),
            "optimizer": (optimizer_flop, optimizer_bytes)}


def dlrm_blocks(plan: DlrmPlan, precision: Precision) -> tuple[TaskBlock, ...]:
    signature = plan.shard.signature(plan.local_batch, precision.value)
    cost = _task_cost(plan)
    everyone = GroupLayout(plan.world, 1, plan.world)
    a2a = plan.all_to_all_bytes()
    forward = [ComputeTask("dlrm_forward", Phase.FORWARD, signature, *cost["forward"])]
    backward = [ComputeTask("dlrm_backward", Phase.BACKWARD, signature, *cost["backward"])]
    if plan.world > 1:
        forward.append(CollectiveCall(CollectiveOp.ALL_TO_ALL, a2a, everyone, Phase.FORWARD,
                                      "pooled_embedding_all_to_all"))
        backward.insert(0, CollectiveCall(CollectiveOp.ALL_TO_ALL, a2a, everyone, Phase.BACKWARD,
                                          "embedding_gradient_all_to_all"))
    blocks = [TaskBlock("forward", tuple(forward)), TaskBlock("backward", tuple(backward))]
    if plan.world > 1:
        blocks.append(TaskBlock("gradient_all_reduce", (CollectiveCall(
            CollectiveOp.ALL_REDUCE, plan.dense_all_reduce_bytes(), everyone, Phase.BACKWARD,
            "dp_dense_gradient_all_reduce"),)))
    blocks.append(TaskBlock("optimizer", (ComputeTask("dlrm_optimizer", Phase.OPTIMIZER, signature,
                                                      *cost["optimizer"]),)))
    return tuple(blocks)


def dlrm_plan_fields(plan: DlrmPlan) -> dict[str, object]:
    a2a = plan.all_to_all_bytes() if plan.world > 1 else 0
    return {
        "params_total": plan.model.params(),
        "params_per_gpu": plan.shard.params(),
        "tp_degree": 1,
        "dp_degree": plan.world,
        "pp_degree": 1,
        "num_gpus": plan.world,
        "local_batch": plan.local_batch,
        "global_batch": plan.global_batch,
        "num_steps": 0,
        "dp_message_bytes": plan.dense_all_reduce_bytes() if plan.world > 1 else 0,
        "tp_message_bytes": a2a,
        "all_to_all_bytes": a2a,
        "memory_per_gpu_bytes": plan.memory_per_gpu_bytes,
        "embedding_bytes": plan.embedding_bytes,
        "activation_bytes": plan.activation_bytes,
        "max_local_batch": plan.max_local_batch,
        "embedding_sharding": plan.sharding.value,
        "mlp_sharding": "data_parallel",
        "shards_per_table": plan.shards_per_table,
        "shard_dim": plan.shard.shard_dim,
        "tables_per_gpu": plan.shard.local_tables,
        "num_tables": plan.model.num_tables,
        "embedding_dim": plan.model.embedding_dim,
    }
