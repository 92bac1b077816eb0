"""The Megatron workload: parameter counts against torch, collective sizes by hand, RAMP Table 9."""

import pytest
import torch

from ddlsim.compute.equivalent_registry import build_equivalent_shard
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import CollectiveOp, GroupLayout, Phase
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.ramp_reference import TABLE9, agrees_as_printed

GiB = 2**30
SMALL = dict(target_loss=2.0, d_model=64, heads=4, layers=2, seq_len=16)


def small(**parallel):
    model = MODELS.make("megatron", **SMALL)
    return model.build_workload(ParallelConfig(**{"tensor": 2, "data": 4, "micro_batch": 3, **parallel}), GiB)


def collectives(workload, phase=None):
    calls = []
    for block in workload.blocks:
        for task in block.tasks:
            if hasattr(task, "op") and (phase is None or task.phase is phase):
                calls += [task] * block.repeat * task.count
    return calls


def test_parameter_count_matches_the_torch_layer_times_layers():
    for tp in (1, 2, 4):
        workload = small(tensor=tp)
        signature = next(workload.compute_tasks()).signature
        layer = build_equivalent_shard(signature, "meta").module
        per_layer = sum(p.numel() for p in layer.parameters())
        assert workload.plan["params_per_gpu"] == per_layer * SMALL["layers"]
    full = build_equivalent_shard(next(small(tensor=1).compute_tasks()).signature, "meta").module
    assert workload.plan["params_total"] == sum(p.numel() for p in full.parameters()) * SMALL["layers"]


def test_collective_sizes_match_a_hand_calculation():
    workload = small()
    tp_bytes = 3 * 16 * 64 * 2  # local batch x seq x d_model x 2 bytes
    per_gpu = 2 * ((12 * 64 * 64 + 7 * 64) // 2 + 6 * 64)  # layers x Megatron per-rank count
    assert workload.plan["tp_message_bytes"] == tp_bytes
    assert workload.plan["dp_message_bytes"] == 2 * per_gpu
    tp_calls = [c for c in collectives(workload) if c.name.startswith("tp_")]
    # 2 layers x (2 forward + 2 recompute + 2 backward) all-reduces
    assert len(tp_calls) == 12
    assert all(c.op is CollectiveOp.ALL_REDUCE and c.size_bytes == tp_bytes for c in tp_calls)
    assert all(c.group == GroupLayout(2, 1, 8) for c in tp_calls)
    assert [len(collectives(workload, p)) for p in (Phase.FORWARD, Phase.RECOMPUTE)] == [4, 4]
    (dp,) = [c for c in collectives(workload) if c.name == "dp_gradient_all_reduce"]
    assert dp.size_bytes == 2 * per_gpu and dp.group == GroupLayout(4, 2, 8)
    assert workload.num_ranks == 8 and workload.global_batch == 12


def test_without_checkpointing_there_is_no_recompute():
    workload = small(activation_checkpointing=False)
    assert not collectives(workload, Phase.RECOMPUTE)
    assert all(t.phase is not Phase.RECOMPUTE for t in workload.compute_tasks())
    assert all(not t.signature.checkpointing for t in workload.compute_tasks())


def test_sequence_parallel_swaps_each_all_reduce_for_gather_and_scatter():
    workload = small(sequence_parallel=True)
    tp_calls = [c for c in collectives(workload) if c.name.startswith("tp_")]
    ops = [c.op for c in tp_calls]
    assert ops.count(CollectiveOp.ALL_GATHER) == ops.count(CollectiveOp.REDUCE_SCATTER) == 12
    assert CollectiveOp.ALL_REDUCE not in ops
    assert all(c.size_bytes == 3 * 16 * 64 * 2 for c in tp_calls)


def test_compute_tasks_carry_flops_bytes_and_phases():
    workload = small()
    tasks = {t.name: t for t in workload.compute_tasks()}
    assert set(tasks) == {"layer_forward", "layer_recompute", "layer_backward", "optimizer_step"}
    assert tasks["layer_backward"].flop == 2 * tasks["layer_forward"].flop == 2 * tasks["layer_recompute"].flop
    assert tasks["optimizer_step"].count == SMALL["layers"]
    assert all(t.memory_bytes > 0 for t in tasks.values())
    assert tasks["layer_forward"].signature.model_kind == "megatron_layer"


def test_same_config_gives_the_same_workload():
    assert MODELS.make("megatron", target_loss=1.8).build_workload(ParallelConfig(), 80 * GiB) == \
        MODELS.make("megatron", target_loss=1.8).build_workload(ParallelConfig(), 80 * GiB)


@pytest.mark.parametrize("row", TABLE9, ids=[f"CE{r.loss}" for r in TABLE9])
def test_table9_columns_that_follow_from_the_architecture(row):
    """#Params, #Params per GPU, MP level and DP message follow from the paper's shape; the rest do not."""
    model = MODELS.make("megatron", target_loss=row.loss, d_model=row.d_model, heads=row.heads, layers=row.layers)
    plan = model.build_workload(ParallelConfig(), 80 * GiB).plan
    assert agrees_as_printed(plan["params_total"], row.params)
    assert plan["tp_degree"] == row.mp
    assert agrees_as_printed(plan["params_per_gpu"], row.params_per_gpu)
    assert agrees_as_printed(plan["dp_message_bytes"] if row.dp > 1 else 2 * plan["params_per_gpu"],
                             row.dp_message_bytes)


def test_from_loss_widens_the_shape_for_tensor_parallelism_and_steps_follow_the_batch():
    plan = MODELS.make("megatron", target_loss=1.3).build_workload(ParallelConfig(), 80 * GiB).plan
    assert plan["heads"] % plan["tp_degree"] == 0 and plan["d_model"] // plan["heads"] == 128
    assert plan["num_gpus"] <= 65536 and plan["global_batch"] < plan["critical_batch"]
    capped = MODELS.make("megatron", target_loss=2.0).build_workload(ParallelConfig(max_gpus=64), 80 * GiB).plan
    free = MODELS.make("megatron", target_loss=2.0).build_workload(ParallelConfig(), 80 * GiB).plan
    assert capped["global_batch"] < free["global_batch"] and capped["num_steps"] > free["num_steps"]


def test_what_does_not_fit_is_infeasible():
    with pytest.raises(InfeasibleError, match="exceed the device memory"):
        MODELS.make("megatron", **SMALL).build_workload(ParallelConfig(tensor=1), 10**5)
    with pytest.raises(InfeasibleError, match="one sequence needs"):
        MODELS.make("megatron", **{**SMALL, "seq_len": 4096}).build_workload(ParallelConfig(tensor=1), 2 * 10**6)
    with pytest.raises(InfeasibleError, match="does not divide the layer"):
        MODELS.make("megatron", target_loss=2.2, d_model=2304, heads=24, layers=56).build_workload(
            ParallelConfig(param_limit_per_gpu=1e8), 80 * GiB)
    with pytest.raises(InfeasibleError, match="local batch 1000000 needs"):
        small(micro_batch=10**6, tensor=1, data=1)


def test_bad_configs_are_config_errors():
    with pytest.raises(ConfigError, match="model.d_model"):
        MODELS.build({"name": "megatron", "d_model": 64})
    with pytest.raises(ConfigError, match="model.precision"):
        MODELS.build({"name": "megatron", "precision": "fp12"})
    with pytest.raises(ConfigError, match="pipeline"):
        MODELS.make("megatron", **SMALL).build_workload(ParallelConfig(pipeline=2), GiB)
    with pytest.raises(ConfigError, match="activation_offload"):
        ParallelConfig(activation_checkpointing=False, activation_offload=True)


def test_activation_offload_leaves_room_for_a_larger_local_batch():
    model = MODELS.make("megatron", target_loss=1.8, d_model=6144, heads=64, layers=71)
    kept = model.build_workload(ParallelConfig(), 80 * GiB).plan
    offloaded = model.build_workload(ParallelConfig(activation_offload=True), 80 * GiB).plan
    assert offloaded["max_local_batch"] > kept["max_local_batch"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_memory_model_agrees_with_cuda_peak_memory():
    """Peak device memory of real checkpointed layers + Adam under autocast vs the partitioner's model.

    Korthikanti's accounting keeps the attention probabilities, so the math attention kernel is
    used (flash attention keeps none), and the residual stream is fp16 as in Megatron.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ddlsim.workload.equivalent.megatron_layer import TensorParallelLayerShard
    from ddlsim.workload.transformer.layer import LayerShape
    from ddlsim.workload.transformer.megatron2021_plan import MODEL_STATE_BYTES_PER_PARAM, Megatron2021Model
    from ddlsim.workload.transformer.stack import TransformerStack

    layer, layers, tp, batch = LayerShape(1024, 16, 1024), 8, 2, 4
    parallel = ParallelConfig(tensor=tp, data=1, micro_batch=batch)
    model = Megatron2021Model(TransformerStack(layer, layers))
    predicted = (MODEL_STATE_BYTES_PER_PARAM * model.params_per_rank(tp)
                 + batch * model.activation_bytes_per_sequence(tp, parallel))
    device = torch.device("cuda")
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(device)
    stack = torch.nn.Sequential(*[TensorParallelLayerShard(layer, tp, checkpointing=True, device=device)
                                  for _ in range(layers)])
    optimizer = torch.optim.Adam(stack.parameters())
    torch.cuda.reset_peak_memory_stats(device)
    with sdpa_kernel(SDPBackend.MATH):
        for _ in range(2):  # the second step holds Adam's moments
            x = torch.randn(batch, layer.seq_len, layer.d_model, device=device, dtype=torch.float16)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = stack(x).float().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
    measured = torch.cuda.max_memory_allocated(device) - base
    assert measured == pytest.approx(predicted, rel=0.25)


@pytest.mark.parametrize("loss", [2.5, 2.0, 1.8, 1.7, 1.5, 1.3])
def test_a_plan_keeps_the_configured_head_size_and_whole_heads_per_rank(loss):
    """Finding 4: no plan may narrow the heads below `head_dim` or give a rank part of a head."""
    plan = MODELS.make("megatron", target_loss=loss).build_workload(ParallelConfig(), 80 * GiB).plan
    assert plan["d_model"] == 128 * plan["heads"] and plan["heads"] % plan["tp_degree"] == 0


def test_a_plan_that_needs_more_tensor_ranks_than_heads_is_infeasible_not_ok():
    """Finding 4: ``model.target_loss=1.0`` planned TP over 65,536 GPUs with heads of size 4, status ok."""
    with pytest.raises(InfeasibleError, match="per GPU with any tensor-parallel degree up to max_gpus = 65536"):
        MODELS.make("megatron", target_loss=1.0).build_workload(ParallelConfig(), 80 * GiB)
    with pytest.raises(InfeasibleError, match="does not divide the layer: heads = 4"):
        MODELS.make("megatron", **SMALL).build_workload(ParallelConfig(tensor=8, data=1), GiB)
    # RAMP Table 9's convention (heads as narrow as d_model / MP) only when asked for.
    table9 = MODELS.make("megatron", target_loss=1.0, widen_heads=True).build_workload(ParallelConfig(), 80 * GiB)
    assert table9.plan["tp_degree"] == 65536 and table9.plan["d_model"] // table9.plan["heads"] == 4
