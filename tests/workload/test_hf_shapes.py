"""Decoder shapes from transformers configs: counts equal the models transformers builds, and the
published totals; every family of `hf_config` reads; the front door takes shipped names and paths."""

import math

import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import MODELS
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.hf_config import decoder_shape, load_config, load_shipped, shipped_names

GIB = 2**30
NEW_SHAPES = ("llama3_8b", "llama3_70b", "llama3_405b", "mixtral_8x7b", "qwen2_72b", "deepseek_v3")
DECODERS = [name for name in shipped_names() if load_config(name)["model_type"] != "bert"]


def transformers_count(values: dict) -> int:
    """Parameters of the *ForCausalLM transformers builds from `values` on the meta device."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**{k: v for k, v in values.items() if not k.startswith("_")})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(parameter.numel() for parameter in model.parameters())


def last_digit(value: float) -> float:
    """One unit of the last significant digit of a published figure (8.03e9 -> 1e7)."""
    digits = next(d for d in range(1, 6) if float(f"{value:.{d}g}") == value)
    return 10 ** (math.floor(math.log10(value)) - digits + 1)


@pytest.mark.parametrize("name", DECODERS)
def test_shipped_counts_equal_the_transformers_model(name):
    values = load_config(name)
    assert decoder_shape(values).params() == transformers_count(values)


@pytest.mark.parametrize("name", [name for name in shipped_names() if "published_params" in load_shipped(name)])
def test_shipped_counts_match_the_published_totals(name):
    document = load_shipped(name)
    model = MODELS.make("hf", config=name)
    published = float(document["published_params"])
    assert abs(model.params() - published) < last_digit(published), document["source"]
    if "published_active_params" in document:
        active = float(document["published_active_params"])
        assert abs(model.decoder.active_params() - active) < last_digit(active)


def test_the_six_new_shapes_are_shipped_with_their_sources():
    assert set(NEW_SHAPES) <= set(shipped_names())
    for name in NEW_SHAPES:
        document = load_shipped(name)
        assert "config.json" in document["source"] and document["seq_len"] > 0 and document["published_params"]


def test_moe_and_attention_variants_are_read():
    mixtral = decoder_shape(load_config("mixtral_8x7b"))
    assert (mixtral.moe.experts, mixtral.moe.top_k, mixtral.moe.expert_ffn, mixtral.dense_layers) == (8, 2, 14336, 0)
    assert mixtral.kv_heads == 8 and mixtral.layer.gated_mlp and not mixtral.tied_embeddings
    deepseek = decoder_shape(load_config("deepseek_v3"))
    assert (deepseek.moe.experts, deepseek.moe.top_k, deepseek.moe.shared_ffn, deepseek.dense_layers) == \
        (256, 8, 2048, 3)
    assert deepseek.mla.kv_lora_rank == 512 and deepseek.layer.seq_len == 4096
    assert decoder_shape(load_config("qwen2_72b")).qkv_bias
    assert decoder_shape(load_config("gpt2")).tied_embeddings


SMALL = {
    "llama": dict(model_type="llama", hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128,
                  tie_word_embeddings=True),
    "mistral": dict(model_type="mistral", hidden_size=256, intermediate_size=768, num_hidden_layers=2,
                    num_attention_heads=8, num_key_value_heads=4, vocab_size=1000, max_position_embeddings=128),
    "qwen2": dict(model_type="qwen2", hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128),
    "mixtral": dict(model_type="mixtral", hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                    num_attention_heads=8, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                    vocab_size=1000, max_position_embeddings=128),
    "qwen2_moe": dict(model_type="qwen2_moe", hidden_size=256, intermediate_size=512, moe_intermediate_size=128,
                      shared_expert_intermediate_size=384, num_hidden_layers=2, num_attention_heads=8,
                      num_key_value_heads=2, num_experts=8, num_experts_per_tok=2, vocab_size=1000,
                      max_position_embeddings=128),
    "deepseek_v3": dict(model_type="deepseek_v3", hidden_size=256, intermediate_size=512, moe_intermediate_size=64,
                        num_hidden_layers=3, first_k_dense_replace=1, num_attention_heads=8, num_key_value_heads=8,
                        q_lora_rank=96, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
                        n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=2, n_group=2, topk_group=1,
                        vocab_size=1000, max_position_embeddings=128),
    "deepseek_v2": dict(model_type="deepseek_v2", hidden_size=256, intermediate_size=512, moe_intermediate_size=64,
                        num_hidden_layers=3, first_k_dense_replace=1, num_attention_heads=8, num_key_value_heads=8,
                        q_lora_rank=None, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
                        n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2, n_group=2, topk_group=1,
                        vocab_size=1000, max_position_embeddings=128),
    "gpt2": dict(model_type="gpt2", n_embd=128, n_layer=2, n_head=4, vocab_size=1000, n_positions=64),
}


@pytest.mark.parametrize("family", sorted(SMALL))
def test_every_family_reads_from_a_local_config_with_the_transformers_count(family, tmp_path):
    import transformers

    values = SMALL[family]
    transformers.AutoConfig.for_model(**values).save_pretrained(tmp_path)
    model = MODELS.make("hf", config=str(tmp_path), global_batch=8)
    assert model.params() == transformers_count(values)
    workload = model.build_workload(ParallelConfig(tensor=2, data=2, micro_batch=1, sequence_parallel=True,
                                                   expert=2 if model.decoder.moe else 1), 80 * GIB)
    assert workload.num_ranks == 4 and workload.plan["hf_config"] == str(tmp_path)


def test_unsupported_configs_say_why():
    with pytest.raises(ConfigError, match="model type .t5. is not supported; use one of llama"):
        decoder_shape({"model_type": "t5"})
    values = dict(SMALL["llama"], head_dim=64)
    with pytest.raises(ConfigError, match="config.head_dim"):
        decoder_shape(values)
    with pytest.raises(ConfigError, match="seq_len = 9000: exceeds the 8192 positions"):
        decoder_shape(load_config("llama3_8b"), seq_len=9000)


@pytest.mark.parametrize(("name", "values"), [
    ("llama3_70b", {"tensor": 8, "pipeline": 4, "virtual_stages": 5, "context": 2, "data": 2, "zero": 1,
                    "sequence_parallel": True, "micro_batch": 1}),
    ("llama3_405b", {"tensor": 8, "pipeline": 14, "context": 1, "data": 2, "zero": 1, "sequence_parallel": True,
                     "micro_batch": 1}),
    ("mixtral_8x7b", {"tensor": 2, "pipeline": 4, "data": 8, "expert": 8, "sequence_parallel": True,
                      "micro_batch": 1, "recompute": "full"}),
    ("qwen2_72b", {"tensor": 8, "pipeline": 4, "data": 2, "micro_batch": 1, "zero": 2}),
    ("deepseek_v3", {"tensor": 1, "data": 256, "expert": 256, "zero": 3, "micro_batch": 1})])
def test_shipped_shapes_train_with_modern_plans(name, values):
    model = MODELS.make("hf", config=name, global_batch=512)
    workload = model.build_workload(ParallelConfig(**values), 80 * GIB)
    assert workload.plan["memory_per_gpu_bytes"] <= 80 * GIB
    assert workload.num_ranks == values["tensor"] * values.get("context", 1) * values["data"] * values.get(
        "pipeline", 1)
