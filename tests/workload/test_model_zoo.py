"""hf architectures on the meta device, image-model sizes from layer shapes, TopoOpt List 1 models."""

import pytest

from ddlsim.compute.equivalent_registry import build_equivalent_shard
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import CollectiveOp
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.vision import architecture_params, gradient_bytes

GiB = 2**30


@pytest.mark.parametrize(("config", "params"), [
    ("bert-large-uncased", 336_226_108), ("gpt2", 124_439_808), ("llama-2-7b", 6_738_415_616),
    ("llama-3-8b", 8_030_261_248)])
def test_hf_counts_are_those_of_the_transformers_model(config, params):
    # totals of the transformers model classes (BertForPreTraining, *ForCausalLM) with these configs
    model = MODELS.make("hf", config=config)
    assert model.params() == params
    if model.decoder is None:
        assert model.transformer_model().params() == params == model.shapes.total_params


def test_hf_partition_and_output_layer():
    model = MODELS.make("hf", config="llama-2-7b", global_batch=64)
    workload = model.build_workload(ParallelConfig(max_gpus=64), 80 * GiB)
    plan = workload.plan
    assert plan["tp_degree"] == 8 and plan["params_per_gpu"] <= 1.6e9
    kinds = {t.signature.model_kind for t in workload.compute_tasks()}
    assert kinds == {"gpt_layer", "lm_head", "gpt_embedding", "adam_shard"}
    layer_sig = next(t.signature for t in workload.compute_tasks() if t.signature.model_kind == "gpt_layer")
    assert layer_sig.shape_dict["gated"] == 1 and layer_sig.shape_dict["kv_heads"] == 32
    names = {c.name for c in workload.collective_calls()}
    assert {"tp_embedding_all_reduce", "tp_cross_entropy_all_reduce", "tp_output_all_reduce"} <= names


def test_hf_llama_70b_needs_pipeline_parallelism_beyond_its_kv_heads():
    # Tensor parallelism stops at the 8 KV heads (8.6 B parameters per GPU > 1.6 B); 8 pipeline
    # stages bring every stage under the limit.
    model = MODELS.make("hf", config="llama-2-70b")
    with pytest.raises(InfeasibleError, match="divides the heads"):
        model.build_workload(ParallelConfig(), 80 * GiB)
    plan = model.build_workload(ParallelConfig(pipeline=8, max_gpus=64, micro_batch=1), 80 * GiB).plan
    assert (plan["tp_degree"], plan["pp_degree"]) == (8, 8) and plan["params_per_gpu"] <= 1.6e9


def test_hf_unknown_config_and_local_path(tmp_path):
    with pytest.raises(ConfigError, match="model.config"):
        MODELS.build({"name": "hf", "config": "not-a-model"})
    from transformers import GPT2Config

    GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1000, n_positions=64).save_pretrained(tmp_path)
    model = MODELS.make("hf", config=str(tmp_path), global_batch=8)
    assert model.decoder.layers == 2 and model.decoder.layer.seq_len == 64


@pytest.mark.parametrize(("name", "params"), [
    ("alexnet", 62_378_344), ("vgg16", 138_357_544), ("resnet50", 25_557_032)])
def test_image_models_have_their_published_sizes(name, params):
    assert architecture_params(name) == params
    assert gradient_bytes(name) == 4 * params and gradient_bytes(name, "fp16") == 2 * params


def test_beit_large_is_within_one_percent_of_wrht_figure():
    assert architecture_params("beit_large") == pytest.approx(307e6, rel=0.01)


@pytest.mark.parametrize("which", ["dlrm", "candle", "bert", "ncf", "resnet50", "vgg16"])
def test_topoopt_models_build_with_buildable_signatures(which):
    workload = MODELS.make("topoopt", model=which, num_servers=4).build_workload(ParallelConfig(), 80 * GiB)
    assert workload.num_ranks == 16 and workload.global_batch == 16 * workload.plan["local_batch"]
    ops = {c.op for c in workload.collective_calls()}
    assert CollectiveOp.ALL_REDUCE in ops
    assert (CollectiveOp.ALL_TO_ALL in ops) == (which in ("dlrm", "ncf"))
    for task in workload.compute_tasks():
        assert task.flop > 0
        build_equivalent_shard(task.signature, "meta")


def test_topoopt_dlrm_all_to_all_by_hand():
    workload = MODELS.make("topoopt", model="dlrm", num_servers=16).build_workload(ParallelConfig(), 80 * GiB)
    # 64 tables of 128 columns on 64 GPUs, one each, 128 samples per GPU, fp32
    assert workload.plan["all_to_all_bytes"] == 128 * 64 * 128 * 4
