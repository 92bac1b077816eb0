"""Invariants of both partitioners over random legal inputs."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.core.errors import InfeasibleError
from ddlsim.workload.dlrm_arch import DlrmShape
from ddlsim.workload.dlrm_partition import partition_dlrm
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.megatron2021_plan import Megatron2021Model, partition_megatron2021
from ddlsim.workload.transformer.stack import TransformerStack


@settings(max_examples=150, deadline=None)
@given(heads=st.sampled_from([1, 2, 4, 8, 16, 32]), head_dim=st.sampled_from([16, 64, 128]),
       layers=st.integers(1, 64), seq=st.sampled_from([128, 1024]), target=st.integers(1, 10**5),
       memory_gib=st.integers(1, 160), limit=st.sampled_from([1e7, 1e8, 1.6e9]),
       max_gpus=st.sampled_from([1, 8, 1024, 65536]), sp=st.booleans(), ckpt=st.booleans())
def test_megatron_plans_fit_and_respect_limits(heads, head_dim, layers, seq, target, memory_gib, limit, max_gpus,
                                               sp, ckpt):
    model = Megatron2021Model(TransformerStack(LayerShape(heads * head_dim, heads, seq), layers))
    parallel = ParallelConfig(max_gpus=max_gpus, param_limit_per_gpu=limit, sequence_parallel=sp,
                              activation_checkpointing=ckpt)
    memory = memory_gib * 2**30
    try:
        plan = partition_megatron2021(model, parallel, memory, target)
    except InfeasibleError:
        return
    assert plan.memory_per_gpu_bytes <= memory
    assert plan.tp * plan.dp <= max_gpus and plan.params_per_gpu <= limit
    assert plan.tp == 1 or model.params_per_rank(plan.tp // 2, check=False) > limit  # smallest such degree
    assert plan.global_batch >= target or plan.dp == max(1, 1 << ((max_gpus // plan.tp).bit_length() - 1))


@settings(max_examples=150, deadline=None)
@given(tables=st.integers(1, 64), rows=st.integers(1, 10**7), dim=st.sampled_from([16, 64, 128, 1024]),
       world=st.integers(1, 512), memory_gib=st.integers(1, 80))
def test_dlrm_plans_fit_and_cover_every_table(tables, rows, dim, world, memory_gib):
    shape = DlrmShape(tables, rows, dim, 13, 64, 3, 3)
    memory = memory_gib * 2**30
    try:
        plan = partition_dlrm(shape, world, memory)
    except InfeasibleError:
        return
    assert plan.memory_per_gpu_bytes <= memory and plan.local_batch >= 1
    assert plan.shard.shard_dim * plan.shards_per_table == dim
    assert plan.shard.local_tables * world >= tables * plan.shards_per_table  # every shard is placed
