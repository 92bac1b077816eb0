"""The task blocks of one iteration of a Megatron-2021 plan (`megatron2021_plan.py`), and its fields.

Per layer (Shoeybi et al. 2019, Fig. 3: the g and f operators), on every tensor-parallel group:
forward, one all-reduce after the attention block and one after the MLP; backward, one all-reduce
of the input gradient of each block (MLP first); with full activation checkpointing the forward
all-reduces run again during the recompute. With sequence parallelism (Korthikanti et al. 2022,
Sec. 4.2.2) each all-reduce becomes an all-gather before and a reduce-scatter after its block, in
forward, recompute and backward alike. Every one moves b x s x h activations (2 bytes each). These
are the decoder flavour's layer collectives (`collectives.tp_layer_calls`); `tp_all_reduces`
``ramp_7_2_1`` keeps only the two RAMP 7.2.1 names.

After the last layer's backward the data-parallel groups all-reduce the gradients, 2 bytes per
parameter of one GPU (RAMP Table 9's "DP msg"), then the optimizer steps.

The compute tasks are the transformer layers of `ddlsim.workload.kernels` (the Megatron-LM layer
that `model=gpt` and `model=hf` decoders with materialised attention run, here under the
``megatron_layer`` signature and without the causal mask unless the model is causal): each task's
FLOPs and bytes are those of its kernel list (`blocks.KernelBytes`), and the kernel roofline
prices it kernel by kernel, as it prices every decoder's layers.

Where the decoder flavour (`blocks.py`) lays out one micro-batch per pipeline chunk, then the
per-iteration blocks, this flavour keeps the blocks of its RAMP reproductions: ``embedding``
(the vocab-parallel embedding's all-reduce, no compute task), ``forward``, ``output_forward``,
``output_backward``, ``backward``, ``gradient_all_reduce`` and ``optimizer`` (Adam on the layers'
parameters, under the layer's signature), none of them per micro-batch.

A model with a vocabulary adds Megatron's vocab-parallel embedding (a forward all-reduce) and
output layer (a backward all-reduce of its input gradient, plus the three all-reduces of b x s
fp32 values of the vocab-parallel cross-entropy: maximum, target logit, sum of exponentials).
"""

from __future__ import annotations

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveOp, Phase, Precision
from ddlsim.core.work import ComputeTask, TaskBlock
from ddlsim.workload.shard_signatures import lm_head_signature, megatron_layer_signature
from ddlsim.workload.transformer.blocks import ADAM_FLOP_PER_PARAM, CROSS_ENTROPY_ALL_REDUCES, LOSS_BYTES, KernelBytes
from ddlsim.workload.transformer.collectives import TP_ALL_REDUCE_RULES, tp_layer_calls
from ddlsim.workload.transformer.megatron2021_plan import Megatron2021Plan


def megatron2021_blocks(plan: Megatron2021Plan, *, precision: Precision, checkpointing: bool,
                        sequence_parallel: bool, layer_kind: str = "megatron_layer",
                        tp_all_reduces: str = "megatron", kernel_bytes: KernelBytes | None = None
                        ) -> tuple[TaskBlock, ...]:
    """Embedding, forward, output layer, backward (with recompute), gradient all-reduce and optimizer."""
    if tp_all_reduces not in TP_ALL_REDUCE_RULES:
        raise ConfigError("tp_all_reduces", tp_all_reduces, f"must be one of {', '.join(TP_ALL_REDUCE_RULES)}")
    kernel_bytes = kernel_bytes or KernelBytes()
    stack, tp, batch, layout = plan.model.stack, plan.tp, plan.local_batch, plan.layout
    layer, tensor = stack.layer, layout.tensor()
    signature = megatron_layer_signature(layer, tp, batch, precision=precision.value,
                                         checkpointing=checkpointing, kind=layer_kind)
    message = layer.tp_message_bytes(batch)

    def task(name: str, phase: Phase, shard=signature) -> ComputeTask:
        flop, memory_bytes = kernel_bytes.work(shard, phase)
        return ComputeTask(name, phase, shard, flop, memory_bytes)

    def layer_calls(phase: Phase) -> list[CollectiveCall]:
        return tp_layer_calls(tensor, message, phase, sequence_parallel, tp_all_reduces)

    backward_tasks: list = []
    if checkpointing:
        backward_tasks += [task("layer_recompute", Phase.RECOMPUTE), *layer_calls(Phase.RECOMPUTE)]
    backward_tasks += [task("layer_backward", Phase.BACKWARD), *layer_calls(Phase.BACKWARD)]

    blocks = []
    vocab = plan.model.vocab
    head = lm_head_signature(layer.d_model, vocab, layer.seq_len, tp, batch, precision.value) if vocab else None
    if head is not None and tp > 1:
        blocks.append(TaskBlock("embedding", (CollectiveCall(CollectiveOp.ALL_REDUCE, message, tensor,
                                                             Phase.FORWARD, "tp_embedding_all_reduce"),)))
    blocks.append(TaskBlock("forward", (task("layer_forward", Phase.FORWARD), *layer_calls(Phase.FORWARD)),
                            repeat=stack.layers))
    if head is not None:
        loss_message = LOSS_BYTES * batch * layer.seq_len
        head_forward = [task("output_forward", Phase.FORWARD, head)]
        head_backward = [task("output_backward", Phase.BACKWARD, head)]
        if tp > 1:
            head_forward.append(CollectiveCall(CollectiveOp.ALL_REDUCE, loss_message, tensor, Phase.FORWARD,
                                               "tp_cross_entropy_all_reduce", count=CROSS_ENTROPY_ALL_REDUCES))
            head_backward.append(CollectiveCall(CollectiveOp.ALL_REDUCE, message, tensor, Phase.BACKWARD,
                                                "tp_output_all_reduce"))
        blocks.append(TaskBlock("output_forward", tuple(head_forward)))
        blocks.append(TaskBlock("output_backward", tuple(head_backward)))
    blocks.append(TaskBlock("backward", tuple(backward_tasks), repeat=stack.layers))
    if plan.dp > 1:
        blocks.append(TaskBlock("gradient_all_reduce", (CollectiveCall(
            CollectiveOp.ALL_REDUCE, dp_message_bytes(plan, precision), layout.data(), Phase.BACKWARD,
            "dp_gradient_all_reduce"),)))
    _, adam_bytes = kernel_bytes.work(signature, Phase.OPTIMIZER)
    blocks.append(TaskBlock("optimizer", (ComputeTask("optimizer_step", Phase.OPTIMIZER, signature,
                                                      ADAM_FLOP_PER_PARAM * layer.params_per_rank(tp), adam_bytes,
                                                      count=stack.layers),)))
    return tuple(blocks)


def dp_message_bytes(plan: Megatron2021Plan, precision: Precision) -> int:
    """The data-parallel gradient all-reduce: every parameter of one GPU, at the gradient precision."""
    return precision.bytes_per_element * plan.params_per_gpu


def megatron2021_plan_fields(plan: Megatron2021Plan, precision: Precision, num_steps: int) -> dict[str, object]:
    """The result-row fields the contract names, plus the shape and memory breakdown."""
    layer = plan.model.stack.layer
    return {
        "params_total": plan.model.params(),
        "params_per_gpu": plan.params_per_gpu,
        "tp_degree": plan.tp,
        "dp_degree": plan.dp,
        "pp_degree": 1,
        "num_gpus": plan.num_gpus,
        "local_batch": plan.local_batch,
        "global_batch": plan.global_batch,
        "target_global_batch": plan.target_global_batch,
        "num_steps": num_steps,
        "dp_message_bytes": dp_message_bytes(plan, precision) if plan.dp > 1 else 0,
        "tp_message_bytes": layer.tp_message_bytes(plan.local_batch) if plan.tp > 1 else 0,
        "memory_per_gpu_bytes": plan.memory_per_gpu_bytes,
        "model_state_bytes": plan.model_state_bytes,
        "activation_bytes": plan.activation_bytes,
        "max_local_batch": plan.max_local_batch,
        "d_model": layer.d_model,
        "heads": layer.heads,
        "layers": plan.model.stack.layers,
        "ffn_hidden": layer.ffn_hidden,
        "seq_len": layer.seq_len,
        "vocab": plan.model.vocab,
    }
