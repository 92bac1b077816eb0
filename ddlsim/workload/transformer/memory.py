"""Device memory of one rank of each pipeline stage, as Megatron-Core accounts for it.

Sources: NVIDIA/Megatron-LM (read at commit d98e8a6): docs/user-guide/features/dist_optimizer.md,
megatron/training/theoretical_memory_usage.py (Korthikanti et al. 2022, Table 2), the schedules of
megatron/core/pipeline_parallel/schedules.py and megatron/training/arguments.py.

**Model states** (mixed precision with Adam). Per parameter: p bytes of weights (2 in bf16/fp16,
4 in fp32), g bytes of main gradients (the buffer the backward accumulates into and the
data-parallel reduction reads: `main_grad`) and o bytes of optimizer state: 8 for the two fp32
Adam moments, 4 for fp32 master weights unless the weights are fp32, 4 for an fp32 copy of the
gradients unless they are fp32 already. That is Megatron-Core's table of bytes per parameter
(dist_optimizer.md): fp16 weights and gradients 20, bf16 weights with fp32 gradients 18, fp32 16.
With N ranks sharing the parameters (DP x CP for dense ones, DP x CP / EP for experts):

    ZeRO 0: p + g + o       ZeRO 1 (the distributed optimizer): p + g + o / N
    ZeRO 2: p + (g + o) / N   ZeRO 3: (p + g + o) / N, plus the unsharded weights of the current
            and the prefetched layer and the current layer's unsharded gradients.

ZeRO 1 is Megatron-Core's distributed optimizer: 6 + 12 / N for bf16 with fp32 gradients, 4 + 16 / N
for fp16 (`num_bytes_per_parameter` in theoretical_memory_usage.py). Gradients are fp32 for bf16
training (arguments.py: "bfloat16 requires gradient accumulation and all-reduce to be done in
fp32") unless `parallel.main_grads_dtype` says otherwise.

**Activations** of one layer and micro-batch follow Korthikanti et al. 2022 term by term
(`arithmetic.layer_activation_bytes` with ``saved=True``): ``sbh(34 + 5as/h) / t`` for a GPT layer
with sequence parallelism (SP), whose replicated terms stay whole without SP, ``sbh(10 + 24/t)``;
tokens are s / CP per context-parallel rank. What a layer saves depends on

- the attention: ``materialized`` keeps the s x s softmax output, its dropout mask and output
  (the ``5as/h`` term); ``flash`` keeps none of them, only the kernel's fp32 log-sum-exp per
  query and head (its output is the output projection's input, already counted);
- a gated MLP: Megatron-Core's fused SwiGLU saves its input (gate and up), the down projection
  its input: 3 values per MLP column;
- recompute: ``none`` keeps all of it; ``selective`` (Megatron-Core's ``core_attn``) all but the
  attention core, and rebuilds one layer's core in the backward; ``full`` only each layer's
  input (2 sbh / CP, / t with SP; `activation_offload`: none on the device) and rebuilds one
  whole layer at a time.

**Pipeline.** A stage holds the saved activations of the (micro-batch, model chunk) forwards whose
backward has not run. Megatron-Core's 1F1B runs PP - s - 1 warm-up forwards on stage s, then
one forward before each backward: min(PP - s, m) micro-batches in flight. The interleaved schedule
(`get_pp_rank_microbatches`) warms up with 2 (PP - s - 1) + (v - 1) PP forwards (micro-batch
groups of PP, `microbatch_group_size_per_vp_stage`'s default), capped at all m v of them; the
peak is the most the forwards done minus the backwards done ever hold, walked over one period of
the schedule table when the stage's chunks differ (uneven splits, dense and MoE layers) and
``(warm-up + 1) x chunk`` when they do not, which on stage 0 is L (1 + (PP - 1) / (PP v)) layers,
theoretical_memory_usage.py's interleaving penalty. The first chunk adds its token ids (8 bytes
a token) and, with dropout, the embedding dropout's mask; the last stage adds the output layer's
input, the final norm's input and the cross-entropy's fp32 softmax over the vocabulary shard of
one micro-batch (the loss's backward follows its forward at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ddlsim.core import units
from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import InfeasibleError
from ddlsim.workload.transformer.arithmetic import (
    attention_core_bytes,
    layer_activation_bytes,
    layer_input_bytes,
    query_tokens,
)
from ddlsim.workload.transformer.layer import ACTIVATION_BYTES, MASK_BYTES
from ddlsim.workload.transformer.layout import ParallelLayout
from ddlsim.workload.transformer.shape import DENSE, MOE, DecoderShape
from ddlsim.workload.transformer.stages import chunk_offsets

ADAM_MOMENT_BYTES = 8  # two fp32 moments
MAIN_PARAM_BYTES = MAIN_GRAD_BYTES = 4  # fp32 master weights, fp32 copy of 16-bit gradients
LOGIT_BYTES = 4  # the cross-entropy's fp32 softmax (megatron/core/tensor_parallel/cross_entropy.py)
TOKEN_ID_BYTES = 8  # int64 token ids the embedding's backward reads


@dataclass(frozen=True)
class MemoryOptions:
    """The plan choices memory depends on besides the degrees; `param_bytes` and `grad_bytes`
    are the weights' and the main gradients' bytes per element."""

    micro_batch: int
    micro_batches: int
    recompute: str = "full"
    sequence_parallel: bool = False
    activation_offload: bool = False
    zero: int = 0
    param_bytes: int = 2
    grad_bytes: int = 4
    fsdp_copies: bool = True  # ZeRO 3: FSDP2's copy kernels around its collectives (not memory)


def optimizer_bytes_per_param(param_bytes: int = 2, grad_bytes: int = 4) -> int:
    """Adam's moments plus fp32 master weights and gradients where the model's are 16-bit."""
    return ADAM_MOMENT_BYTES + (MAIN_PARAM_BYTES if param_bytes < 4 else 0) + \
        (MAIN_GRAD_BYTES if grad_bytes < 4 else 0)


def state_bytes_per_param(zero: int, sharers: int, param_bytes: int = 2, grad_bytes: int = 4) -> float:
    """Model-state bytes per parameter held by `sharers` ranks under ZeRO stage `zero`."""
    p, g, o, n = param_bytes, grad_bytes, optimizer_bytes_per_param(param_bytes, grad_bytes), sharers
    return {0: p + g + o, 1: p + g + o / n, 2: p + (g + o) / n, 3: (p + g + o) / n}[zero]


def model_state_bytes(shape: DecoderShape, layout: ParallelLayout, dense: int, expert: int, zero: int,
                      param_bytes: int = 2, grad_bytes: int = 4) -> float:
    """Model states of a rank holding `dense` and `expert` parameters (before ZeRO sharding)."""
    total = dense * state_bytes_per_param(zero, layout.dense_dp, param_bytes, grad_bytes) + \
        expert * state_bytes_per_param(zero, layout.expert_dp, param_bytes, grad_bytes)
    if zero == 3:
        largest = max(sum(shape.layer_params_per_rank(kind, layout.tp, layout.ep)) for kind in _kinds(shape))
        total += (2 * param_bytes + grad_bytes) * largest
    return total


def _kinds(shape: DecoderShape) -> tuple[str, ...]:
    dense, moe = shape.layer_counts(0, shape.layers)
    return tuple(kind for kind, count in ((DENSE, dense), (MOE, moe)) if count)


def interleaved_warmup(stage: Any, pipeline: int, virtual_stages: int) -> Any:
    """Megatron-Core's interleaved warm-up forwards of `stage` before clipping to m v (ints or
    numpy arrays of stages alike; the interleaved schedule of `ddlsim.training` uses it too)."""
    return 2 * (pipeline - stage - 1) + (virtual_stages - 1) * pipeline


def warmup_forwards(stage: int, pipeline: int, virtual_stages: int, micro_batches: int) -> int:
    """Forwards stage `stage` runs before its first backward (Megatron-Core's schedules)."""
    total = micro_batches * virtual_stages
    if virtual_stages == 1:
        return min(pipeline - stage - 1, total)
    return min(interleaved_warmup(stage, pipeline, virtual_stages), total)


def chunks_in_flight(stage: int, layout: ParallelLayout, micro_batches: int) -> int:
    """(Micro-batch, chunk) forwards whose activations stage `stage` holds at its peak."""
    return min(warmup_forwards(stage, layout.pp, layout.vp, micro_batches) + 1, micro_batches * layout.vp)


def peak_in_flight(weights: tuple[float, ...], stage: int, pipeline: int, micro_batches: int) -> float:
    """The most that the forwards done minus the backwards done hold on stage `stage`, one forward
    of its chunk i holding `weights[i]` (the module docstring); memoised per process."""
    if len(weights) == 1:  # no interleaving: `_peak_in_flight`'s first two cases, inline
        if min(pipeline - stage - 1, micro_batches) + 1 >= micro_batches:
            return micro_batches * sum(weights)
        return (min(pipeline - stage - 1, micro_batches) + 1) * weights[0]
    key = (weights, stage, pipeline, micro_batches)
    return PROCESS_CACHES.memo("peak in flight", maxsize=8192).get_or_make(key, lambda: _peak_in_flight(*key))


def _peak_in_flight(weights: tuple[float, ...], stage: int, pipeline: int, micro_batches: int) -> float:
    v = len(weights)
    in_flight = min(warmup_forwards(stage, pipeline, v, micro_batches) + 1, micro_batches * v)
    if in_flight == micro_batches * v:  # every forward runs before the first backward
        return micro_batches * sum(weights)
    if min(weights) == max(weights):
        return in_flight * weights[0]
    # The schedule table runs groups of PP micro-batches chunk after chunk (`get_schedule_table`):
    # entry j is chunk (j // PP) mod v; backwards visit a group's chunks last to first.
    warmup = in_flight - 1
    full, rest = divmod(in_flight, pipeline * v)
    held = full * pipeline * sum(weights) + sum(weights[(j // pipeline) % v] for j in range(rest))
    best = held
    for k in range(min(micro_batches * v - warmup, pipeline * v) - 1):  # the table repeats every PP v entries
        held += weights[((in_flight + k) // pipeline) % v] - weights[v - 1 - (k // pipeline) % v]
        best = max(best, held)
    return best


@dataclass(frozen=True)
class ActivationParts:
    """A stage's peak activations: the saved activations in flight (`kept`), one layer's
    rebuilt activations in its backward (`working`), the output layer's (`output`, last stage)."""

    kept: float
    working: float
    output: float

    @property
    def total(self) -> float:
        return self.kept + self.working + self.output


class _LayerBytes:
    """What one layer of each kind saves for its backward, computed once per plan."""

    def __init__(self, shape: DecoderShape, layout: ParallelLayout, options: MemoryOptions) -> None:
        b, t, c, sp = options.micro_batch, layout.tp, layout.cp, options.sequence_parallel
        kinds = _kinds(shape)
        full = {kind: layer_activation_bytes(shape, kind, b, t, c, sp, saved=True) for kind in kinds}
        self.working = 0.0
        if options.recompute == "full":
            stored = 0.0 if options.activation_offload else layer_input_bytes(shape, b, t, c, sp)
            self.kept = {kind: stored for kind in kinds}
            self.working = max(full.values())
        elif options.recompute == "selective":
            self.kept = {kind: layer_activation_bytes(shape, kind, b, t, c, sp, attention_core=False, saved=True)
                         for kind in kinds}
            self.working = attention_core_bytes(shape, b, t, c, saved=True)
        else:
            self.kept = full
        tokens, h = query_tokens(shape, b, c), shape.layer.d_model
        hidden = ACTIVATION_BYTES * tokens * h / (t if sp else 1)
        dropout_mask = MASK_BYTES * tokens * h / (t if sp else 1) if shape.layer.dropout else 0.0
        self.embedding = TOKEN_ID_BYTES * tokens + dropout_mask
        self.output = LOGIT_BYTES * tokens * shape.local_vocab(t) + 2 * hidden  # softmax, norm input and output


def _chunk_weights(shape: DecoderShape, layout: ParallelLayout, stage: int, per_layer: _LayerBytes,
                   kinds_of_chunks: tuple[tuple[int, int], ...] | None = None) -> tuple[float, ...]:
    """Saved bytes of one forward of each chunk of `stage`, in virtual-stage order;
    `kinds_of_chunks` is every chunk's (dense, MoE) layers (`_chunk_kinds`)."""
    kinds_of_chunks = kinds_of_chunks or _chunk_kinds(shape, layout)
    dense_bytes, moe_bytes = per_layer.kept.get(DENSE, 0.0), per_layer.kept.get(MOE, 0.0)
    return tuple(kinds_of_chunks[chunk][0] * dense_bytes + kinds_of_chunks[chunk][1] * moe_bytes +
                 (per_layer.embedding if chunk == 0 else 0.0) for chunk in range(stage, layout.chunks, layout.pp))


def _chunk_kinds(shape: DecoderShape, layout: ParallelLayout) -> tuple[tuple[int, int], ...]:
    counts = layout.layers_of_chunks(shape.layers)
    if shape.moe is None:  # what layer_counts gives every chunk without experts
        return tuple(zip(counts, [0] * len(counts)))
    return tuple(shape.layer_counts(first, count) for first, count in zip(chunk_offsets(counts), counts, strict=True))


def stage_activation_parts(shape: DecoderShape, layout: ParallelLayout, stage: int, options: MemoryOptions,
                           per_layer: _LayerBytes | None = None,
                           kinds_of_chunks: tuple[tuple[int, int], ...] | None = None) -> ActivationParts:
    """Peak activation bytes of one rank of `stage`, by part (see the module docstring)."""
    per_layer = per_layer or _LayerBytes(shape, layout, options)
    weights = _chunk_weights(shape, layout, stage, per_layer, kinds_of_chunks)
    kept = peak_in_flight(weights, stage, layout.pp, options.micro_batches)
    output = per_layer.output if stage == layout.pp - 1 else 0.0
    return ActivationParts(kept, per_layer.working, output)


def stage_activation_bytes(shape: DecoderShape, layout: ParallelLayout, stage: int, options: MemoryOptions,
                           per_layer: _LayerBytes | None = None,
                           kinds_of_chunks: tuple[tuple[int, int], ...] | None = None) -> float:
    return stage_activation_parts(shape, layout, stage, options, per_layer, kinds_of_chunks).total


@dataclass(frozen=True)
class StageMemory:
    """One rank of one pipeline stage: parameters held and bytes needed."""

    stage: int
    dense_params: int
    expert_params: int
    state_bytes: float
    activation_bytes: float
    layers: int = 0

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
    dense_layer, moe_layer = params.get(DENSE, (0, 0)), params.get(MOE, (0, 0))
    embedding, head = shape.embedding_params_per_rank(layout.tp), shape.head_params_per_rank(layout.tp, layout.chunks)
    kinds_of_chunks = _chunk_kinds(shape, layout)
    last = layout.pp - 1
    # Stages with the same chunks' layer kinds and the same ends hold the same parameters and states,
    # and one forward of their chunks saves the same bytes (usually 3 kinds: first, middle, last).
    alike: dict[tuple[tuple[tuple[int, int], ...], bool, bool], tuple[int, int, float, tuple[float, ...], int]] = {}
    stages = []
    for stage in range(layout.pp):
        chunk_kinds = kinds_of_chunks[stage::layout.pp]
        key = (chunk_kinds, stage == 0, stage == last)
        known = alike.get(key)
        if known is None:
            dense = expert = 0
            for dense_layers, moe_layers in chunk_kinds:
                dense += dense_layers * dense_layer[0] + moe_layers * moe_layer[0]
                expert += dense_layers * dense_layer[1] + moe_layers * moe_layer[1]
            dense += (embedding if stage == 0 else 0) + (head if stage == last else 0)
            states = model_state_bytes(shape, layout, dense, expert, options.zero, options.param_bytes,
                                       options.grad_bytes)
            weights = _chunk_weights(shape, layout, stage, per_layer, kinds_of_chunks)
            known = alike[key] = (dense, expert, states, weights, sum(map(sum, chunk_kinds)))
        dense, expert, states, weights, layers = known
        # `stage_activation_bytes`, summed in `ActivationParts.total`'s order
        kept = peak_in_flight(weights, stage, layout.pp, options.micro_batches)
        activations = kept + per_layer.working + (per_layer.output if stage == last else 0.0)
        stages.append(StageMemory(stage, dense, expert, states, activations, layers))
    return tuple(stages)


def check_fits(stages: tuple[StageMemory, ...], layout: ParallelLayout, options: MemoryOptions,
               memory_bytes: int) -> None:
    """Raise `InfeasibleError` naming the first stage that does not fit, and by how much."""
    show = units.format_size_bytes
    for memory in stages:
        if memory.state_bytes + memory.activation_bytes > memory_bytes:  # total_bytes, without its call
            raise InfeasibleError(
                f"pipeline stage {memory.stage} needs {show(memory.total_bytes)} per GPU, "
                f"{show(memory.total_bytes - memory_bytes)} more than the device's {show(memory_bytes)}: "
                f"{show(memory.state_bytes)} of model states for {memory.params:,} parameters (ZeRO "
                f"{options.zero}), {show(memory.activation_bytes)} of activations of {memory.layers} layers, "
                f"micro-batch {options.micro_batch} (recompute {options.recompute}) at tensor {layout.tp}, context "
                f"{layout.cp}, data {layout.dp}, pipeline {layout.pp}, expert {layout.ep}, virtual stages "
                f"{layout.vp}")


def memory_per_gpu(stages: tuple[StageMemory, ...]) -> tuple[int, ...]:
    return tuple([math.ceil(memory.state_bytes + memory.activation_bytes) for memory in stages])  # total_bytes
