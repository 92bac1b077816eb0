"""`model=hf`: a standard transformers architecture, its shapes read from the real model built on
the meta device (no weights, no download), partitioned the Megatron way.

`config` names a known architecture whose hyper-parameters are written here (from the public
model cards) or is a path to a local directory or ``config.json``. The model is built with
transformers on the meta device, so parameter counts are exact; each layer's count is checked
against the Megatron layer arithmetic (`LayerShape`), so the tensor-parallel shard is the one
transformers would hold. Word embeddings (and an untied output layer) are vocab-parallel; other
non-layer parameters (position and token-type embeddings, final norm, pooler, heads) are
replicated. Supported families: BERT, GPT-2, Llama.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ddlsim.errors import ConfigError
from ddlsim.registry import MODELS
from ddlsim.types import Precision, Workload
from ddlsim.workload.architecture import TransformerStack
from ddlsim.workload.megatron_partition import TransformerModel
from ddlsim.workload.megatron_tasks import build_megatron_workload
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer_layer import LayerShape

_BERT_VOCAB, _GPT2_VOCAB, _LLAMA2_VOCAB, _LLAMA3_VOCAB = 30522, 50257, 32000, 128256

KNOWN_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "bert-base-uncased": ("bert", dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                       intermediate_size=3072, vocab_size=_BERT_VOCAB, max_position_embeddings=512)),
    "bert-large-uncased": ("bert", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                        intermediate_size=4096, vocab_size=_BERT_VOCAB, max_position_embeddings=512)),
    "gpt2": ("gpt2", dict(n_embd=768, n_layer=12, n_head=12, vocab_size=_GPT2_VOCAB, n_positions=1024)),
    "gpt2-medium": ("gpt2", dict(n_embd=1024, n_layer=24, n_head=16, vocab_size=_GPT2_VOCAB, n_positions=1024)),
    "gpt2-large": ("gpt2", dict(n_embd=1280, n_layer=36, n_head=20, vocab_size=_GPT2_VOCAB, n_positions=1024)),
    "gpt2-xl": ("gpt2", dict(n_embd=1600, n_layer=48, n_head=25, vocab_size=_GPT2_VOCAB, n_positions=1024)),
    "llama-2-7b": ("llama", dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                 num_attention_heads=32, num_key_value_heads=32, vocab_size=_LLAMA2_VOCAB,
                                 max_position_embeddings=4096)),
    "llama-2-13b": ("llama", dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                                  num_attention_heads=40, num_key_value_heads=40, vocab_size=_LLAMA2_VOCAB,
                                  max_position_embeddings=4096)),
    "llama-2-70b": ("llama", dict(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                                  num_attention_heads=64, num_key_value_heads=8, vocab_size=_LLAMA2_VOCAB,
                                  max_position_embeddings=4096)),
    "llama-3-8b": ("llama", dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                 num_attention_heads=32, num_key_value_heads=8, vocab_size=_LLAMA3_VOCAB,
                                 max_position_embeddings=8192, rope_theta=500000.0)),
    "llama-3-70b": ("llama", dict(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                                  num_attention_heads=64, num_key_value_heads=8, vocab_size=_LLAMA3_VOCAB,
                                  max_position_embeddings=8192, rope_theta=500000.0)),
}


def _transformers_config(name: str) -> Any:
    import transformers

    if name in KNOWN_CONFIGS:
        family, params = KNOWN_CONFIGS[name]
        classes = {"bert": transformers.BertConfig, "gpt2": transformers.GPT2Config, "llama": transformers.LlamaConfig}
        return classes[family](**params)
    path = Path(name).expanduser()
    if path.is_file() or (path.is_dir() and (path / "config.json").is_file()):
        return transformers.AutoConfig.from_pretrained(str(path if path.is_dir() else path.parent),
                                                       local_files_only=True)
    raise ConfigError("config", name, f"is neither a known architecture ({', '.join(KNOWN_CONFIGS)}) "
                                      "nor a local directory or config.json")


def _layer_shape(config: Any, seq_len: int, name: str) -> tuple[LayerShape, int]:
    kind = config.model_type
    if kind == "bert":
        return LayerShape(config.hidden_size, config.num_attention_heads, seq_len,
                          ffn_hidden=config.intermediate_size), config.num_hidden_layers
    if kind == "gpt2":
        return LayerShape(config.n_embd, config.n_head, seq_len, ffn_hidden=config.n_inner or 4 * config.n_embd,
                          causal=True), config.n_layer
    if kind == "llama":
        return LayerShape(config.hidden_size, config.num_attention_heads, seq_len,
                          ffn_hidden=config.intermediate_size, kv_heads=config.num_key_value_heads, causal=True,
                          gated_mlp=True, bias=bool(config.attention_bias), rmsnorm=True,
                          dropout=config.attention_dropout > 0), config.num_hidden_layers
    raise ConfigError("config", name, f"model type {kind!r} is not supported; use a BERT, GPT-2 or Llama config")


def _max_positions(config: Any) -> int:
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 0)


@dataclass(frozen=True)
class HfShapes:
    """What the meta-device model says: the layer stack and how its other parameters split."""

    stack: TransformerStack
    vocab: int
    vocab_parallel_params: int
    replicated_params: int
    total_params: int


@lru_cache(maxsize=32)
def hf_shapes(name: str, seq_len: int = 0) -> HfShapes:
    """Build `name` with transformers on the meta device and read its shapes (cached)."""
    import torch
    import transformers

    config = _transformers_config(name)
    seq_len = seq_len or _max_positions(config)
    if seq_len > _max_positions(config):
        raise ConfigError("seq_len", seq_len, f"exceeds the {_max_positions(config)} positions of {name}")
    layer, layers = _layer_shape(config, seq_len, name)
    with torch.device("meta"):
        if config.model_type == "bert":
            model = transformers.BertForPreTraining(config)
            blocks = model.bert.encoder.layer
        else:
            model = transformers.AutoModelForCausalLM.from_config(config)
            blocks = model.transformer.h if config.model_type == "gpt2" else model.model.layers
    per_layer = [sum(p.numel() for p in block.parameters()) for block in blocks]
    if any(count != layer.params() for count in per_layer):
        raise ConfigError("config", name, f"layer has {per_layer[0]:,} parameters but the Megatron layer "
                                          f"arithmetic gives {layer.params():,}; this variant is not supported")
    in_layers = {id(p) for block in blocks for p in block.parameters()}
    vocab_parallel = replicated = 0
    for parameter in model.parameters():  # shared (tied) parameters are listed once
        if id(parameter) in in_layers:
            continue
        if parameter.shape[0] == config.vocab_size:
            vocab_parallel += parameter.numel()
        else:
            replicated += parameter.numel()
    total = sum(p.numel() for p in model.parameters())
    return HfShapes(TransformerStack(layer, layers), config.vocab_size, vocab_parallel, replicated, total)


@dataclass
class HfModelConfig:
    """A transformers architecture: `config` is a known name or a local config path.

    `seq_len` 0 uses the model's maximum positions. There is no scaling law for these models,
    so the global batch is given and `num_steps` (0: unknown) is passed through.
    """

    name: str = "hf"
    config: str = "bert-large-uncased"
    seq_len: int = 0
    global_batch: int = 256
    num_steps: int = 0
    precision: str = "fp16"


@MODELS.register("hf", HfModelConfig)
@dataclass(frozen=True)
class HfTransformer:
    """A BERT, GPT-2 or Llama architecture from transformers, partitioned the Megatron way."""

    config_name: str
    shapes: HfShapes
    global_batch: int
    num_steps: int
    precision: Precision
    name: str = "hf"

    @classmethod
    def from_config(cls, config: HfModelConfig) -> HfTransformer:
        for key in ("seq_len", "num_steps"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0")
        if config.global_batch < 1:
            raise ConfigError("global_batch", config.global_batch, "must be >= 1")
        precision = parse_precision(config.precision)
        shapes = hf_shapes(config.config, config.seq_len)
        return cls(config.config, shapes, config.global_batch, config.num_steps, precision, config.name)

    def transformer_model(self) -> TransformerModel:
        s = self.shapes
        return TransformerModel(s.stack, s.vocab, s.vocab_parallel_params, s.replicated_params)

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        workload = build_megatron_workload(f"{self.name}:{self.config_name}", self.transformer_model(), None, parallel,
                                           memory_bytes, global_batch=self.global_batch, num_steps=self.num_steps,
                                           precision=self.precision)
        workload.plan["hf_config"] = self.config_name
        return workload
