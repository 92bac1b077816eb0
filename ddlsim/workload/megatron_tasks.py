"""One training iteration of a Megatron-partitioned transformer as tasks and collective calls.

Per layer (Shoeybi et al. 2019, Fig. 3: the g and f operators), on every tensor-parallel group:
forward, one all-reduce after the attention block and one after the MLP; backward, one all-reduce
of the input gradient of each block (MLP first); with full activation checkpointing the forward
all-reduces run again during the recompute. With sequence parallelism (Korthikanti et al. 2022,
Sec. 4.2.2) each all-reduce becomes an all-gather before and a reduce-scatter after its block, in
forward, recompute and backward alike. Every one moves b x s x h activations (2 bytes each).

After the last layer's backward the data-parallel groups all-reduce the gradients, 2 bytes per
parameter of one GPU (RAMP Table 9's "DP msg"), then the optimizer steps.

The compute tasks are the transformer layers of `ddlsim.workload.kernels` (the Megatron-LM layer
that `model=gpt` and `model=hf` decoders with materialised attention run, here without the causal
mask): each task's FLOPs and bytes are those of its kernel list, and the kernel roofline prices
it kernel by kernel, as it prices every decoder's layers.

A model with a vocabulary adds Megatron's vocab-parallel embedding (a forward all-reduce) and
output layer (a backward all-reduce of its input gradient, plus the three all-reduces of b x s
fp32 values of the vocab-parallel cross-entropy: maximum, target logit, sum of exponentials).
"""

from __future__ import annotations

from ddlsim.compute.kernel_registry import kernel_work
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout, Phase, Precision
from ddlsim.core.work import ComputeTask, ShardSignature, TaskBlock, Workload
from ddlsim.workload.megatron_partition import MegatronPlan, TransformerModel, partition
from ddlsim.workload.model_flops import model_flop_per_step
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.scaling_laws import TrainingBudget
from ddlsim.workload.shard_signatures import lm_head_signature, megatron_layer_signature

ADAM_FLOP_PER_PARAM = 12.0  # moment updates, bias correction, square root, division, weight update
CROSS_ENTROPY_ALL_REDUCES = 3
LOSS_BYTES = 4
# `tp_all_reduces`: "megatron" runs every tensor-parallel collective Megatron runs (2 forward, 2
# in the recompute, 2 backward per layer); "ramp_7_2_1" only the two RAMP 7.2.1 names ("the
# partitioned multi-head attention and corresponding backward path all-reduce, and partitioned
# feed-forward MLP with corresponding forward path all-reduce").
TP_ALL_REDUCE_RULES = ("megatron", "ramp_7_2_1")
_RAMP_7_2_1_BLOCKS = {Phase.FORWARD: ("mlp",), Phase.BACKWARD: ("attention",), Phase.RECOMPUTE: ()}


def tp_collectives(plan: MegatronPlan, phase: Phase, message_bytes: int, sequence_parallel: bool,
                   prefix: str = "tp", num_ranks: int = 0, rule: str = "megatron") -> list[CollectiveCall]:
    """The tensor-parallel collectives of one layer in `phase` (attention and MLP blocks).

    `num_ranks` (default: all of the plan's GPUs) is how many ranks run the same collectives at
    once; a pipelined plan passes the ranks of one stage. `rule` is one of `TP_ALL_REDUCE_RULES`.
    """
    if plan.tp == 1:
        return []
    group = GroupLayout(plan.tp, 1, num_ranks or plan.num_gpus)
    blocks = ("mlp", "attention") if phase is Phase.BACKWARD else ("attention", "mlp")
    if rule == "ramp_7_2_1":
        blocks = _RAMP_7_2_1_BLOCKS[phase]
    calls = []
    for block in blocks:
        if sequence_parallel:
            for op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER):
                calls.append(CollectiveCall(op, message_bytes, group, phase, f"{prefix}_{block}_{op.value}"))
        else:
            calls.append(CollectiveCall(CollectiveOp.ALL_REDUCE, message_bytes, group, phase,
                                        f"{prefix}_{block}_all_reduce"))
    return calls


def megatron_blocks(plan: MegatronPlan, *, precision: Precision, checkpointing: bool,
                    sequence_parallel: bool, layer_kind: str = "megatron_layer",
                    tp_all_reduces: str = "megatron") -> tuple[TaskBlock, ...]:
    """Forward, backward (with recompute), gradient all-reduce and optimizer blocks."""
    if tp_all_reduces not in TP_ALL_REDUCE_RULES:
        raise ConfigError("tp_all_reduces", tp_all_reduces, f"must be one of {', '.join(TP_ALL_REDUCE_RULES)}")
    stack, tp, batch = plan.model.stack, plan.tp, plan.local_batch
    layer = stack.layer
    signature = megatron_layer_signature(layer, tp, batch, precision=precision.value,
                                         checkpointing=checkpointing, kind=layer_kind)
    message = layer.tp_message_bytes(batch)
    forward = kernel_task("layer_forward", Phase.FORWARD, signature)
    backward = kernel_task("layer_backward", Phase.BACKWARD, signature)
    backward_tasks: list = []
    if checkpointing:
        backward_tasks.append(kernel_task("layer_recompute", Phase.RECOMPUTE, signature))
        backward_tasks += tp_collectives(plan, Phase.RECOMPUTE, message, sequence_parallel, rule=tp_all_reduces)
    backward_tasks += [backward, *tp_collectives(plan, Phase.BACKWARD, message, sequence_parallel,
                                                 rule=tp_all_reduces)]

    blocks = []
    vocab = plan.model.vocab
    head = lm_head_signature(layer.d_model, vocab, layer.seq_len, tp, batch, precision.value) if vocab else None
    tp_group = GroupLayout(tp, 1, plan.num_gpus)
    if head is not None and tp > 1:
        blocks.append(TaskBlock("embedding", (CollectiveCall(CollectiveOp.ALL_REDUCE, message, tp_group,
                                                             Phase.FORWARD, "tp_embedding_all_reduce"),)))
    forward_calls = tp_collectives(plan, Phase.FORWARD, message, sequence_parallel, rule=tp_all_reduces)
    blocks.append(TaskBlock("forward", (forward, *forward_calls), repeat=stack.layers))
    if head is not None:
        loss_message = LOSS_BYTES * batch * layer.seq_len
        head_forward = [kernel_task("output_forward", Phase.FORWARD, head)]
        head_backward = [kernel_task("output_backward", Phase.BACKWARD, head)]
        if tp > 1:
            head_forward.append(CollectiveCall(CollectiveOp.ALL_REDUCE, loss_message, tp_group, Phase.FORWARD,
                                               "tp_cross_entropy_all_reduce", count=CROSS_ENTROPY_ALL_REDUCES))
            head_backward.append(CollectiveCall(CollectiveOp.ALL_REDUCE, message, tp_group, Phase.BACKWARD,
                                                "tp_output_all_reduce"))
        blocks.append(TaskBlock("output_forward", tuple(head_forward)))
        blocks.append(TaskBlock("output_backward", tuple(head_backward)))
    blocks.append(TaskBlock("backward", tuple(backward_tasks), repeat=stack.layers))
    if plan.dp > 1:
        dp_bytes = dp_message_bytes(plan, precision)
        blocks.append(TaskBlock("gradient_all_reduce", (CollectiveCall(
            CollectiveOp.ALL_REDUCE, dp_bytes, GroupLayout(plan.dp, tp, plan.num_gpus), Phase.BACKWARD,
            "dp_gradient_all_reduce"),)))
    _, adam_bytes = kernel_work(signature, Phase.OPTIMIZER)
    blocks.append(TaskBlock("optimizer", (ComputeTask("optimizer_step", Phase.OPTIMIZER, signature,
                                                      ADAM_FLOP_PER_PARAM * layer.params_per_rank(tp), adam_bytes,
                                                      count=stack.layers),)))
    return tuple(blocks)


def kernel_task(name: str, phase: Phase, signature: ShardSignature) -> ComputeTask:
    """A task with the FLOPs and bytes of its kernel list (`ddlsim.workload.kernels`)."""
    flop, memory_bytes = kernel_work(signature, phase)
    return ComputeTask(name, phase, signature, flop, memory_bytes)


def dp_message_bytes(plan: MegatronPlan, precision: Precision) -> int:
    """The data-parallel gradient all-reduce: every parameter of one GPU, at the gradient precision."""
    return precision.bytes_per_element * plan.params_per_gpu


def plan_fields(plan: MegatronPlan, precision: Precision, num_steps: int) -> dict[str, object]:
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


def build_megatron_workload(name: str, model: TransformerModel, budget: TrainingBudget | None,
                            parallel: ParallelConfig, memory_bytes: int, *, global_batch: int = 0,
                            num_steps: int = 0, precision: Precision = Precision.FP16, widen_heads: bool = False,
                            layer_kind: str = "megatron_layer", tp_all_reduces: str = "megatron") -> Workload:
    """Partition `model` and list the tasks of one iteration.

    With a scaling-law `budget`, the target global batch defaults to the critical batch and the
    steps are recomputed for the global batch the partitioner picked (Kaplan Eq. 5.4); without
    one, `global_batch` must be given and `num_steps` is passed through.
    """
    if budget is None and global_batch < 1:
        raise ConfigError("global_batch", global_batch, "must be >= 1 for a model without a target loss")
    target = global_batch or budget.critical_batch_sequences
    plan = partition(model, parallel, memory_bytes, target, widen_heads=widen_heads)
    steps = budget.steps(plan.global_batch) if budget is not None else num_steps
    blocks = megatron_blocks(plan, precision=precision, checkpointing=parallel.activation_checkpointing,
                             sequence_parallel=parallel.sequence_parallel, layer_kind=layer_kind,
                             tp_all_reduces=tp_all_reduces)
    fields = plan_fields(plan, precision, steps)
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
