"""A decoder LLM's `Workload` (tasks of one iteration) and its plan as result-row fields."""

from __future__ import annotations

from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.workload.model_flops import model_flop_per_step
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.arithmetic import query_tokens
from ddlsim.workload.transformer.blocks import KernelBytes, decoder_blocks
from ddlsim.workload.transformer.collectives import LayerCollectives
from ddlsim.workload.transformer.layer import ACTIVATION_BYTES
from ddlsim.workload.transformer.plan import DecoderPlan, partition_decoder
from ddlsim.workload.transformer.shape import DecoderShape
from ddlsim.workload.transformer.stages import describe


def plan_fields(plan: DecoderPlan, precision: Precision, grad_precision: Precision) -> dict[str, object]:
    shape, layer, layout = plan.shape, plan.shape.layer, plan.layout
    calls = LayerCollectives(shape, layout, plan.micro_batch, sequence_parallel=plan.options.sequence_parallel,
                             zero=plan.options.zero, precision=precision, grad_precision=grad_precision)
    busiest = max(plan.stages, key=lambda memory: memory.params)
    tokens = query_tokens(shape, plan.micro_batch, layout.cp)
    fields: dict[str, object] = {
        "params_total": shape.params(),
        "params_per_gpu": plan.params_per_gpu,
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
        "model_state_bytes": round(max(memory.state_bytes for memory in plan.stages)),
        "activation_bytes": round(max(memory.activation_bytes for memory in plan.stages)),
        "d_model": layer.d_model,
        "heads": layer.heads,
        "kv_heads": shape.kv_heads,
        "layers": shape.layers,
        "layers_per_stage": plan.layers_per_stage,
        "stage_layers": describe(plan.stage_layers),
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
