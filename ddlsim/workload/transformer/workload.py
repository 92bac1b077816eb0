"""The transformer generator: a model's `Workload` (tasks of one iteration) and its plan as result-row fields.

One generator, two flavours, sharing the layer arithmetic (`layer.py`), the rank order and groups
(`layout.py`), the layers' collectives (`collectives.py`), the kernel lists' FLOPs and bytes
(`blocks.KernelBytes`) and the model FLOPs:

- decoders (`build_decoder_workload`: `model=gpt`, the decoders of `model=hf`): Megatron-Core's
  partition and memory accounting (`plan.py`, `memory.py`) under every parallelism, one
  micro-batch per pipeline chunk then the per-iteration blocks (`blocks.py`);
- Megatron-2021 (`build_megatron2021_workload`: `model=megatron`, RAMP's scaling-law models and
  Tables 9 and 10, the encoders of `model=hf`, TopoOpt's BERT): TP x DP filling device memory
  (`megatron2021_plan.py`) and the blocks of RAMP's reproductions (`megatron2021_blocks.py`).
"""

from __future__ import annotations

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.workload.model_flops import model_flop_per_step
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.scaling_laws import TrainingBudget
from ddlsim.workload.transformer.arithmetic import query_tokens
from ddlsim.workload.transformer.blocks import KernelBytes, decoder_blocks
from ddlsim.workload.transformer.collectives import LayerCollectives
from ddlsim.workload.transformer.layer import ACTIVATION_BYTES
from ddlsim.workload.transformer.megatron2021_blocks import megatron2021_blocks, megatron2021_plan_fields
from ddlsim.workload.transformer.megatron2021_plan import Megatron2021Model, partition_megatron2021
from ddlsim.workload.transformer.memory import StageMemory
from ddlsim.workload.transformer.plan import DecoderPlan, partition_decoder
from ddlsim.workload.transformer.shape import DecoderShape
from ddlsim.workload.transformer.stages import describe


def _stage_maxima(stages: tuple[StageMemory, ...]) -> tuple[StageMemory, float, float]:
    """(the first stage holding the most parameters, the most state bytes, the most activation bytes) in
    one pass; each comparison is the one `max` makes, so ties and the values are max's."""
    busiest = stages[0]
    most_params, most_state_bytes, most_activation_bytes = busiest.params, busiest.state_bytes, busiest.activation_bytes
    for memory in stages[1:]:
        params = memory.dense_params + memory.expert_params  # StageMemory.params
        if params > most_params:
            busiest, most_params = memory, params
        if memory.state_bytes > most_state_bytes:
            most_state_bytes = memory.state_bytes
        if memory.activation_bytes > most_activation_bytes:
            most_activation_bytes = memory.activation_bytes
    return busiest, most_state_bytes, most_activation_bytes


def plan_fields(plan: DecoderPlan, precision: Precision, grad_precision: Precision) -> dict[str, object]:
    shape, layer, layout = plan.shape, plan.shape.layer, plan.layout
    calls = LayerCollectives(shape, layout, plan.micro_batch, sequence_parallel=plan.options.sequence_parallel,
                             zero=plan.options.zero, precision=precision, grad_precision=grad_precision)
    busiest, most_state_bytes, most_activation_bytes = _stage_maxima(plan.stages)
    stage_layers = plan.stage_layers
    tokens = query_tokens(shape, plan.micro_batch, layout.cp)
    fields: dict[str, object] = {
        "params_total": shape.params(),
        "params_per_gpu": busiest.params,  # plan.params_per_gpu
        "tp_degree": plan.tp,
        "dp_degree": plan.dp,
        "pp_degree": plan.pp,
        "cp_degree": plan.cp,
        "ep_degree": plan.ep,
        "virtual_stages": plan.vp,
        "zero_stage": plan.options.zero,
        "recompute": plan.options.recompute,
        "sequence_parallel": plan.options.sequence_parallel,
        "num_gpus": plan.num_gpus,
        "micro_batch": plan.micro_batch,
        "micro_batches": plan.micro_batches,
        "local_batch": plan.micro_batch * plan.micro_batches,
        "global_batch": plan.global_batch,
        "dp_message_bytes": grad_precision.bytes_per_element * busiest.dense_params if layout.dense_dp > 1 else 0,
        "tp_message_bytes": calls.message_bytes if plan.tp > 1 else 0,
        "pp_message_bytes": ACTIVATION_BYTES * tokens * layer.d_model if plan.pp > 1 else 0,
        "cp_message_bytes": calls.kv_chunk_bytes if plan.cp > 1 else 0,
        "memory_per_gpu_bytes": plan.memory_per_gpu_bytes,
        "model_state_bytes": round(most_state_bytes),
        "activation_bytes": round(most_activation_bytes),
        "d_model": layer.d_model,
        "heads": layer.heads,
        "kv_heads": shape.kv_heads,
        "layers": shape.layers,
        "layers_per_stage": max(stage_layers),  # plan.layers_per_stage
        "stage_layers": describe(stage_layers),
        "ffn_hidden": layer.ffn_hidden,
        "seq_len": layer.seq_len,
        "vocab": shape.vocab,
        "padded_vocab": shape.padded_vocab(plan.tp),
        "precision": precision.value,
        "activation_checkpointing": plan.options.recompute == "full",
    }
    if shape.moe is not None:
        fields.update({"experts": shape.moe.experts, "top_k": shape.moe.top_k, "params_active": shape.active_params(),
                       "ep_message_bytes": -(-calls.routed_bytes // plan.tp) if plan.ep > 1 else 0})
    return fields


def build_decoder_workload(name: str, shape: DecoderShape, parallel: ParallelConfig, memory_bytes: int, *,
                           global_batch: int, num_steps: int, precision: Precision, grad_precision: Precision,
                           scatter_gather: bool = True, kernel_bytes: KernelBytes | None = None) -> Workload:
    plan = partition_decoder(shape, parallel, memory_bytes, global_batch, precision=precision,
                             grad_precision=grad_precision)
    blocks = decoder_blocks(plan, precision, grad_precision, scatter_gather, kernel_bytes)
    fields = plan_fields(plan, precision, grad_precision)
    fields["tokens_per_step"] = plan.global_batch * shape.layer.seq_len
    fields["model_flop_per_step"] = model_flop_per_step(blocks, chunks=plan.layout.chunks,
                                                        micro_batches=plan.micro_batches,
                                                        ranks_per_chunk=plan.stage_ranks)
    return Workload(name=name, num_ranks=plan.num_gpus, blocks=blocks, global_batch=plan.global_batch,
                    num_steps=num_steps, plan=fields)


def build_megatron2021_workload(name: str, model: Megatron2021Model, budget: TrainingBudget | None,
                                parallel: ParallelConfig, memory_bytes: int, *, global_batch: int = 0,
                                num_steps: int = 0, precision: Precision = Precision.FP16, widen_heads: bool = False,
                                layer_kind: str = "megatron_layer", tp_all_reduces: str = "megatron",
                                kernel_bytes: KernelBytes | None = None) -> Workload:
    """Partition `model` the Megatron-2021 way and list the tasks of one iteration.

    With a scaling-law `budget`, the target global batch defaults to the critical batch and the
    steps are recomputed for the global batch the partitioner picked (Kaplan Eq. 5.4); without
    one, `global_batch` must be given and `num_steps` is passed through.
    """
    if budget is None and global_batch < 1:
        raise ConfigError("global_batch", global_batch, "must be >= 1 for a model without a target loss")
    target = global_batch or budget.critical_batch_sequences
    plan = partition_megatron2021(model, parallel, memory_bytes, target, widen_heads=widen_heads)
    steps = budget.steps(plan.global_batch) if budget is not None else num_steps
    blocks = megatron2021_blocks(plan, precision=precision, checkpointing=parallel.activation_checkpointing,
                                 sequence_parallel=parallel.sequence_parallel, layer_kind=layer_kind,
                                 tp_all_reduces=tp_all_reduces, kernel_bytes=kernel_bytes)
    fields = megatron2021_plan_fields(plan, precision, steps)
    fields.update({
        "params_kaplan": plan.model.stack.kaplan_params(),
        "precision": precision.value,
        "sequence_parallel": parallel.sequence_parallel,
        "activation_checkpointing": parallel.activation_checkpointing,
        "tokens_per_step": plan.global_batch * plan.model.stack.layer.seq_len,
        "model_flop_per_step": model_flop_per_step(blocks, ranks_per_chunk=plan.num_gpus),
    })
    if budget is not None:
        fields.update({"target_loss": budget.loss, "critical_batch": budget.critical_batch_sequences,
                       "min_steps": budget.min_steps, "loss_gap": budget.loss_gap})
    return Workload(name=name, num_ranks=plan.num_gpus, blocks=blocks, global_batch=plan.global_batch,
                    num_steps=steps, plan=fields)
