"""`model=gpt`: a decoder-only GPT trained the Megatron-LM way, with tensor, pipeline and data
parallelism, micro-batches and full activation checkpointing (the setting of the measured A100
runs in ``../shared/validation/vtrain``).

The partition (degrees, micro-batches, per-stage parameters and memory) is `gpt_plan.py`. The
workload lists, in execution order, the blocks of ONE micro-batch on one pipeline stage, then
the blocks that run once per iteration (see `ddlsim.types.TaskBlock.stages` and
`per_micro_batch`; the 1F1B schedule of `ddlsim.training.pipeline` lays them out):

forward step (per micro-batch)
    ``pipeline_gather_forward`` (stages 1..p-1, t > 1): the tensor-parallel all-gather that
    reassembles the activation received from the previous stage (Megatron's scatter-gather
    optimisation: each rank of a tensor-parallel group sends only 1/t of it);
    ``embedding_forward`` (stage 0): vocab-parallel word and position embeddings, and their
    tensor-parallel all-reduce; ``forward`` (every stage, repeat = layers per stage): the layer
    and its two tensor-parallel all-reduces; ``output_forward`` (stage p-1): final norm, logits
    and the vocab-parallel cross-entropy with its three small all-reduces;
    ``pipeline_send_forward`` (stages 0..p-2): the activation to the next stage (send_recv of
    b x s x h x 2 / t bytes).
backward step (per micro-batch)
    ``pipeline_gather_backward`` (stages 0..p-2), ``output_backward`` (stage p-1), ``backward``
    (every stage: recompute with its all-reduces, then backward with its all-reduces),
    ``embedding_backward`` (stage 0), ``pipeline_send_backward`` (stages 1..p-1).
per iteration
    ``gradient_all_reduce`` (per stage, d > 1): the data-parallel all-reduce of the stage's
    gradients in one piece (no bucketing), after its last micro-batch; ``embedding_all_reduce``
    (stages 0 and p-1, tied embeddings and p > 1): the two copies of the word embedding's
    gradient; ``optimizer_sync`` (p > 1 or t > 1): the found-inf and gradient-norm all-reduces over the
    model-parallel group, which make every stage wait for the slowest before stepping;
    ``optimizer`` (per stage): Adam on the stage's parameters.

Group layouts are those of one stage (t x d ranks): tensor-parallel ``GroupLayout(t, 1, t d)``,
data-parallel ``GroupLayout(d, t, t d)``; stage-to-stage transfers ``GroupLayout(2, t d, 2 t d)``
(every rank of a stage with its peer in the next, all at once), which a fabric places on the
ranks of the first two stages: other boundaries are priced like that one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ddlsim.errors import ConfigError
from ddlsim.registry import MODELS
from ddlsim.types import (
    CollectiveCall,
    CollectiveOp,
    ComputeTask,
    GroupLayout,
    Phase,
    Precision,
    ShardSignature,
    TaskBlock,
    Workload,
)
from ddlsim.workload.equivalent.lm_head import lm_head_flop, lm_head_signature
from ddlsim.workload.equivalent.megatron_layer import megatron_layer_signature
from ddlsim.workload.gpt_kernels import kernels_for, total_bytes
from ddlsim.workload.gpt_plan import DEFAULT_VOCAB_MULTIPLE, GptPlan, GptShape, partition_gpt
from ddlsim.workload.megatron_tasks import ADAM_FLOP_PER_PARAM, CROSS_ENTROPY_ALL_REDUCES, LOSS_BYTES, tp_collectives
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer_layer import ACTIVATION_BYTES, LayerShape

GPT2_VOCAB = 50257
OPTIMIZER_SYNC_BYTES = 4  # one fp32 value: the found-inf flag, then the squared gradient norm
OPTIMIZER_SYNC_CALLS = 2


@dataclass
class GptConfig:
    """A GPT by its shape. `global_batch` 0 means one micro-batch per data-parallel replica.

    `vocab_multiple`: Megatron pads the vocabulary to a multiple of this x tensor parallel.
    `grad_reduce_precision` ("" = `precision`): the type of the data-parallel gradient
    all-reduce. `scatter_gather_p2p`: stage-to-stage sends of 1/t of the activation plus an
    all-gather (Megatron's default) instead of the whole activation from every rank.
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


@MODELS.register("gpt", GptConfig)
@dataclass(frozen=True)
class GptModel:
    """Decoder-only GPT (Megatron-LM): tensor, pipeline (1F1B) and data parallel, checkpointing."""

    shape: GptShape
    global_batch: int
    num_steps: int
    precision: Precision
    grad_precision: Precision
    scatter_gather_p2p: bool = True
    name: str = "gpt"

    @classmethod
    def from_config(cls, config: GptConfig) -> GptModel:
        for key in ("global_batch", "num_steps", "ffn_hidden"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0")
        layer = LayerShape(config.d_model, config.heads, config.seq_len, ffn_hidden=config.ffn_hidden, causal=True)
        shape = GptShape(layer, config.layers, config.vocab, config.vocab_multiple, config.tied_embeddings)
        precision = parse_precision(config.precision)
        grad = parse_precision(config.grad_reduce_precision, "grad_reduce_precision") \
            if config.grad_reduce_precision else precision
        return cls(shape, config.global_batch, config.num_steps, precision, grad, config.scatter_gather_p2p,
                   config.name)

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        plan = partition_gpt(self.shape, parallel, memory_bytes, self.global_batch)
        blocks = gpt_blocks(plan, self.precision, self.grad_precision, parallel, self.scatter_gather_p2p)
        return Workload(name=self.name, num_ranks=plan.num_gpus, blocks=blocks, global_batch=plan.global_batch,
                        num_steps=self.num_steps,
                        plan=plan_fields(plan, self.precision, self.grad_precision, parallel))


def _task(name: str, phase: Phase, signature: ShardSignature, flop: float) -> ComputeTask:
    return ComputeTask(name, phase, signature, flop, total_bytes(kernels_for(signature, phase)))


def _stage_groups(plan: GptPlan) -> dict[int, tuple[int, ...]]:
    """Stages grouped by their parameter count (first, middle and last usually differ)."""
    groups: dict[int, list[int]] = defaultdict(list)
    for stage, params in enumerate(plan.stage_params):
        groups[params].append(stage)
    return {params: tuple(stages) for params, stages in groups.items()}


def _param_tensors(plan: GptPlan, stage: int) -> int:
    layer = plan.shape.layer
    per_layer = (2 if layer.rmsnorm else 4) + 4 + (4 if layer.bias else 0)
    tensors = plan.layers_per_stage * per_layer
    if stage == 0:
        tensors += 2
    if stage == plan.pp - 1:
        tensors += 2 + (1 if plan.pp > 1 or not plan.shape.tied_embeddings else 0)
    return tensors


def _micro_batch_blocks(plan: GptPlan, precision: Precision, parallel: ParallelConfig,
                        scatter_gather: bool) -> list[TaskBlock]:
    shape, tp, mb, pp, ranks = plan.shape, plan.tp, plan.micro_batch, plan.pp, plan.stage_ranks
    layer = shape.layer
    first, last, middle_up, middle_down = (0,), (pp - 1,), tuple(range(pp - 1)), tuple(range(1, pp))
    sp, ckpt = parallel.sequence_parallel, parallel.activation_checkpointing
    message = layer.tp_message_bytes(mb)
    tp_group = GroupLayout(tp, 1, ranks)
    signature = megatron_layer_signature(layer, tp, mb, precision=precision.value, checkpointing=ckpt,
                                         kind="gpt_layer")
    vocab = shape.padded_vocab(tp)
    embedding = ShardSignature("gpt_embedding", (("d_model", layer.d_model), ("vocab", vocab),
                                                 ("seq_len", layer.seq_len), ("tp", tp)), mb, precision, False)
    head = lm_head_signature(layer.d_model, vocab, layer.seq_len, tp, mb, precision.value)

    def collectives(phase: Phase) -> list[CollectiveCall]:
        return tp_collectives(plan, phase, message, sp, num_ranks=ranks)  # type: ignore[arg-type]

    def all_reduce(size: int, phase: Phase, name: str, count: int = 1) -> list[CollectiveCall]:
        return [CollectiveCall(CollectiveOp.ALL_REDUCE, size, tp_group, phase, name, count)] if tp > 1 else []

    p2p_bytes = message // tp if scatter_gather and tp > 1 else message
    pair = GroupLayout(2, ranks, 2 * ranks)

    def transfer(direction: str, phase: Phase, senders: tuple[int, ...], receivers: tuple[int, ...]) -> list[TaskBlock]:
        if pp == 1:
            return []
        send = CollectiveCall(CollectiveOp.SEND_RECV, p2p_bytes, pair, phase, f"pp_send_{direction}",
                              root=0 if direction == "forward" else 1)
        blocks = [TaskBlock(f"pipeline_send_{direction}", (send,), stages=senders, per_micro_batch=True)]
        if p2p_bytes != message:
            gather = CollectiveCall(CollectiveOp.ALL_GATHER, message, tp_group, phase, f"pp_gather_{direction}")
            blocks.insert(0, TaskBlock(f"pipeline_gather_{direction}", (gather,), stages=receivers,
                                       per_micro_batch=True))
        return blocks

    forward_sends = transfer("forward", Phase.FORWARD, middle_up, middle_down)
    backward_sends = transfer("backward", Phase.BACKWARD, middle_down, middle_up)
    recompute: list = []
    if ckpt:
        recompute = [_task("layer_recompute", Phase.RECOMPUTE, signature, layer.forward_flop(mb, tp)),
                     *collectives(Phase.RECOMPUTE)]
    loss_bytes = LOSS_BYTES * mb * layer.seq_len
    blocks = [
        *forward_sends[:-1],
        TaskBlock("embedding_forward", (_task("embedding_forward", Phase.FORWARD, embedding, 0.0),
                                        *all_reduce(message, Phase.FORWARD, "tp_embedding_all_reduce")),
                  stages=first, per_micro_batch=True),
        TaskBlock("forward", (_task("layer_forward", Phase.FORWARD, signature, layer.forward_flop(mb, tp)),
                              *collectives(Phase.FORWARD)), repeat=plan.layers_per_stage, per_micro_batch=True),
        TaskBlock("output_forward", (_task("output_forward", Phase.FORWARD, head, lm_head_flop(head)),
                                     *all_reduce(loss_bytes, Phase.FORWARD, "tp_cross_entropy_all_reduce",
                                                 CROSS_ENTROPY_ALL_REDUCES)),
                  stages=last, per_micro_batch=True),
        *forward_sends[-1:],
        *backward_sends[:-1],
        TaskBlock("output_backward", (_task("output_backward", Phase.BACKWARD, head, 2 * lm_head_flop(head)),
                                      *all_reduce(message, Phase.BACKWARD, "tp_output_all_reduce")),
                  stages=last, per_micro_batch=True),
        TaskBlock("backward", (*recompute, _task("layer_backward", Phase.BACKWARD, signature,
                                                 layer.backward_flop(mb, tp)),
                               *collectives(Phase.BACKWARD)), repeat=plan.layers_per_stage, per_micro_batch=True),
        TaskBlock("embedding_backward", (_task("embedding_backward", Phase.BACKWARD, embedding, 0.0),),
                  stages=first, per_micro_batch=True),
        *backward_sends[-1:],
    ]
    return blocks


def _iteration_blocks(plan: GptPlan, precision: Precision, grad_precision: Precision) -> list[TaskBlock]:
    shape, tp, dp, pp, ranks = plan.shape, plan.tp, plan.dp, plan.pp, plan.stage_ranks
    grad_bytes = grad_precision.bytes_per_element
    blocks = []
    groups = _stage_groups(plan)
    if dp > 1:
        for params, stages in groups.items():
            call = CollectiveCall(CollectiveOp.ALL_REDUCE, grad_bytes * params, GroupLayout(dp, tp, ranks),
                                  Phase.BACKWARD, "dp_gradient_all_reduce")
            blocks.append(TaskBlock("gradient_all_reduce", (call,), stages=stages))
    if pp > 1 and shape.tied_embeddings:
        size = grad_bytes * shape.local_vocab(tp) * shape.layer.d_model
        call = CollectiveCall(CollectiveOp.ALL_REDUCE, size, GroupLayout(2, ranks, 2 * ranks), Phase.BACKWARD,
                              "embedding_all_reduce")
        blocks.append(TaskBlock("embedding_all_reduce", (call,), stages=(0, pp - 1)))
    if pp > 1 or tp > 1:
        group = GroupLayout(pp, ranks, plan.num_gpus) if pp > 1 else GroupLayout(tp, 1, ranks)
        call = CollectiveCall(CollectiveOp.ALL_REDUCE, OPTIMIZER_SYNC_BYTES, group, Phase.OPTIMIZER,
                              "optimizer_sync_all_reduce", count=OPTIMIZER_SYNC_CALLS)
        blocks.append(TaskBlock("optimizer_sync", (call,)))
    for params, stages in groups.items():
        signature = ShardSignature("adam_shard", (("params", params), ("tensors", _param_tensors(plan, stages[0]))),
                                   1, precision, False)
        blocks.append(TaskBlock("optimizer", (_task("optimizer_step", Phase.OPTIMIZER, signature,
                                                    ADAM_FLOP_PER_PARAM * params),), stages=stages))
    return blocks


def gpt_blocks(plan: GptPlan, precision: Precision, grad_precision: Precision, parallel: ParallelConfig,
               scatter_gather: bool = True) -> tuple[TaskBlock, ...]:
    """One micro-batch on one stage, then the per-iteration blocks (see the module docstring)."""
    if parallel.sequence_parallel and plan.pp > 1:
        raise ConfigError("sequence_parallel", True, "is not modelled together with pipeline parallelism")
    return (*_micro_batch_blocks(plan, precision, parallel, scatter_gather),
            *_iteration_blocks(plan, precision, grad_precision))


def plan_fields(plan: GptPlan, precision: Precision, grad_precision: Precision,
                parallel: ParallelConfig) -> dict[str, object]:
    shape, layer = plan.shape, plan.shape.layer
    message = layer.tp_message_bytes(plan.micro_batch)
    return {
        "params_total": shape.params(),
        "params_per_gpu": plan.params_per_gpu,
        "tp_degree": plan.tp,
        "dp_degree": plan.dp,
        "pp_degree": plan.pp,
        "num_gpus": plan.num_gpus,
        "micro_batch": plan.micro_batch,
        "micro_batches": plan.micro_batches,
        "local_batch": plan.micro_batch * plan.micro_batches,
        "global_batch": plan.global_batch,
        "dp_message_bytes": grad_precision.bytes_per_element * plan.params_per_gpu if plan.dp > 1 else 0,
        "tp_message_bytes": message if plan.tp > 1 else 0,
        "pp_message_bytes": ACTIVATION_BYTES * plan.micro_batch * layer.seq_len * layer.d_model if plan.pp > 1 else 0,
        "memory_per_gpu_bytes": plan.memory_per_gpu_bytes,
        "d_model": layer.d_model,
        "heads": layer.heads,
        "layers": shape.layers,
        "layers_per_stage": plan.layers_per_stage,
        "ffn_hidden": layer.ffn_hidden,
        "seq_len": layer.seq_len,
        "vocab": shape.vocab,
        "padded_vocab": shape.padded_vocab(plan.tp),
        "precision": precision.value,
        "activation_checkpointing": parallel.activation_checkpointing,
    }
