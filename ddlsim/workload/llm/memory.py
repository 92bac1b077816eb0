"""Device memory of one rank of each pipeline stage: model states per ZeRO stage plus activations.

Model states (Rajbhandari et al. 2020, ZeRO, Sec. 3.1 and 5; mixed precision with Adam): 2 bytes
of weights, 2 of gradients and K = 12 of optimizer state (fp32 master weights and two moments)
per parameter. With N ranks sharing the same parameters (DP x CP for dense parameters, DP x CP /
EP for expert parameters), per parameter:

    ZeRO 0: 2 + 2 + 12      ZeRO 1: 2 + 2 + 12 / N      ZeRO 2: 2 + (2 + 12) / N
    ZeRO 3: (2 + 2 + 12) / N, plus the unsharded weights of the current and the prefetched
            layer and the current layer's unsharded gradients (6 bytes x its parameters).

Activations of stage s under a pipeline schedule: 1F1B keeps min(PP - s, m) micro-batches in
flight (Narayanan et al. 2021, Sec. 2.2.1); the interleaved schedule keeps min(2 (PP - s - 1) +
(v - 1) PP + 1, m v) model chunks of L / (PP v) layers in flight (Megatron's warm-up), which on
stage 0 is L (1 + (PP - 1) / (PP v)) layers' worth (Korthikanti et al. 2022, Sec. 4.2.3). What
each layer keeps depends on the recompute policy (`arithmetic.py`):

- ``full``: the layer input (2 s b h / CP, / TP with SP), plus one layer's activations while it
  is recomputed; `activation_offload` keeps the inputs in host memory instead;
- ``selective``: everything but the attention core, plus one layer's attention core;
- ``none``: everything.

The last stage adds the fp32 logits and the final norm's input of one micro-batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim import units
from ddlsim.errors import InfeasibleError
from ddlsim.workload.llm.arithmetic import (
    attention_core_bytes,
    layer_activation_bytes,
    layer_input_bytes,
    query_tokens,
)
from ddlsim.workload.llm.layout import ParallelLayout
from ddlsim.workload.llm.shape import DENSE, MOE, DecoderShape
from ddlsim.workload.transformer_layer import ACTIVATION_BYTES

WEIGHT_BYTES, GRADIENT_BYTES, OPTIMIZER_BYTES = 2, 2, 12
MODEL_STATE_BYTES_PER_PARAM = WEIGHT_BYTES + GRADIENT_BYTES + OPTIMIZER_BYTES
ZERO3_WORKING_BYTES_PER_PARAM = 2 * WEIGHT_BYTES + GRADIENT_BYTES  # current + prefetched weights, gradients
LOGIT_BYTES = 4


@dataclass(frozen=True)
class MemoryOptions:
    """The plan choices memory depends on besides the degrees."""

    micro_batch: int
    micro_batches: int
    recompute: str = "full"
    sequence_parallel: bool = False
    activation_offload: bool = False
    zero: int = 0


def state_bytes_per_param(zero: int, sharers: int) -> float:
    """Model-state bytes per parameter held by `sharers` ranks under ZeRO stage `zero`."""
    n = sharers
    return {0: MODEL_STATE_BYTES_PER_PARAM,
            1: WEIGHT_BYTES + GRADIENT_BYTES + OPTIMIZER_BYTES / n,
            2: WEIGHT_BYTES + (GRADIENT_BYTES + OPTIMIZER_BYTES) / n,
            3: MODEL_STATE_BYTES_PER_PARAM / n}[zero]


def model_state_bytes(shape: DecoderShape, layout: ParallelLayout, dense: int, expert: int, zero: int) -> float:
    """Model states of a rank holding `dense` and `expert` parameters (before ZeRO sharding)."""
    if zero == 0:
        return MODEL_STATE_BYTES_PER_PARAM * (dense + expert)
    total = dense * state_bytes_per_param(zero, layout.dense_dp) + \
        expert * state_bytes_per_param(zero, layout.expert_dp)
    if zero == 3:
        largest = max(sum(shape.layer_params_per_rank(kind, layout.tp, layout.ep)) for kind in _kinds(shape))
        total += ZERO3_WORKING_BYTES_PER_PARAM * largest
    return total


def _kinds(shape: DecoderShape) -> tuple[str, ...]:
    dense, moe = shape.layer_counts(0, shape.layers)
    return tuple(kind for kind, count in ((DENSE, dense), (MOE, moe)) if count)


def chunks_in_flight(stage: int, layout: ParallelLayout, micro_batches: int) -> int:
    """Model chunks (micro-batches x chunks) whose activations stage `stage` holds at its peak."""
    p, v = layout.pp, layout.vp
    if v == 1:
        return min(p - stage, micro_batches)
    return min(2 * (p - stage - 1) + (v - 1) * p + 1, micro_batches * v)


def stage_layer_counts(shape: DecoderShape, layout: ParallelLayout, stage: int) -> tuple[int, int]:
    """(dense, MoE) layers of the chunks that pipeline stage `stage` runs."""
    per_chunk = shape.layers // layout.chunks
    dense = moe = 0
    for v in range(layout.vp):
        d, m = shape.layer_counts((stage + v * layout.pp) * per_chunk, per_chunk)
        dense, moe = dense + d, moe + m
    return dense, moe


class _LayerBytes:
    """What one layer of each kind keeps, computed once per plan."""

    def __init__(self, shape: DecoderShape, layout: ParallelLayout, options: MemoryOptions) -> None:
        b, t, c, sp = options.micro_batch, layout.tp, layout.cp, options.sequence_parallel
        kinds = _kinds(shape)
        self.full = {kind: layer_activation_bytes(shape, kind, b, t, c, sp) for kind in kinds}
        self.working = max(self.full.values())
        self.input = layer_input_bytes(shape, b, t, c, sp)
        if options.recompute == "selective":
            self.selective = {kind: layer_activation_bytes(shape, kind, b, t, c, sp, attention_core=False)
                              for kind in kinds}
            self.core = attention_core_bytes(shape, b, t, c)
        self.logits = query_tokens(shape, b, c) * (LOGIT_BYTES * shape.local_vocab(t) + ACTIVATION_BYTES *
                                                   shape.layer.d_model)


def stage_activation_bytes(shape: DecoderShape, layout: ParallelLayout, stage: int, options: MemoryOptions,
                           per_layer: _LayerBytes | None = None) -> float:
    """Peak activation bytes of one rank of `stage` (see the module docstring)."""
    per_layer = per_layer or _LayerBytes(shape, layout, options)
    per_chunk = shape.layers // layout.chunks
    in_flight = chunks_in_flight(stage, layout, options.micro_batches)
    counts = dict(zip((DENSE, MOE), stage_layer_counts(shape, layout, stage), strict=True))
    policy = options.recompute
    if policy == "full":
        layers = per_chunk if layout.vp == 1 else sum(counts.values()) / layout.vp
        kept = 0.0 if options.activation_offload else in_flight * layers * per_layer.input
        total = kept + per_layer.working
    elif policy == "selective":
        kept = sum(count * per_layer.selective[kind] for kind, count in counts.items() if count)
        total = in_flight * kept / layout.vp + per_layer.core
    else:
        kinds = [kind for kind, count in counts.items() if count]
        if len(kinds) == 1 and layout.vp == 1:
            total = in_flight * per_chunk * per_layer.full[kinds[0]]
        else:
            total = in_flight * sum(counts[kind] * per_layer.full[kind] for kind in kinds) / layout.vp
    if stage == layout.pp - 1:
        total += per_layer.logits
    return total


@dataclass(frozen=True)
class StageMemory:
    """One rank of one pipeline stage: parameters held and bytes needed."""

    stage: int
    dense_params: int
    expert_params: int
    state_bytes: float
    activation_bytes: float

    @property
    def params(self) -> int:
        return self.dense_params + self.expert_params

    @property
    def total_bytes(self) -> float:
        return self.state_bytes + self.activation_bytes


def stage_memory(shape: DecoderShape, layout: ParallelLayout, options: MemoryOptions) -> tuple[StageMemory, ...]:
    per_layer = _LayerBytes(shape, layout, options)
    kinds = _kinds(shape)
    params = {kind: shape.layer_params_per_rank(kind, layout.tp, layout.ep) for kind in kinds}
    embedding, head = shape.embedding_params_per_rank(layout.tp), shape.head_params_per_rank(layout.tp, layout.chunks)
    stages = []
    for stage in range(layout.pp):
        counts = dict(zip((DENSE, MOE), stage_layer_counts(shape, layout, stage), strict=True))
        dense = sum(counts[kind] * params[kind][0] for kind in kinds)
        expert = sum(counts[kind] * params[kind][1] for kind in kinds)
        dense += (embedding if stage == 0 else 0) + (head if stage == layout.pp - 1 else 0)
        states = model_state_bytes(shape, layout, dense, expert, options.zero)
        stages.append(StageMemory(stage, dense, expert, states,
                                  stage_activation_bytes(shape, layout, stage, options, per_layer)))
    return tuple(stages)


def check_fits(stages: tuple[StageMemory, ...], layout: ParallelLayout, options: MemoryOptions,
               memory_bytes: int) -> None:
    """Raise `InfeasibleError` naming the first stage that does not fit, and by how much."""
    show = units.format_size_bytes
    for memory in stages:
        if memory.total_bytes > memory_bytes:
            raise InfeasibleError(
                f"pipeline stage {memory.stage} needs {show(memory.total_bytes)} per GPU, "
                f"{show(memory.total_bytes - memory_bytes)} more than the device's {show(memory_bytes)}: "
                f"{show(memory.state_bytes)} of model states for {memory.params:,} parameters (ZeRO "
                f"{options.zero}), {show(memory.activation_bytes)} of activations of micro-batch "
                f"{options.micro_batch} (recompute {options.recompute}) at tensor {layout.tp}, context {layout.cp}, "
                f"data {layout.dp}, pipeline {layout.pp}, expert {layout.ep}, virtual stages {layout.vp}")


def memory_per_gpu(stages: tuple[StageMemory, ...]) -> tuple[int, ...]:
    return tuple(math.ceil(memory.total_bytes) for memory in stages)
