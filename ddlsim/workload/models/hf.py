"""`model=hf`: a transformers architecture by its config: a shipped shape or a local config.

`config` names a shipped shape (``configs/hf_shapes/<name>.yaml``: ``llama3_8b``,
``llama3_70b``, ``llama3_405b``, ``mixtral_8x7b``, ``qwen2_72b``, ``deepseek_v3`` and the earlier
``bert-*``, ``gpt2*``, ``llama-2-*``, ``llama-3-*``) or is a path to a local directory or
``config.json``; nothing is downloaded. The config is read once, when the model is built.

Decoders (Llama, Mistral, Qwen2, Mixtral, Qwen2-MoE, DeepSeek-V2/V3, GPT-2; `transformer/hf_config.py`)
become a `DecoderShape` by arithmetic and are partitioned like `model=gpt` with every parallelism
of `parallel` (TP, CP, DP, PP with virtual stages, EP, SP, ZeRO, recompute). BERT is built with
transformers on the meta device, so its parameter count is exact, and is built by the
Megatron-2021 flavour of the same generator (TP x DP filling memory, `build_megatron2021_workload`):
word embeddings vocab-parallel, other non-layer parameters replicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.workload.feasibility import PlanCheck, check_decoder_plan
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.parallel import ParallelConfig, reject_unsupported, with_legacy_checkpointing
from ddlsim.workload.transformer.blocks import KernelBytes
from ddlsim.workload.transformer.hf_config import ENCODER_FAMILIES, decoder_shape, load_config, training_seq_len
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.megatron2021_plan import Megatron2021Model
from ddlsim.workload.transformer.shape import DecoderShape
from ddlsim.workload.transformer.stack import TransformerStack
from ddlsim.workload.transformer.workload import build_decoder_workload, build_megatron2021_workload

MEGATRON_OPTIONS = ("tensor", "data", "micro_batch", "sequence_parallel", "activation_offload")


@dataclass(frozen=True)
class HfShapes:
    """What the meta-device encoder says: the layer stack and how its other parameters split."""

    stack: TransformerStack
    vocab: int
    vocab_parallel_params: int
    replicated_params: int
    total_params: int


def hf_shapes(name: str, seq_len: int = 0) -> HfShapes:
    """Build the BERT `name` with transformers on the meta device and read its shapes (once per process)."""
    memo = PROCESS_CACHES.memo("hf shapes", maxsize=32)
    return memo.get_or_make((name, seq_len), lambda: _read_shapes(name, seq_len))


def _read_shapes(name: str, seq_len: int) -> HfShapes:
    import torch
    import transformers

    values = load_config(name)
    if values.get("model_type") != "bert":
        raise ConfigError("config", name, "hf_shapes reads BERT encoders; decoders are read by arithmetic "
                                          "(ddlsim.workload.transformer.hf_config.decoder_shape)")
    values = {key: value for key, value in values.items() if not key.startswith("_")}
    config = transformers.BertConfig(**values)
    seq_len = training_seq_len(values, seq_len)
    layer = LayerShape(config.hidden_size, config.num_attention_heads, seq_len, ffn_hidden=config.intermediate_size)
    with torch.device("meta"):
        model = transformers.BertForPreTraining(config)
    blocks = model.bert.encoder.layer
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
    return HfShapes(TransformerStack(layer, config.num_hidden_layers), config.vocab_size, vocab_parallel, replicated,
                    total)


@dataclass
class HfModelConfig:
    """A transformers architecture: `config` is a shipped shape or a local config path.

    `seq_len` 0 uses the shipped shape's pre-training length, else the model's maximum
    positions. There is no scaling law for these models, so the global batch is given and
    `num_steps` (0: unknown) is passed through. `capacity_factor` (MoE; 0: dropless, uniform
    routing) pads every expert's tokens to that multiple of its uniform share. `attention`
    (decoders): ``flash`` (the default: what today's stacks run) or ``materialized``.
    """

    name: str = "hf"
    config: str = "bert-large-uncased"
    seq_len: int = 0
    global_batch: int = 256
    num_steps: int = 0
    precision: str = "fp16"
    capacity_factor: float = 0.0
    attention: str = "flash"


@MODELS.register("hf", HfModelConfig)
@dataclass(frozen=True)
class HfTransformer:
    """A transformers architecture (Llama, Mistral, Qwen2, Mixtral, DeepSeek-V3, GPT-2, BERT) by its config."""

    config_name: str
    shapes: HfShapes | None
    global_batch: int
    num_steps: int
    precision: Precision
    name: str = "hf"
    decoder: DecoderShape | None = None
    kernel_bytes: KernelBytes = field(default_factory=KernelBytes, compare=False, repr=False)

    @classmethod
    def from_config(cls, config: HfModelConfig) -> HfTransformer:
        for key in ("seq_len", "num_steps"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0")
        if config.global_batch < 1:
            raise ConfigError("global_batch", config.global_batch, "must be >= 1")
        if not config.capacity_factor >= 0:
            raise ConfigError("capacity_factor", config.capacity_factor, "must be >= 0 (0: dropless)")
        precision = parse_precision(config.precision)
        values = load_config(config.config)
        if values.get("model_type") in ENCODER_FAMILIES:
            return cls(config.config, hf_shapes(config.config, config.seq_len), config.global_batch,
                       config.num_steps, precision, config.name)
        shape = decoder_shape(values, config.seq_len, config.capacity_factor, source=config.config,
                              attention=config.attention)
        return cls(config.config, None, config.global_batch, config.num_steps, precision, config.name, shape)

    def transformer_model(self) -> Megatron2021Model:
        """The encoder as the Megatron-2021 flavour of the generator sees it (BERT only)."""
        if self.shapes is None:
            raise ConfigError("config", self.config_name, "is a decoder: see `decoder` (a DecoderShape)")
        s = self.shapes
        return Megatron2021Model(s.stack, s.vocab, s.vocab_parallel_params, s.replicated_params)

    def params(self) -> int:
        return self.decoder.params() if self.decoder is not None else self.transformer_model().params()

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        name = f"{self.name}:{self.config_name}"
        if self.decoder is not None:
            workload = build_decoder_workload(name, self.decoder, parallel, memory_bytes,
                                              global_batch=self.global_batch, num_steps=self.num_steps,
                                              precision=self.precision, grad_precision=self.precision,
                                              kernel_bytes=self.kernel_bytes)
        else:
            reject_unsupported(parallel, f"hf ({self.config_name}, an encoder)", MEGATRON_OPTIONS, ("none", "full"))
            workload = build_megatron2021_workload(name, self.transformer_model(), None,
                                                   with_legacy_checkpointing(parallel), memory_bytes,
                                                   global_batch=self.global_batch, num_steps=self.num_steps,
                                                   precision=self.precision, kernel_bytes=self.kernel_bytes)
        workload.plan["hf_config"] = self.config_name  # type: ignore[index]
        return workload

    def check_plan(self, parallel: ParallelConfig, memory_bytes: int) -> PlanCheck:
        """Whether `parallel` fits (rules and memory) without building tasks (decoders)."""
        if self.decoder is None:
            raise ConfigError("config", self.config_name, "check_plan covers decoders; build the workload instead")
        return check_decoder_plan(self.decoder, parallel, memory_bytes, self.global_batch, self.precision)


def known_config(name: str) -> dict[str, Any]:
    """The transformers config values of a shipped shape (for tests and examples)."""
    return {key: value for key, value in load_config(name).items() if not key.startswith("_")}
