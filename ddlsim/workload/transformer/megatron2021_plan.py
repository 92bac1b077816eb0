"""The Megatron-2021 flavour's partition (RAMP Sec. 7.2.1): tensor-parallel degree, then
data-parallel degree and local batch that fill device memory.

This is the flavour of `model=megatron` (RAMP's scaling-law models, Tables 9 and 10), of the
encoders of `model=hf` and of TopoOpt's BERT. It differs from the decoder flavour (`plan.py`) in
its rules, not only its defaults, and RAMP's tables are reproduced with these rules:

1. Tensor parallel (TP): the smallest power of two t whose per-GPU parameter count, counted the
   Megatron way (sharded weights, replicated norms and row-parallel biases, vocab-parallel
   embeddings; `LayerShape.params_per_rank`, rounded down per layer while searching), is at most
   `parallel.param_limit_per_gpu` (RAMP: 1.6e9 for an 80 GB A100). `parallel.tensor` > 0 fixes it
   instead. With `widen_heads` the layer is split into t heads when t exceeds its heads.
2. Memory per GPU (`memory_bytes`, the device capacity):
   model states = 16 bytes per parameter (fp16 weights and gradients, fp32 master weights and
   two Adam moments; Rajbhandari et al. 2020, ZeRO, Sec. 3.1; the decoder flavour follows
   Megatron-Core's table instead) plus activations per sequence
   (`Megatron2021Model.activation_bytes_per_sequence`). The local batch can grow until both fill
   memory: b_max = floor((memory - states) / activations per sequence).
3. Data parallel (DP): enough replicas for the target global batch (the critical batch of the
   scaling laws unless given): dp = ceil(target / b_max), rounded up to a power of two when
   `parallel.power_of_two`, and at most max_gpus / (t x pipeline). The local batch is then
   ceil(target / dp) (at most b_max), so the global batch dp x local is the smallest that
   reaches the target; when max_gpus caps dp, the local batch is b_max and the global batch
   falls short of the target (the step count grows, Eq. 5.4). `parallel.data` and
   `parallel.micro_batch` (the local batch) fix either choice.

One micro-batch per iteration and no pipeline: the local batch is the micro-batch. Anything that
cannot fit raises `InfeasibleError` saying what and by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.layer import ACTIVATION_BYTES
from ddlsim.workload.transformer.layout import ParallelLayout
from ddlsim.workload.transformer.memory import LOGIT_BYTES
from ddlsim.workload.transformer.stack import TransformerStack, widen_heads

MODEL_STATE_BYTES_PER_PARAM = 16  # 2 + 2 + 12 (ZeRO's K = 12: fp32 master weights and two moments)


@dataclass(frozen=True)
class Megatron2021Model:
    """A transformer as this flavour sees it: the layer stack plus its embeddings.

    `vocab_parallel_params` (word embeddings, an untied output layer) are split over the
    tensor-parallel group as Megatron's vocab-parallel embedding does; `replicated_params`
    (position and token-type embeddings, final norm, pooler) sit whole on every rank.
    The RAMP equivalent model has neither: random embeddings feed the layer stack.
    """

    stack: TransformerStack
    vocab: int = 0
    vocab_parallel_params: int = 0
    replicated_params: int = 0

    def params(self) -> int:
        return self.stack.params() + self.vocab_parallel_params + self.replicated_params

    def params_per_rank(self, tp: int, *, check: bool = True) -> int:
        per_layer = self.stack.layer.params_per_rank(tp, check=check)
        return self.stack.layers * per_layer + math.ceil(self.vocab_parallel_params / tp) + self.replicated_params

    def activation_bytes_per_sequence(self, tp: int, parallel: ParallelConfig) -> float:
        """Device bytes of activations one sequence of the local batch needs at the peak.

        Full checkpointing keeps each layer's input (2sbh per layer, / t with sequence
        parallelism) and, during backward, one layer's recomputed activations (Korthikanti et
        al. 2022, Sec. 4 and Table 2); with `activation_offload` the kept inputs live in host
        memory (as RAMP Sec. 7.3 assumes). Without checkpointing every layer keeps all its
        activations. A model with a vocabulary adds the output layer's input and fp32 logits.
        """
        layer, layers, sp = self.stack.layer, self.stack.layers, parallel.sequence_parallel
        working = layer.activation_bytes(1, tp, sp)
        if parallel.activation_checkpointing:
            kept = 0.0 if parallel.activation_offload else layers * layer.checkpoint_bytes(1, tp, sp)
            total = kept + working
        else:
            total = layers * working
        if self.vocab:
            total += layer.seq_len * (LOGIT_BYTES * self.vocab / tp + ACTIVATION_BYTES * layer.d_model)
        return total

    def with_layer_split_for(self, tp: int) -> Megatron2021Model:
        return replace(self, stack=replace(self.stack, layer=widen_heads(self.stack.layer, tp)))


@dataclass(frozen=True)
class Megatron2021Plan:
    model: Megatron2021Model
    tp: int
    dp: int
    local_batch: int
    max_local_batch: int
    target_global_batch: int
    params_per_gpu: int
    model_state_bytes: int
    activation_bytes: int

    @property
    def layout(self) -> ParallelLayout:
        """The plan's groups (`layout.py`): TP fastest, then DP; no context or pipeline parallelism."""
        return ParallelLayout(tp=self.tp, cp=1, dp=self.dp, pp=1)

    @property
    def global_batch(self) -> int:
        return self.dp * self.local_batch

    @property
    def num_gpus(self) -> int:
        return self.tp * self.dp

    @property
    def memory_per_gpu_bytes(self) -> int:
        return self.model_state_bytes + self.activation_bytes


def _pow2_floor(value: int) -> int:
    return 1 << (value.bit_length() - 1)


def _pow2_ceil(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


def choose_tensor_parallel(model: Megatron2021Model, parallel: ParallelConfig, *,
                           widen_heads: bool) -> tuple[int, Megatron2021Model]:
    """(tp, model): the degree of rule 1, and the model with heads widened if allowed."""
    gpu_cap = parallel.max_gpus // parallel.pipeline
    if parallel.tensor:
        tp = parallel.tensor
    else:
        tp = 1
        while model.params_per_rank(tp, check=False) > parallel.param_limit_per_gpu:
            tp *= 2
            if tp > gpu_cap:
                raise InfeasibleError(
                    f"{model.params():.4g} parameters do not fit the limit of {parallel.param_limit_per_gpu:.4g} "
                    f"per GPU with any tensor-parallel degree up to max_gpus = {parallel.max_gpus} "
                    f"({model.params_per_rank(gpu_cap, check=False):.4g} per GPU at {gpu_cap})")
    if tp > gpu_cap:
        raise InfeasibleError(f"tensor-parallel degree {tp} exceeds max_gpus / pipeline = {gpu_cap}")
    if widen_heads:
        model = model.with_layer_split_for(tp)
    model.stack.layer.check_tp(tp)
    return tp, model


def partition_megatron2021(model: Megatron2021Model, parallel: ParallelConfig, memory_bytes: int,
                           target_global_batch: int, *, widen_heads: bool = False) -> Megatron2021Plan:
    """Rules 1-3 of the module docstring."""
    if parallel.pipeline != 1:
        raise ConfigError("pipeline", parallel.pipeline, "must be 1: this model has no pipeline stages")
    if target_global_batch < 1:
        raise ConfigError("global_batch", target_global_batch, "must be >= 1")
    tp, model = choose_tensor_parallel(model, parallel, widen_heads=widen_heads)
    params_per_gpu = model.params_per_rank(tp)
    states = MODEL_STATE_BYTES_PER_PARAM * params_per_gpu
    show = units.format_size_bytes
    if states > memory_bytes:
        raise InfeasibleError(
            f"model states of {params_per_gpu:,} parameters per GPU ({show(states)} at "
            f"{MODEL_STATE_BYTES_PER_PARAM} B/parameter) exceed the device memory of {show(memory_bytes)} "
            f"at tensor-parallel degree {tp}")
    per_sequence = model.activation_bytes_per_sequence(tp, parallel)
    max_local = int((memory_bytes - states) // per_sequence)
    if max_local < 1:
        raise InfeasibleError(
            f"one sequence needs {show(per_sequence)} of activations but only {show(memory_bytes - states)} of "
            f"{show(memory_bytes)} remain after model states at tensor-parallel degree {tp}")
    if parallel.micro_batch > max_local:
        raise InfeasibleError(f"local batch {parallel.micro_batch} needs {show(parallel.micro_batch * per_sequence)} "
                              f"of activations; only {max_local} sequences fit in {show(memory_bytes - states)}")
    dp_cap = parallel.max_gpus // (tp * parallel.pipeline)
    if parallel.power_of_two:
        dp_cap = _pow2_floor(dp_cap)
    if parallel.data:
        dp = parallel.data
        if dp * tp * parallel.pipeline > parallel.max_gpus:
            raise InfeasibleError(f"data {dp} x tensor {tp} x pipeline {parallel.pipeline} GPUs exceed "
                                  f"max_gpus = {parallel.max_gpus}")
    else:
        per_replica = parallel.micro_batch or max_local
        dp = math.ceil(target_global_batch / per_replica)
        if parallel.power_of_two:
            dp = _pow2_ceil(dp)
        dp = min(dp, dp_cap)
    local = parallel.micro_batch or min(max_local, math.ceil(target_global_batch / dp))
    return Megatron2021Plan(model=model, tp=tp, dp=dp, local_batch=local, max_local_batch=max_local,
                            target_global_batch=target_global_batch, params_per_gpu=params_per_gpu,
                            model_state_bytes=states, activation_bytes=math.ceil(local * per_sequence))
