"""model=gpt: parameter counts, stage plan, per-micro-batch blocks, kernel lists, equivalents."""

import pytest

from ddlsim.compute.equivalent_registry import build_equivalent_shard
from ddlsim.compute.kernel_registry import kernels_for, total_flop
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import CollectiveOp, Phase
from ddlsim.workload.gpt_plan import GptShape
from ddlsim.workload.kernels.megatron import fused_softmax_available
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.layer import LayerShape

GIB = 2**30


def gpt(**kwargs):
    return MODELS.make("gpt", **kwargs)


def shape(d_model=1024, heads=16, layers=24, seq_len=1024):
    return GptShape(LayerShape(d_model, heads, seq_len, causal=True), layers, 50257)


@pytest.mark.parametrize(("d_model", "heads", "layers", "billions"),
                         [(3072, 32, 30, 3.6), (6144, 48, 40, 18.4), (8192, 64, 48, 39.1), (12288, 96, 96, 175.0)])
def test_parameter_totals_match_the_measured_runs_labels(d_model, heads, layers, billions):
    # The vTrain multi-node file labels its four models 3.6, 18.4, 39.1 and 175 billion (GPT-3's
    # "175B" has 174.6 B): they agree to the label's last digit.
    last_digit = 1.0 if billions >= 100 else 0.1
    assert shape(d_model, heads, layers, 2048).params() / 1e9 == pytest.approx(billions, abs=last_digit / 2)


def test_gpt2_medium_count_by_hand():
    # 24 x (12 h^2 + 13 h) + 50,304 x 1,024 (vocabulary padded to 128) + 1,024 x 1,024 positions + final norm.
    assert shape().params() == 24 * (12 * 1024**2 + 13 * 1024) + 50304 * 1024 + 1024 * 1024 + 2 * 1024
    assert shape().padded_vocab(8) == 51200 and shape().padded_vocab(2) == 50432


def test_stage_parameters_hold_embeddings_on_first_and_last_stages():
    s = shape(layers=8)
    layer = s.layer.params_per_rank(2)
    first, middle, last = (s.stage_params_per_rank(stage, 2, 4) for stage in (0, 1, 3))
    assert middle == 2 * layer
    assert first == 2 * layer + s.local_vocab(2) * 1024 + 1024 * 1024
    assert last == 2 * layer + 2 * 1024 + s.local_vocab(2) * 1024  # final norm and the tied copy
    assert s.stage_params_per_rank(0, 2, 1) == 8 * layer + s.embedding_params_per_rank(2) + 2 * 1024


def test_blocks_of_a_pipelined_plan():
    workload = gpt(d_model=1024, heads=16, layers=8, global_batch=32).build_workload(
        ParallelConfig(tensor=2, data=2, pipeline=4, micro_batch=2), 80 * GIB)
    plan = workload.plan
    assert (plan["micro_batches"], plan["pp_degree"], plan["layers_per_stage"], plan["num_gpus"]) == (8, 4, 2, 16)
    blocks = {block.name: block for block in workload.blocks if block.name != "gradient_all_reduce"}
    assert blocks["embedding_forward"].stages == (0,) and blocks["output_forward"].stages == (3,)
    assert blocks["pipeline_send_forward"].stages == (0, 1, 2) and blocks["pipeline_send_backward"].stages == (1, 2, 3)
    assert blocks["forward"].repeat == 2 and blocks["forward"].per_micro_batch
    send = blocks["pipeline_send_forward"].tasks[0]
    assert send.op is CollectiveOp.SEND_RECV and send.size_bytes == 2 * 1024 * 1024 * 2 // 2  # b s h 2 / t
    assert send.group.stride == 4 and send.group.size == 2
    assert blocks["pipeline_gather_forward"].tasks[0].op is CollectiveOp.ALL_GATHER
    gradient = [block for block in workload.blocks if block.name == "gradient_all_reduce"]
    assert sorted(block.stages for block in gradient) == [(0,), (1, 2), (3,)]
    assert not blocks["optimizer_sync"].stages and not blocks["optimizer_sync"].per_micro_batch
    assert blocks["embedding_all_reduce"].stages == (0, 3)


def test_one_stage_plan_has_no_transfers_and_one_gradient_all_reduce():
    workload = gpt(layers=4, global_batch=16).build_workload(
        ParallelConfig(tensor=1, data=4, pipeline=1, micro_batch=2), 80 * GIB)
    names = [block.name for block in workload.blocks]
    assert not any(name.startswith("pipeline_") for name in names) and "embedding_all_reduce" not in names
    assert names.count("gradient_all_reduce") == 1 and workload.plan["micro_batches"] == 2


def test_invalid_and_impossible_plans():
    with pytest.raises(ConfigError, match="cannot split the 10 layers over pipeline 4 x virtual_stages 2"):
        gpt(layers=10).build_workload(ParallelConfig(tensor=1, data=1, pipeline=4, virtual_stages=2), 80 * GIB)
    with pytest.raises(ConfigError, match="multiple of data parallel x micro-batch"):
        gpt(global_batch=30).build_workload(ParallelConfig(tensor=1, data=4, micro_batch=2), 80 * GIB)
    with pytest.raises(InfeasibleError, match="pipeline stage 0 needs"):
        gpt(d_model=12288, heads=96, layers=96, seq_len=2048).build_workload(
            ParallelConfig(tensor=8, data=1, pipeline=2, micro_batch=1), 80 * GIB)


def test_kernel_flops_equal_the_layer_formulas():
    workload = gpt(layers=2, global_batch=4).build_workload(ParallelConfig(tensor=2, data=1, micro_batch=2),
                                                            80 * GIB)
    for task in workload.compute_tasks():
        kernels = kernels_for(task.signature, task.phase)
        if task.phase is not Phase.OPTIMIZER and task.flop:
            assert total_flop(kernels) == pytest.approx(task.flop)
        assert sum(kernel.bytes for kernel in kernels) == pytest.approx(task.memory_bytes)


def test_fused_softmax_rule():
    layer = LayerShape(1024, 16, 1024, causal=True)
    assert fused_softmax_available(layer, 8, 2) and not fused_softmax_available(layer, 8, 1)  # b x 2 heads
    assert not fused_softmax_available(LayerShape(1024, 16, 4096, causal=True), 1, 4)  # s > 2048
    one = kernels_for(*_layer_signature(tp=8, batch=1))
    two = kernels_for(*_layer_signature(tp=8, batch=2))
    assert any(k.name == "softmax_unfused" for k in one) and any(k.name == "softmax" for k in two)


def _layer_signature(tp, batch):
    workload = gpt(layers=1, global_batch=batch).build_workload(
        ParallelConfig(tensor=tp, data=1, micro_batch=batch), 80 * GIB)
    task = next(task for task in workload.compute_tasks() if task.name == "layer_forward")
    return task.signature, task.phase


def test_equivalent_shards_hold_the_planned_parameters():
    workload = gpt(layers=2, global_batch=2, vocab=1000).build_workload(
        ParallelConfig(tensor=2, data=1, micro_batch=1), 80 * GIB)
    tasks = {task.name: task for task in workload.compute_tasks()}
    layer = build_equivalent_shard(tasks["layer_forward"].signature, "meta").module
    assert sum(p.numel() for p in layer.parameters()) == LayerShape(1024, 16, 1024, causal=True).params_per_rank(2)
    embedding = build_equivalent_shard(tasks["embedding_forward"].signature, "meta").module
    assert sum(p.numel() for p in embedding.parameters()) == 1024 * 1024 // 2 * 0 + 512 * 1024 + 1024 * 1024
    adam = build_equivalent_shard(tasks["optimizer_step"].signature, "meta").module
    assert sum(p.numel() for p in adam.parameters()) == workload.plan["params_per_gpu"]
