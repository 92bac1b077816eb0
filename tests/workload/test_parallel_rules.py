"""Every rule of a parallel plan raises a ConfigError naming its key; no model ignores an option."""

import pytest
from llm_fixtures import GIB, build, llama_like, mixtral_like

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.workload.feasibility import check_plan
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.layout import ParallelLayout

# ---- ParallelConfig on its own ---------------------------------------------------------------------


@pytest.mark.parametrize(("values", "key", "rule"), [
    ({"zero": 4}, "zero", "must be 0"),
    ({"expert": 0}, "expert", "must be >= 1"),
    ({"context": 0}, "context", "must be >= 1"),
    ({"virtual_stages": 2}, "virtual_stages", "needs pipeline > 1"),
    ({"recompute": "some"}, "recompute", "must be one of none, selective, full"),
    ({"first_stage_layers": -1}, "first_stage_layers", "must be >= 0"),
    ({"main_grads_dtype": "fp8"}, "main_grads_dtype", "must be one of fp32, bf16, fp16"),
    ({"recompute": "full", "activation_checkpointing": False}, "recompute", "contradicts activation_checkpointing"),
    ({"recompute": "selective", "activation_offload": True}, "activation_offload", "needs recompute = full"),
    ({"tensor": 4, "data": 4, "pipeline": 2, "gpus": 64}, "gpus", "must equal tensor x context x data x pipeline"),
    ({"tensor": 3, "gpus": 64}, "gpus", "must equal tensor x context x data x pipeline"),
    ({"tensor": 8, "context": 4, "max_gpus": 16}, "max_gpus", "smaller than tensor x context x data x pipeline"),
])
def test_parallel_config_rules(values, key, rule):
    with pytest.raises(ConfigError, match=rule) as error:
        ParallelConfig(**values)
    assert error.value.key == key


def test_recompute_follows_the_older_activation_checkpointing_key():
    assert ParallelConfig().recompute_policy == "full"
    assert ParallelConfig(activation_checkpointing=False).recompute_policy == "none"
    assert ParallelConfig(recompute="selective").recompute_policy == "selective"
    assert ParallelConfig(recompute="none").recompute_policy == "none"


def test_parallel_keys_compose_from_the_command_line():
    import ddlsim

    components = ddlsim.build_components(["parallel.zero=3", "parallel.expert=2", "parallel.context=2",
                                          "parallel.pipeline=2", "parallel.virtual_stages=2",
                                          "parallel.recompute=selective", "parallel.gpus=64"])
    parallel = components.parallel
    values = (parallel.zero, parallel.expert, parallel.context, parallel.virtual_stages, parallel.gpus)
    assert values == (3, 2, 2, 2, 64)
    with pytest.raises(ConfigError, match="parallel.zero = 5"):
        ddlsim.build_components(["parallel.zero=5"])


# ---- the rules of a decoder plan ----------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "values", "key", "rule"), [
    (llama_like, {"tensor": 8}, "parallel.tensor", "must divide the 16 attention heads and the 4 KV heads"),
    (llama_like, {"tensor": 3}, "parallel.tensor", "must divide the 16 attention heads"),
    (mixtral_like, {"tensor": 1, "data": 4, "expert": 3}, "parallel.expert", "must divide the 8 experts"),
    (mixtral_like, {"tensor": 1, "data": 2, "expert": 4}, "parallel.expert", "must divide data x context = 2 x 1"),
    (llama_like, {"tensor": 1, "data": 2, "expert": 2}, "parallel.expert", "the model is dense"),
    (llama_like, {"tensor": 1, "context": 3}, "parallel.context", "sequence of 2048 tokens into 2 x context"),
    (llama_like, {"tensor": 1, "pipeline": 2, "virtual_stages": 3}, "parallel.virtual_stages",
     "cannot split the 8 layers over pipeline 2 x virtual_stages 3 as Megatron-Core can"),
    (llama_like, {"tensor": 1, "pipeline": 4, "first_stage_layers": 3}, "parallel.first_stage_layers",
     "the middle 3 stages must split the other 5 layers evenly"),
    (llama_like, {"tensor": 1, "pipeline": 2, "first_stage_layers": 4, "last_stage_layers": 3},
     "parallel.last_stage_layers", "leaves 1 of the 8 layers for 0 middle stages"),
    (llama_like, {"tensor": 1, "pipeline": 2, "virtual_stages": 2, "first_stage_layers": 3},
     "parallel.first_stage_layers", "must be a multiple of virtual_stages = 2"),
    (llama_like, {"tensor": 1, "last_stage_layers": 2}, "parallel.last_stage_layers", "needs pipeline > 1"),
    (llama_like, {"tensor": 1, "data": 1, "pipeline": 4, "virtual_stages": 2, "micro_batch": 1},
     "parallel.virtual_stages", "multiple of pipeline = 4"),
    (mixtral_like, {"tensor": 2, "data": 2, "expert": 2}, "parallel.sequence_parallel", "MoE model with tensor"),
])
def test_decoder_plan_rules(shape, values, key, rule):
    with pytest.raises(ConfigError, match=rule) as error:
        build(shape(), 2, **values)
    assert error.value.key == key


def test_product_of_degrees_equals_the_gpus():
    # gpus fixes the job: data is derived from it, and tensor x context x data x pipeline = gpus.
    workload = build(llama_like(), 64, tensor=2, context=2, pipeline=2, gpus=64, micro_batch=1)
    plan = workload.plan
    assert (plan["tp_degree"], plan["cp_degree"], plan["dp_degree"], plan["pp_degree"]) == (2, 2, 8, 2)
    assert plan["num_gpus"] == workload.num_ranks == 64


def test_explicit_degrees_are_honoured_by_gpt_and_hf():
    parallel = ParallelConfig(tensor=4, data=16, micro_batch=1)
    for model in (MODELS.make("gpt", global_batch=64), MODELS.make("hf", config="llama3_8b", global_batch=64)):
        plan = model.build_workload(parallel, 80 * GIB).plan
        assert (plan["tp_degree"], plan["dp_degree"], plan["num_gpus"]) == (4, 16, 64)


def test_group_layouts_follow_megatron_core_rank_order():
    # TP fastest, then CP, then DP, then PP; EP carved out of DP x CP, right after TP.
    layout = ParallelLayout(tp=2, cp=2, dp=4, pp=2, ep=4)
    assert layout.tensor().ranks(0) == (0, 1)
    assert layout.context().ranks(0) == (0, 2)
    assert layout.data().ranks(1) == (1, 3, 5, 7, 9, 11, 13, 15)  # DP x CP ranks of TP rank 1
    assert layout.expert().ranks(0) == (0, 2, 4, 6)
    assert layout.expert_data().ranks(0) == (0, 8)
    assert layout.pipeline().ranks(0) == (0, 16)
    assert layout.pipeline_pair().ranks(0) == (0, 16)


# ---- models that cannot honour an option refuse it ------------------------------------------------------


@pytest.mark.parametrize(("model", "values", "key"), [
    (("megatron", {}), {"zero": 1}, "parallel.zero"),
    (("megatron", {}), {"context": 2}, "parallel.context"),
    (("megatron", {}), {"expert": 2}, "parallel.expert"),
    (("megatron", {}), {"recompute": "selective"}, "parallel.recompute"),
    (("megatron", {}), {"gpus": 64}, "parallel.gpus"),
    (("dlrm", {"num_gpus": 16}), {"zero": 2}, "parallel.zero"),
    (("dlrm", {"num_gpus": 16}), {"pipeline": 2}, "parallel.pipeline"),
    (("dlrm", {"num_gpus": 16}), {"recompute": "full"}, "parallel.recompute"),
    (("topoopt", {"model": "bert", "num_servers": 4}), {"tensor": 4, "data": 16}, "parallel.tensor"),
    (("topoopt", {"model": "resnet50", "num_servers": 4}), {"data": 64}, "parallel.data"),
    (("topoopt", {"model": "ncf", "num_servers": 4}), {"sequence_parallel": True}, "parallel.sequence_parallel"),
    (("hf", {"config": "bert-base-uncased"}), {"pipeline": 2}, "parallel.pipeline"),
    (("hf", {"config": "bert-base-uncased"}), {"zero": 3}, "parallel.zero"),
])
def test_models_refuse_options_they_cannot_honour(model, values, key):
    name, options = model
    with pytest.raises(ConfigError) as error:
        MODELS.make(name, **options).build_workload(ParallelConfig(**values), 80 * GIB)
    assert error.value.key == key


@pytest.mark.parametrize("model", [("megatron", {"d_model": 1024, "heads": 16, "layers": 8}),
                                   ("hf", {"config": "bert-base-uncased"})])
def test_megatron_encoders_honour_recompute_none_and_full(model):
    name, options = model
    built = {policy: MODELS.make(name, **options).build_workload(
        ParallelConfig(tensor=1, data=2, micro_batch=4, recompute=policy), 80 * GIB) for policy in ("none", "full")}
    assert not built["none"].plan["activation_checkpointing"] and built["full"].plan["activation_checkpointing"]
    assert built["none"].plan["memory_per_gpu_bytes"] > built["full"].plan["memory_per_gpu_bytes"]
    assert not any(task.name == "layer_recompute" for task in built["none"].compute_tasks())


def test_topoopt_honours_data_and_micro_batch():
    model = MODELS.make("topoopt", model="resnet50", num_servers=4)
    workload = model.build_workload(ParallelConfig(data=16, micro_batch=32), 80 * GIB)
    assert (workload.num_ranks, workload.plan["local_batch"]) == (16, 32)


# ---- feasibility without pricing ----------------------------------------------------------------------


def test_check_plan_says_what_does_not_fit_and_by_how_much():
    model = MODELS.make("hf", config="llama3_70b", global_batch=64)
    fits = check_plan(model, ParallelConfig(tensor=8, pipeline=8, data=1, micro_batch=1), 80 * GIB)
    assert fits.feasible and fits.kind == "ok" and fits.memory_per_gpu_bytes <= 80 * GIB and fits.num_gpus == 64
    too_big = check_plan(model, ParallelConfig(tensor=8, data=8, micro_batch=1), 80 * GIB)
    assert not too_big.feasible and too_big.kind == "memory" and too_big.over_bytes > 0
    assert "pipeline stage 0 needs" in too_big.reason and "more than the device's" in too_big.reason
    broken = check_plan(model, ParallelConfig(tensor=16, data=4), 80 * GIB)
    assert broken.kind == "config" and "parallel.tensor = 16" in broken.reason
    with pytest.raises(InfeasibleError, match="more than the device's"):
        model.build_workload(ParallelConfig(tensor=8, data=8, micro_batch=1), 80 * GIB)


@pytest.mark.parametrize("values", [
    {"tensor": 8, "data": 8, "micro_batch": 1}, {"tensor": 8, "pipeline": 4, "data": 2, "micro_batch": 1, "zero": 1},
    {"tensor": 4, "pipeline": 8, "virtual_stages": 2, "data": 2, "micro_batch": 1},
    {"tensor": 8, "context": 2, "pipeline": 4, "data": 1, "micro_batch": 1, "zero": 3},
    {"tensor": 2, "data": 32, "zero": 3, "micro_batch": 1, "recompute": "selective"}])
def test_check_plan_agrees_with_building_the_workload(values):
    model = MODELS.make("hf", config="llama3_70b", global_batch=64)
    parallel = ParallelConfig(**values)
    check = check_plan(model, parallel, 80 * GIB)
    try:
        workload = model.build_workload(parallel, 80 * GIB)
    except (ConfigError, InfeasibleError) as error:
        assert not check.feasible and check.reason == str(error)
    else:
        assert check.feasible and check.memory_per_gpu_bytes == workload.plan["memory_per_gpu_bytes"]


def test_check_plan_covers_other_models_by_building_them():
    model = MODELS.make("megatron", target_loss=2.5)
    assert check_plan(model, ParallelConfig(), 80 * GIB).feasible
    refused = check_plan(model, ParallelConfig(zero=1), 80 * GIB)
    assert refused.kind == "config" and "parallel.zero" in refused.reason
