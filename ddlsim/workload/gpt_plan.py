"""Megatron's 3D partition of a decoder-only GPT: tensor, pipeline and data parallel degrees,
micro-batches, and the parameters and memory of every pipeline stage.

Megatron-LM's conventions (Shoeybi et al. 2019; Narayanan et al. 2021, "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM"):

- ranks are ordered tensor-parallel first, then data-parallel, then pipeline stage:
  rank = stage x (t x d) + replica x t + tp_rank, so a tensor-parallel group is t consecutive
  ranks (inside one node when t <= GPUs per node) and a stage is t x d consecutive ranks;
- the layers split evenly over the stages (layers % pipeline == 0);
- the first stage holds the word and position embeddings, the last stage the final norm and the
  output layer; with tied embeddings (GPT) the output layer reuses the word embedding, so with
  more than one stage the last stage keeps a copy and the two copies' gradients are all-reduced;
- the vocabulary is padded to a multiple of `vocab_multiple` x t (Megatron's
  ``make_vocab_size_divisible_by``, 128 by default) and split over the tensor-parallel group;
- the global batch is data-parallel degree x micro-batch x micro-batches.

Memory per GPU (`InfeasibleError` when a stage does not fit): model states of 16 bytes per
parameter (`megatron_partition.MODEL_STATE_BYTES_PER_PARAM`) plus activations under 1F1B:
stage s holds at most min(pipeline - s, micro-batches) micro-batches in flight (Narayanan et al.
Sec. 2.2.1), each keeping its layers' checkpoints with full recomputation, plus the working
activations of one layer (`LayerShape.activation_bytes`), plus on the last stage the fp32
logits of one micro-batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim import units
from ddlsim.errors import ConfigError, InfeasibleError
from ddlsim.workload.megatron_partition import LOGIT_BYTES, MODEL_STATE_BYTES_PER_PARAM
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer_layer import ACTIVATION_BYTES, LayerShape

DEFAULT_VOCAB_MULTIPLE = 128


@dataclass(frozen=True)
class GptShape:
    """A decoder-only GPT: `layers` causal layers, word (and learned position) embeddings."""

    layer: LayerShape
    layers: int
    vocab: int
    vocab_multiple: int = DEFAULT_VOCAB_MULTIPLE
    tied_embeddings: bool = True
    position_embeddings: bool = True

    def __post_init__(self) -> None:
        for key in ("layers", "vocab", "vocab_multiple"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(key, value, "must be an integer >= 1")
        if not self.layer.causal:
            raise ConfigError("causal", self.layer.causal, "a GPT layer is causal")

    def padded_vocab(self, tp: int) -> int:
        multiple = self.vocab_multiple * tp
        return math.ceil(self.vocab / multiple) * multiple

    def local_vocab(self, tp: int) -> int:
        return self.padded_vocab(tp) // tp

    def embedding_params_per_rank(self, tp: int) -> int:
        """Word embedding rows of one rank plus the (replicated) position embeddings."""
        positions = self.layer.seq_len * self.layer.d_model if self.position_embeddings else 0
        return self.local_vocab(tp) * self.layer.d_model + positions

    def head_params_per_rank(self, tp: int, pipeline: int) -> int:
        """Final norm plus the output layer's own copy when it is untied or on another stage."""
        norm = self.layer.norm_params() // 2
        own_output = not self.tied_embeddings or pipeline > 1
        return norm + (self.local_vocab(tp) * self.layer.d_model if own_output else 0)

    def params(self) -> int:
        """All parameters (padded vocabulary at t = 1, one copy of tied embeddings)."""
        head = self.head_params_per_rank(1, 1)
        return self.layers * self.layer.params() + self.embedding_params_per_rank(1) + head

    def stage_params_per_rank(self, stage: int, tp: int, pipeline: int) -> int:
        params = (self.layers // pipeline) * self.layer.params_per_rank(tp)
        if stage == 0:
            params += self.embedding_params_per_rank(tp)
        if stage == pipeline - 1:
            params += self.head_params_per_rank(tp, pipeline)
        return params


@dataclass(frozen=True)
class GptPlan:
    shape: GptShape
    tp: int
    pp: int
    dp: int
    micro_batch: int
    micro_batches: int
    stage_params: tuple[int, ...]
    stage_memory_bytes: tuple[int, ...]

    @property
    def layers_per_stage(self) -> int:
        return self.shape.layers // self.pp

    @property
    def global_batch(self) -> int:
        return self.dp * self.micro_batch * self.micro_batches

    @property
    def stage_ranks(self) -> int:
        return self.tp * self.dp

    @property
    def num_gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def params_per_gpu(self) -> int:
        return max(self.stage_params)

    @property
    def memory_per_gpu_bytes(self) -> int:
        return max(self.stage_memory_bytes)


def stage_activation_bytes(shape: GptShape, stage: int, tp: int, pp: int, micro_batch: int, micro_batches: int,
                           parallel: ParallelConfig) -> float:
    """Peak activation bytes of one rank of `stage` under 1F1B (see the module docstring)."""
    layer, sp = shape.layer, parallel.sequence_parallel
    lps = shape.layers // pp
    in_flight = min(pp - stage, micro_batches)
    working = layer.activation_bytes(micro_batch, tp, sp)
    if parallel.activation_checkpointing:
        kept = 0.0 if parallel.activation_offload else in_flight * lps * layer.checkpoint_bytes(micro_batch, tp, sp)
        total = kept + working
    else:
        total = in_flight * lps * working
    if stage == pp - 1:
        total += micro_batch * layer.seq_len * (LOGIT_BYTES * shape.local_vocab(tp) + ACTIVATION_BYTES * layer.d_model)
    return total


def _choose_tp(shape: GptShape, parallel: ParallelConfig) -> int:
    if parallel.tensor:
        return parallel.tensor
    tp, cap, pp = 1, parallel.max_gpus // parallel.pipeline, parallel.pipeline
    layer = shape.layer
    while tp <= cap:
        divides = layer.heads % tp == 0 and layer.kv_heads % tp == 0 and layer.ffn_hidden % tp == 0
        if divides and max(shape.stage_params_per_rank(s, tp, pp) for s in range(pp)) <= parallel.param_limit_per_gpu:
            return tp
        tp *= 2
    raise InfeasibleError(f"no tensor-parallel degree up to max_gpus / pipeline = {cap} brings every stage "
                          f"under {parallel.param_limit_per_gpu:.4g} parameters per GPU")


def _choose_dp(parallel: ParallelConfig, tp: int, micro_batch: int, global_batch: int) -> int:
    if parallel.data:
        return parallel.data
    cap = parallel.max_gpus // (tp * parallel.pipeline)
    if global_batch:
        cap = min(cap, global_batch // micro_batch)
    if cap < 1:
        raise InfeasibleError(f"no data-parallel replica fits: max_gpus {parallel.max_gpus}, tensor {tp}, "
                              f"pipeline {parallel.pipeline}, global batch {global_batch}, micro-batch {micro_batch}")
    dp = 1 << (cap.bit_length() - 1)
    while global_batch and (global_batch // micro_batch) % dp:
        dp //= 2
    return dp


def partition_gpt(shape: GptShape, parallel: ParallelConfig, memory_bytes: int, global_batch: int = 0) -> GptPlan:
    """Degrees, micro-batches and per-stage memory; `global_batch` 0 means one micro-batch per replica.

    Degrees left at 0 are chosen: tensor parallel as in the Megatron partitioner (smallest power
    of two under `param_limit_per_gpu`, here for the largest stage), the micro-batch 1 (Megatron
    asks for it explicitly), data parallel the largest power of two that max_gpus allows and that
    divides the global batch into whole micro-batches.
    """
    pp = parallel.pipeline
    if shape.layers % pp:
        raise ConfigError("pipeline", pp, f"must divide the {shape.layers} layers (Megatron splits them evenly)")
    tp = _choose_tp(shape, parallel)
    shape.layer.check_tp(tp)
    micro_batch = parallel.micro_batch or 1
    dp = _choose_dp(parallel, tp, micro_batch, global_batch)
    if tp * dp * pp > parallel.max_gpus:
        raise InfeasibleError(f"tensor {tp} x data {dp} x pipeline {pp} GPUs exceed max_gpus = {parallel.max_gpus}")
    global_batch = global_batch or dp * micro_batch
    if global_batch % (dp * micro_batch):
        raise ConfigError("global_batch", global_batch,
                          f"must be a multiple of data parallel x micro-batch = {dp} x {micro_batch}")
    micro_batches = global_batch // (dp * micro_batch)
    params = tuple(shape.stage_params_per_rank(stage, tp, pp) for stage in range(pp))
    memory = []
    for stage, stage_params in enumerate(params):
        states = MODEL_STATE_BYTES_PER_PARAM * stage_params
        total = states + stage_activation_bytes(shape, stage, tp, pp, micro_batch, micro_batches, parallel)
        if total > memory_bytes:
            show = units.format_size_bytes
            raise InfeasibleError(
                f"pipeline stage {stage} needs {show(total)} per GPU ({show(states)} of model states for "
                f"{stage_params:,} parameters, the rest activations of micro-batch {micro_batch}) but the device "
                f"has {show(memory_bytes)} (tensor {tp}, pipeline {pp})")
        memory.append(math.ceil(total))
    return GptPlan(shape=shape, tp=tp, pp=pp, dp=dp, micro_batch=micro_batch, micro_batches=micro_batches,
                   stage_params=params, stage_memory_bytes=tuple(memory))
