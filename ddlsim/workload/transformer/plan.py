"""The partition of a decoder LLM: degrees, micro-batches, per-stage parameters and memory.

Megatron-LM's conventions (Shoeybi et al. 2019; Narayanan et al. 2021), extended to today's
parallelisms (`layout.py` gives the rank order and the rules):

- degrees the user fixes are honoured or refused with a `ConfigError` naming the rule;
- tensor parallel 0 is chosen as the smallest power of two that divides heads, KV heads and MLP
  widths and brings every stage under `param_limit_per_gpu` parameters per GPU;
- data parallel 0 is `gpus / (TP x CP x PP)` when `gpus` is given, else the largest power of two
  that max_gpus allows and that divides the global batch into whole micro-batches;
- the micro-batch is `parallel.micro_batch` (default 1, as Megatron asks for it explicitly), the
  global batch DP x micro-batch x micro-batches (CP ranks share their replica's sequences);
- layers split over PP x virtual-stage model chunks as Megatron-Core splits them (`stages.py`:
  evenly, or with fewer layers on the first and last stages, `parallel.first_stage_layers` /
  `parallel.last_stage_layers`); the first chunk holds the embeddings, the last the final norm and
  output layer;
- memory is Megatron-Core's accounting (`memory.py`) in the model's precision: 16-bit weights
  with fp32 main gradients for bf16 (Megatron-LM's default), the gradient-reduction type for fp16,
  unless `parallel.main_grads_dtype` says otherwise.

`partition_decoder` is pure arithmetic (no tasks, no torch), so a search can call it for
thousands of plans per second; `check_memory=False` returns the plan even when it does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import Precision
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.layout import (
    ParallelLayout,
    check_chunks,
    check_context_and_expert,
    check_layout,
    check_micro_batches,
    tp_divides,
)
from ddlsim.workload.transformer.memory import MemoryOptions, StageMemory, check_fits, memory_per_gpu, stage_memory
from ddlsim.workload.transformer.shape import DecoderShape
from ddlsim.workload.transformer.stages import stage_layers


@dataclass(frozen=True)
class DecoderPlan:
    """A partitioned decoder: degrees, micro-batching, and every stage's parameters and memory."""

    shape: DecoderShape
    layout: ParallelLayout
    options: MemoryOptions
    stages: tuple[StageMemory, ...]

    # ---- the names of the GPT plan ------------------------------------------------------------
    @property
    def tp(self) -> int:
        return self.layout.tp

    @property
    def pp(self) -> int:
        return self.layout.pp

    @property
    def dp(self) -> int:
        return self.layout.dp

    @property
    def cp(self) -> int:
        return self.layout.cp

    @property
    def ep(self) -> int:
        return self.layout.ep

    @property
    def vp(self) -> int:
        return self.layout.vp

    @property
    def micro_batch(self) -> int:
        return self.options.micro_batch

    @property
    def micro_batches(self) -> int:
        return self.options.micro_batches

    @property
    def chunk_layers(self) -> tuple[int, ...]:
        """Layers of every model chunk, in chunk order (`stages.split_layers`)."""
        return self.layout.layers_of_chunks(self.shape.layers)

    @property
    def stage_layers(self) -> tuple[int, ...]:
        return stage_layers(self.chunk_layers, self.pp)

    @property
    def layers_per_stage(self) -> int:
        """The most layers any stage holds (every stage's with an even split)."""
        return max(self.stage_layers)

    @property
    def layers_per_chunk(self) -> int:
        """The most layers any model chunk holds (every chunk's with an even split)."""
        return max(self.chunk_layers)

    @property
    def global_batch(self) -> int:
        return self.dp * self.micro_batch * self.micro_batches

    @property
    def stage_ranks(self) -> int:
        return self.layout.stage_ranks

    @property
    def num_gpus(self) -> int:
        return self.layout.num_gpus

    @property
    def stage_params(self) -> tuple[int, ...]:
        return tuple(memory.params for memory in self.stages)

    @property
    def params_per_gpu(self) -> int:
        return max(self.stage_params)

    @property
    def stage_memory_bytes(self) -> tuple[int, ...]:
        return memory_per_gpu(self.stages)

    @property
    def memory_per_gpu_bytes(self) -> int:
        return max(self.stage_memory_bytes)


def main_grad_bytes(parallel: ParallelConfig, precision: Precision, grad_precision: Precision) -> int:
    """Bytes of a main gradient: `parallel.main_grads_dtype`, else Megatron-LM's default
    (arguments.py): fp32 for bf16 (and fp8, whose weights are bf16) and fp32 training, the
    gradient-reduction type for fp16 (`--accumulate-allreduce-grads-in-fp32` is off there)."""
    if parallel.main_grads_dtype:
        return 4 if parallel.main_grads_dtype == "fp32" else 2
    if precision is Precision.FP16:
        return grad_precision.bytes_per_element
    return 4


def _choose_tp(shape: DecoderShape, parallel: ParallelConfig, chunk_layers: tuple[int, ...]) -> int:
    if parallel.tensor:
        return parallel.tensor
    pp, cp, v, ep = parallel.pipeline, parallel.context, parallel.virtual_stages, parallel.expert
    per_tp = (parallel.gpus or parallel.max_gpus) // (pp * cp)
    tp = 1
    while tp <= per_tp:
        whole = not parallel.gpus or per_tp % tp == 0
        if whole and tp_divides(shape, tp) and max(shape.stage_params_per_rank(s, tp, pp, ep, v, chunk_layers)
                                                   for s in range(pp)) <= parallel.param_limit_per_gpu:
            return tp
        tp *= 2
    raise InfeasibleError(f"no tensor-parallel degree up to {'gpus' if parallel.gpus else 'max_gpus'} / "
                          f"(pipeline x context) = {per_tp} divides the heads and MLP widths and brings every stage "
                          f"under {parallel.param_limit_per_gpu:.4g} parameters per GPU")


def _choose_dp(parallel: ParallelConfig, tp: int, micro_batch: int, global_batch: int) -> int:
    if parallel.data:
        return parallel.data
    others = tp * parallel.context * parallel.pipeline
    if parallel.gpus:
        if parallel.gpus % others:
            raise ConfigError("parallel.gpus", parallel.gpus,
                              f"must be a multiple of tensor x context x pipeline = {tp} x {parallel.context} x "
                              f"{parallel.pipeline}")
        return parallel.gpus // others
    cap = parallel.max_gpus // others
    if global_batch:
        cap = min(cap, global_batch // micro_batch)
    if cap < 1:
        raise InfeasibleError(f"no data-parallel replica fits: max_gpus {parallel.max_gpus}, tensor {tp}, "
                              f"context {parallel.context}, pipeline {parallel.pipeline}, global batch "
                              f"{global_batch}, micro-batch {micro_batch}")
    dp = 1 << (cap.bit_length() - 1)
    while global_batch and (global_batch // micro_batch) % dp:
        dp //= 2
    return dp


def partition_decoder(shape: DecoderShape, parallel: ParallelConfig, memory_bytes: int, global_batch: int = 0,
                      *, check_memory: bool = True, precision: Precision = Precision.BF16,
                      grad_precision: Precision | None = None) -> DecoderPlan:
    """Degrees, micro-batches and per-stage memory; `global_batch` 0 means one micro-batch per replica.

    `precision` and `grad_precision` (default: `precision`) are the model's: they set the bytes
    of weights and main gradients in memory.
    """
    pp, v = parallel.pipeline, parallel.virtual_stages
    chunk_layers = check_chunks(shape, pp, v, parallel.first_stage_layers, parallel.last_stage_layers)
    check_context_and_expert(shape, parallel.context, parallel.expert)
    tp = _choose_tp(shape, parallel, chunk_layers)
    micro_batch = parallel.micro_batch or 1
    dp = _choose_dp(parallel, tp, micro_batch, global_batch)
    layout = ParallelLayout(tp=tp, cp=parallel.context, dp=dp, pp=pp, ep=parallel.expert, vp=v,
                            chunk_layers=chunk_layers)
    check_layout(shape, layout, sequence_parallel=parallel.sequence_parallel)
    if layout.num_gpus > parallel.max_gpus:
        raise InfeasibleError(f"tensor {tp} x context {layout.cp} x data {dp} x pipeline {pp} GPUs exceed "
                              f"max_gpus = {parallel.max_gpus}")
    if parallel.gpus and layout.num_gpus != parallel.gpus:
        raise ConfigError("parallel.gpus", parallel.gpus, f"must equal tensor x context x data x pipeline = "
                                                          f"{tp} x {layout.cp} x {dp} x {pp}")
    global_batch = global_batch or dp * micro_batch
    if global_batch % (dp * micro_batch):
        raise ConfigError("global_batch", global_batch,
                          f"must be a multiple of data parallel x micro-batch = {dp} x {micro_batch}")
    micro_batches = global_batch // (dp * micro_batch)
    check_micro_batches(layout, micro_batches)
    options = MemoryOptions(micro_batch=micro_batch, micro_batches=micro_batches, recompute=parallel.recompute_policy,
                            sequence_parallel=parallel.sequence_parallel,
                            activation_offload=parallel.activation_offload, zero=parallel.zero,
                            param_bytes=max(2, precision.bytes_per_element),
                            grad_bytes=main_grad_bytes(parallel, precision, grad_precision or precision),
                            fsdp_copies=parallel.fsdp_copies)
    stages = stage_memory(shape, layout, options)
    if check_memory:
        check_fits(stages, layout, options, memory_bytes)
    return DecoderPlan(shape, layout, options, stages)
