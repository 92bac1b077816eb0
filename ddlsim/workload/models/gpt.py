"""`model=gpt`: a decoder-only GPT trained the Megatron-LM way: tensor, pipeline (1F1B or
interleaved), data, context, sequence parallelism, ZeRO, micro-batches and recompute (full by
default: the setting of the measured A100 runs in ``../shared/validation/vtrain``).

A GPT is the dense `ddlsim.workload.transformer.shape.DecoderShape` with learned positions and tied
embeddings; `ddlsim.workload.transformer` partitions it (`plan.py`) and lists its tasks (`blocks.py`:
the blocks of ONE micro-batch on one pipeline stage or model chunk, then the per-iteration
blocks, which the pipeline schedules of `ddlsim.training` lay out). With the defaults, per
micro-batch: the TP all-gather of the activation received from the previous stage (Megatron's
scatter-gather: each rank sends 1/t of it), the vocab-parallel embedding and its TP all-reduce
(stage 0), every layer with its two TP all-reduces (forward; again in the recompute and in
backward), the output layer with the cross-entropy's three all-reduces (last stage), the
stage-to-stage sends (b s h x 2 / t bytes); per iteration the data-parallel gradient
all-reduce per stage, the tied-embedding all-reduce (first and last stage), the found-inf and
gradient-norm all-reduces and Adam. Group layouts are those of one stage (`transformer/layout.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import Precision
from ddlsim.core.work import TaskBlock, Workload
from ddlsim.workload.feasibility import check_decoder_plan
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.blocks import KernelBytes, decoder_blocks
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.plan import DecoderPlan, partition_decoder
from ddlsim.workload.transformer.shape import DEFAULT_VOCAB_MULTIPLE, DecoderShape
from ddlsim.workload.transformer.workload import build_decoder_workload
from ddlsim.workload.transformer.workload import plan_fields as decoder_plan_fields

GPT2_VOCAB = 50257


@dataclass
class GptConfig:
    """A GPT by its shape. `global_batch` 0 means one micro-batch per data-parallel replica.

    `vocab_multiple`: Megatron pads the vocabulary to a multiple of this x tensor parallel.
    `grad_reduce_precision` ("" = `precision`): the type of the data-parallel gradient
    all-reduce. `scatter_gather_p2p`: stage-to-stage sends of 1/t of the activation plus an
    all-gather (Megatron's default) instead of the whole activation from every rank.
    `attention`: ``materialized`` (the default: Megatron-LM's fused-softmax path, as in the
    measured A100 runs of ``../shared/validation/vtrain``) or ``flash``.
    """

    name: str = "gpt"
    d_model: int = 1024
    heads: int = 16
    layers: int = 24
    seq_len: int = 1024
    ffn_hidden: int = 0
    vocab: int = GPT2_VOCAB
    vocab_multiple: int = DEFAULT_VOCAB_MULTIPLE
    tied_embeddings: bool = True
    global_batch: int = 512
    num_steps: int = 0
    precision: str = "fp16"
    grad_reduce_precision: str = ""
    scatter_gather_p2p: bool = True
    attention: str = "materialized"


@MODELS.register("gpt", GptConfig)
@dataclass(frozen=True)
class GptModel:
    """Decoder-only GPT (Megatron-LM): TP, CP, DP, PP (1F1B or interleaved), SP, ZeRO, recompute."""

    shape: DecoderShape
    global_batch: int
    num_steps: int
    precision: Precision
    grad_precision: Precision
    scatter_gather_p2p: bool = True
    name: str = "gpt"
    kernel_bytes: KernelBytes = field(default_factory=KernelBytes, compare=False, repr=False)

    @classmethod
    def from_config(cls, config: GptConfig) -> GptModel:
        for key in ("global_batch", "num_steps", "ffn_hidden"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0")
        layer = LayerShape(config.d_model, config.heads, config.seq_len, ffn_hidden=config.ffn_hidden, causal=True)
        shape = DecoderShape(layer, config.layers, config.vocab, config.vocab_multiple, config.tied_embeddings,
                             attention=config.attention)
        precision = parse_precision(config.precision)
        grad = parse_precision(config.grad_reduce_precision, "grad_reduce_precision") \
            if config.grad_reduce_precision else precision
        return cls(shape, config.global_batch, config.num_steps, precision, grad, config.scatter_gather_p2p,
                   config.name)

    @property
    def decoder(self) -> DecoderShape:
        """The decoder shape (as `model=hf` decoders name it)."""
        return self.shape

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        return build_decoder_workload(self.name, self.shape, parallel, memory_bytes, global_batch=self.global_batch,
                                      num_steps=self.num_steps, precision=self.precision,
                                      grad_precision=self.grad_precision, scatter_gather=self.scatter_gather_p2p,
                                      kernel_bytes=self.kernel_bytes)

    def check_plan(self, parallel: ParallelConfig, memory_bytes: int):
        """Whether `parallel` fits (rules and memory) without building tasks: a `PlanCheck`."""
        return check_decoder_plan(self.shape, parallel, memory_bytes, self.global_batch, self.precision,
                                  self.grad_precision)


def gpt_blocks(plan: DecoderPlan, precision: Precision, grad_precision: Precision, parallel: ParallelConfig,
               scatter_gather: bool = True) -> tuple[TaskBlock, ...]:
    """One micro-batch on one stage, then the per-iteration blocks (`ddlsim.workload.transformer.blocks`)."""
    del parallel  # the plan carries the recompute policy and sequence parallelism
    return decoder_blocks(plan, precision, grad_precision, scatter_gather)


def plan_fields(plan: DecoderPlan, precision: Precision, grad_precision: Precision,
                parallel: ParallelConfig | None = None) -> dict[str, object]:
    return decoder_plan_fields(plan, precision, grad_precision)


__all__ = ["GPT2_VOCAB", "GptConfig", "GptModel", "gpt_blocks", "partition_decoder", "plan_fields"]
