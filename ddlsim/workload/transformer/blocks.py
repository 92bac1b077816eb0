"""The task blocks of one training iteration of a partitioned decoder (`DecoderPlan`).

The workload lists, in execution order, the blocks of ONE micro-batch on one model chunk, then
the blocks that run once per iteration (`ddlsim.training.schedules.one_f_one_b` lays them out with the 1F1B
or interleaved 1F1B schedule). Without virtual stages a chunk is a pipeline stage; with
`virtual_stages` v > 1 the per-micro-batch blocks' `stages` name model chunks 0 .. PP v - 1
(chunk c runs on stage c mod PP) and the per-iteration blocks' `stages` name pipeline stages.

forward step (per micro-batch and chunk)
    ``pipeline_gather_forward`` (chunks 1.., TP > 1 without SP: Megatron's scatter-gather),
    ``embedding_forward`` (chunk 0: vocab-parallel embedding, TP all-reduce, or reduce-scatter
    with SP), ``forward`` (dense layers) and ``moe_forward`` (MoE layers), each layer's compute
    and collectives (`collectives.py`; with ZeRO 3 each parameter all-gather is followed, and each
    gradient reduce-scatter preceded, by FSDP2's copies: `fsdp_copies.py`), ``output_forward``
    (last chunk: final norm, logits and the vocab-parallel cross-entropy's three all-reduces;
    with SP the input is all-gathered first), ``pipeline_send_forward`` (chunks ..PP v - 2).
backward step
    ``pipeline_gather_backward``, ``output_backward``, ``moe_backward``, ``backward`` (each with
    its recompute: the whole layer for ``full``, the attention core for ``selective``),
    ``embedding_backward``, ``pipeline_send_backward``.
per iteration (per stage)
    ZeRO 0: ``gradient_all_reduce`` (``dp_gradient_all_reduce`` over DP x CP, and
    ``edp_gradient_all_reduce`` of expert gradients over DP x CP / EP); ZeRO 1 and 2:
    ``gradient_reduce_scatter`` (``dp_gradient_reduce_scatter``, ``edp_gradient_reduce_scatter``)
    and, after the optimizer, ``param_all_gather`` (``dp_param_all_gather``,
    ``edp_param_all_gather``), Megatron's distributed optimizer; ZeRO 3 reduces per layer
    instead. Then ``embedding_all_reduce`` (tied embeddings, PP > 1), ``optimizer_sync`` and
    ``optimizer`` (Adam on the rank's parameters, or its ZeRO shard).
"""

from __future__ import annotations

import math
from collections import defaultdict

from ddlsim.compute.kernel_registry import has_kernels, kernel_work
from ddlsim.core.caches import Memo
from ddlsim.core.types import CollectiveCall, CollectiveOp, Phase, Precision
from ddlsim.core.work import ComputeTask, ShardSignature, TaskBlock
from ddlsim.workload.kernels.spec import head_keys, layer_keys
from ddlsim.workload.shard_signatures import lm_head_flop, lm_head_signature
from ddlsim.workload.transformer import arithmetic
from ddlsim.workload.transformer.collectives import LayerCollectives
from ddlsim.workload.transformer.fsdp_copies import gather_copies, reduce_copies
from ddlsim.workload.transformer.plan import DecoderPlan
from ddlsim.workload.transformer.shape import DENSE, MOE
from ddlsim.workload.transformer.stages import chunk_offsets

ADAM_FLOP_PER_PARAM = 12.0
CROSS_ENTROPY_ALL_REDUCES = 3
LOSS_BYTES = 4
OPTIMIZER_SYNC_BYTES = 4  # one fp32 value: the found-inf flag, then the squared gradient norm
OPTIMIZER_SYNC_CALLS = 2


class KernelBytes:
    """(FLOPs, bytes) of a task's kernel list, by (signature, phase): one per model object, so
    that plans sharing a shard shape (a search prices thousands) list its kernels once."""

    def __init__(self) -> None:
        self._bytes = Memo("kernel bytes")  # (ShardSignature, Phase) -> (flop, bytes)

    def work(self, signature: ShardSignature, phase: Phase) -> tuple[float, float]:
        key = (signature, phase)
        value = self._bytes.get(key)
        if value is None:
            value = self._bytes.put(key, kernel_work(signature, phase))
        return value

    def __call__(self, signature: ShardSignature, phase: Phase) -> float:
        return self.work(signature, phase)[1]

    def clear(self) -> None:
        self._bytes.clear()


class _Blocks:
    """Builds the blocks of one plan; signatures and sizes are computed once."""

    def __init__(self, plan: DecoderPlan, precision: Precision, grad_precision: Precision,
                 scatter_gather: bool, kernel_bytes: KernelBytes | None = None) -> None:
        self.kernel_bytes = kernel_bytes or KernelBytes()
        self.plan, self.precision, self.grad_precision = plan, precision, grad_precision
        self.shape, self.layout, options = plan.shape, plan.layout, plan.options
        self.recompute, self.sp, self.zero = options.recompute, options.sequence_parallel, options.zero
        self.scatter_gather = scatter_gather
        self.calls = LayerCollectives(self.shape, self.layout, plan.micro_batch, sequence_parallel=self.sp,
                                      zero=self.zero, precision=precision, grad_precision=grad_precision)
        self._signatures: dict[tuple[str, bool], ShardSignature] = {}  # this plan's, by (kind, core)
        self._chunk_counts: dict[tuple[int, int], list[int]] | None = None
        self._offsets: tuple[int, ...] | None = None

    # ---- compute tasks ----------------------------------------------------------------------------
    def task(self, name: str, phase: Phase, signature: ShardSignature, flop: float, memory_bytes: float = -1.0
             ) -> ComputeTask:
        if memory_bytes < 0:
            memory_bytes = self.kernel_bytes(signature, phase)
        return ComputeTask(name, phase, signature, flop, memory_bytes)

    def layer_signature(self, kind: str, core: bool = False) -> ShardSignature:
        signature = self._signatures.get((kind, core))
        if signature is None:
            signature = self._signatures[(kind, core)] = self._layer_signature(kind, core)
        return signature

    def _layer_signature(self, kind: str, core: bool) -> ShardSignature:
        shape, layout, mb = self.shape, self.layout, self.plan.micro_batch
        keys = layer_keys(shape, layout.tp, layout.cp, self.sp, kind == MOE and not core, layout.ep)
        checkpointing = self.recompute == "full"
        if shape.mla is None and kind == DENSE:
            return ShardSignature("attention_core" if core else "gpt_layer", tuple(sorted(keys.items())), mb,
                                  self.precision, checkpointing)
        kind_name = "decoder_attention_core" if core else f"{'mla_' if shape.mla else ''}{kind}_layer"
        return ShardSignature(kind_name, tuple(sorted(keys.items())), mb, self.precision, checkpointing)

    def kernel_task(self, name: str, phase: Phase, signature: ShardSignature) -> ComputeTask:
        """A task whose FLOPs and bytes are those of its kernel list (the work its kernels do)."""
        flop, memory_bytes = self.kernel_bytes.work(signature, phase)
        return ComputeTask(name, phase, signature, flop, memory_bytes)

    def layer_task(self, kind: str, phase: Phase) -> ComputeTask:
        shape, layout, mb = self.shape, self.layout, self.plan.micro_batch
        signature = self.layer_signature(kind)
        name = {Phase.FORWARD: "layer_forward", Phase.RECOMPUTE: "layer_recompute"}.get(phase, "layer_backward")
        if has_kernels(signature.model_kind):
            return self.kernel_task(name, phase, signature)
        flop = arithmetic.layer_forward_flop(shape, kind, mb, layout.tp, layout.cp)
        if phase is Phase.BACKWARD:
            flop *= 2.0
        traffic = arithmetic.layer_memory_bytes(shape, kind, mb, layout.tp, layout.cp, layout.ep)
        return self.task(name, phase, signature, flop, traffic * (2.0 if phase is Phase.BACKWARD else 1.0))

    def recompute_tasks(self, kind: str) -> list:
        if self.recompute == "full":
            return [self.layer_task(kind, Phase.RECOMPUTE), *self.calls.layer(kind, Phase.RECOMPUTE)]
        if self.recompute == "selective":
            shape, layout, mb = self.shape, self.layout, self.plan.micro_batch
            signature = self.layer_signature(kind, core=True)
            if has_kernels(signature.model_kind):
                core = self.kernel_task("attention_core_recompute", Phase.RECOMPUTE, signature)
            else:
                core = self.task("attention_core_recompute", Phase.RECOMPUTE, signature,
                                 arithmetic.attention_core_flop(shape, mb, layout.tp, layout.cp),
                                 2 * arithmetic.attention_core_bytes(shape, mb, layout.tp, layout.cp))
            return [core, *self.calls.ring_passes(Phase.RECOMPUTE)]
        return []

    # ---- ZeRO 3 (FSDP) ----------------------------------------------------------------------------------
    def fsdp_gather(self, dense: int, expert: int, phase: Phase) -> list:
        """A unit's parameter all-gathers, each followed by FSDP2's copies (`fsdp_copies.py`)."""
        calls = self.calls.fsdp(dense, expert, True, phase)
        if not self.plan.options.fsdp_copies:
            return calls
        return [*calls, *gather_copies(calls, self.precision, self.kernel_bytes.work)]

    def fsdp_reduce(self, dense: int, expert: int, phase: Phase) -> list:
        """A unit's gradient reduce-scatters, preceded by FSDP2's copy-in."""
        calls = self.calls.fsdp(dense, expert, False, phase)
        if not self.plan.options.fsdp_copies:
            return calls
        return [*reduce_copies(calls, self.precision, self.grad_precision, self.kernel_bytes.work), *calls]

    # ---- per-micro-batch blocks -----------------------------------------------------------------------
    def layer_blocks(self, phase: Phase) -> list[TaskBlock]:
        """One block per layer kind and distinct layer count of the chunks (usually one)."""
        counts = self.chunk_counts()
        kinds = (DENSE, MOE) if phase is Phase.FORWARD else (MOE, DENSE)
        blocks = []
        for kind in kinds:
            for pair, members in counts.items():
                repeat = pair[0] if kind == DENSE else pair[1]
                if not repeat:
                    continue
                stages = () if len(counts) == 1 else tuple(members)
                name = ("" if kind == DENSE else "moe_") + phase.value
                blocks.append(TaskBlock(name, self.layer_tasks(kind, phase), repeat=repeat, stages=stages,
                                        per_micro_batch=True))
        return blocks

    def chunk_offsets(self) -> tuple[int, ...]:
        if self._offsets is None:
            self._offsets = chunk_offsets(self.plan.chunk_layers)
        return self._offsets

    def chunk_counts(self) -> dict[tuple[int, int], list[int]]:
        """The model chunks by their (dense, MoE) layers, in order of first appearance."""
        if self._chunk_counts is None:
            shape, chunk_layers = self.shape, self.plan.chunk_layers
            counts: dict[tuple[int, int], list[int]] = defaultdict(list)
            for chunk, (first, layers) in enumerate(zip(self.chunk_offsets(), chunk_layers, strict=True)):
                counts[shape.layer_counts(first, layers)].append(chunk)
            self._chunk_counts = counts
        return self._chunk_counts

    def layer_tasks(self, kind: str, phase: Phase) -> tuple:
        dense, expert = self.shape.layer_params_per_rank(kind, self.layout.tp, self.layout.ep)
        gather = self.fsdp_gather(dense, expert, phase)
        collectives = self.calls.layer(kind, phase)
        if phase is Phase.FORWARD:
            return (*gather, self.layer_task(kind, phase), *collectives)
        return (*gather, *self.recompute_tasks(kind), self.layer_task(kind, Phase.BACKWARD), *collectives,
                *self.fsdp_reduce(dense, expert, phase))

    def transfer(self, direction: str, phase: Phase) -> list[TaskBlock]:
        chunks, tp = self.layout.chunks, self.layout.tp
        if chunks == 1:
            return []
        message = self.calls.message_bytes
        senders, receivers = (tuple(range(chunks - 1)), tuple(range(1, chunks)))
        if direction == "backward":
            senders, receivers = receivers, senders
        split = tp > 1 and (self.sp or self.scatter_gather)
        p2p_bytes = message // tp if split else message
        send = CollectiveCall(CollectiveOp.SEND_RECV, p2p_bytes, self.layout.pipeline_pair(), phase,
                              f"pp_send_{direction}", root=0 if direction == "forward" else 1)
        blocks = [TaskBlock(f"pipeline_send_{direction}", (send,), stages=senders, per_micro_batch=True)]
        if split and not self.sp:
            gather = CollectiveCall(CollectiveOp.ALL_GATHER, message, self.calls.tensor, phase,
                                    f"pp_gather_{direction}")
            blocks.insert(0, TaskBlock(f"pipeline_gather_{direction}", (gather,), stages=receivers,
                                       per_micro_batch=True))
        return blocks

    def micro_batch_blocks(self) -> list[TaskBlock]:
        shape, layout, mb = self.shape, self.layout, self.plan.micro_batch
        tp, layer = layout.tp, shape.layer
        first, last = (0,), (layout.chunks - 1,)
        vocab, seq = shape.padded_vocab(tp), layer.seq_len // layout.cp
        extra = head_keys(shape, tp, self.sp, layout.chunks)
        embedding = ShardSignature("gpt_embedding", (("d_model", layer.d_model), ("vocab", vocab), ("seq_len", seq),
                                                     ("tp", tp), *extra.items()), mb, self.precision, False)
        head = lm_head_signature(layer.d_model, vocab, seq, tp, mb, self.precision.value, extra)
        message, tensor = self.calls.message_bytes, self.calls.tensor

        def tp_call(op: CollectiveOp, size: int, phase: Phase, name: str, count: int = 1) -> list[CollectiveCall]:
            return [CollectiveCall(op, size, tensor, phase, name, count)] if tp > 1 else []

        embedding_params = shape.embedding_params_per_rank(tp)
        head_params = shape.head_params_per_rank(tp, layout.chunks)
        sp = self.sp
        embedding_out = tp_call(CollectiveOp.REDUCE_SCATTER, message, Phase.FORWARD, "tp_embedding_reduce_scatter") \
            if sp else tp_call(CollectiveOp.ALL_REDUCE, message, Phase.FORWARD, "tp_embedding_all_reduce")
        embedding_grad = tp_call(CollectiveOp.ALL_GATHER, message, Phase.BACKWARD, "tp_embedding_all_gather") \
            if sp else []  # the backward of the forward reduce-scatter, as Megatron issues it
        output_in = tp_call(CollectiveOp.ALL_GATHER, message, Phase.FORWARD, "tp_output_all_gather") if sp else []
        output_grad = tp_call(CollectiveOp.REDUCE_SCATTER, message, Phase.BACKWARD, "tp_output_reduce_scatter") \
            if sp else tp_call(CollectiveOp.ALL_REDUCE, message, Phase.BACKWARD, "tp_output_all_reduce")
        loss = tp_call(CollectiveOp.ALL_REDUCE, LOSS_BYTES * mb * seq, Phase.FORWARD, "tp_cross_entropy_all_reduce",
                       CROSS_ENTROPY_ALL_REDUCES)
        forward_sends = self.transfer("forward", Phase.FORWARD)
        backward_sends = self.transfer("backward", Phase.BACKWARD)
        return [
            *forward_sends[:-1],
            TaskBlock("embedding_forward", (*self.fsdp_gather(embedding_params, 0, Phase.FORWARD),
                                            self.task("embedding_forward", Phase.FORWARD, embedding, 0.0),
                                            *embedding_out), stages=first, per_micro_batch=True),
            *self.layer_blocks(Phase.FORWARD),
            TaskBlock("output_forward", (*self.fsdp_gather(head_params, 0, Phase.FORWARD), *output_in,
                                         self.task("output_forward", Phase.FORWARD, head, lm_head_flop(head)), *loss),
                      stages=last, per_micro_batch=True),
            *forward_sends[-1:],
            *backward_sends[:-1],
            TaskBlock("output_backward", (*self.fsdp_gather(head_params, 0, Phase.BACKWARD),
                                          self.task("output_backward", Phase.BACKWARD, head, 2 * lm_head_flop(head)),
                                          *output_grad, *self.fsdp_reduce(head_params, 0, Phase.BACKWARD)),
                      stages=last, per_micro_batch=True),
            *self.layer_blocks(Phase.BACKWARD),
            TaskBlock("embedding_backward", (*embedding_grad,
                                             self.task("embedding_backward", Phase.BACKWARD, embedding, 0.0),
                                             *self.fsdp_reduce(embedding_params, 0, Phase.BACKWARD)),
                      stages=first, per_micro_batch=True),
            *backward_sends[-1:],
        ]

    # ---- per-iteration blocks ---------------------------------------------------------------------------
    def stage_groups(self) -> dict[tuple[int, int], tuple[int, ...]]:
        """Stages grouped by their (dense, expert) parameters (first, middle and last usually differ)."""
        groups: dict[tuple[int, int], list[int]] = defaultdict(list)
        for memory in self.plan.stages:
            groups[(memory.dense_params, memory.expert_params)].append(memory.stage)
        return {params: tuple(stages) for params, stages in groups.items()}

    def param_tensors(self, stage: int) -> int:
        """Parameter tensors of a stage (the optimizer's multi-tensor launches), counted per layer."""
        shape, layer = self.shape, self.shape.layer
        norms, biases = (2 if layer.rmsnorm else 4), (4 if layer.bias else 0)
        attention = 2 if shape.mla is None else 7
        dense_layer = norms + attention + 2 + biases
        moe = shape.moe
        moe_layer = norms + attention + 1 + (2 if moe and moe.shared_ffn else 0) + \
            (2 * moe.experts // self.layout.ep if moe else 0)
        chunk_layers, layout = self.plan.chunk_layers, self.layout
        offsets = self.chunk_offsets()
        tensors = 0
        for chunk in range(stage, layout.chunks, layout.pp):
            dense, moe_layers = shape.layer_counts(offsets[chunk], chunk_layers[chunk])
            tensors += dense * dense_layer + moe_layers * moe_layer
        if stage == 0:
            tensors += 2
        if stage == layout.pp - 1:
            tensors += 2 + (1 if layout.pp > 1 or not shape.tied_embeddings else 0)
        return tensors

    def data_parallel(self, dense: int, expert: int, gather: bool) -> list[CollectiveCall]:
        """Gradient reduction (ZeRO 0: all-reduce; 1, 2: reduce-scatter) or, after the optimizer
        (`gather`, ZeRO 1 and 2), the all-gather of the updated parameters."""
        layout, calls = self.layout, []
        if self.zero == 3 or (gather and self.zero == 0):
            return []
        if gather:
            op, what, element = CollectiveOp.ALL_GATHER, "param_all_gather", self.precision.bytes_per_element
        else:
            op = CollectiveOp.REDUCE_SCATTER if self.zero else CollectiveOp.ALL_REDUCE
            what, element = f"gradient_{op.value}", self.grad_precision.bytes_per_element
        phase = Phase.OPTIMIZER if gather else Phase.BACKWARD
        if layout.dense_dp > 1:
            calls.append(CollectiveCall(op, element * dense, layout.data(), phase, f"dp_{what}"))
        if expert and layout.expert_dp > 1:
            calls.append(CollectiveCall(op, element * expert, layout.expert_data(), phase, f"edp_{what}"))
        return calls

    def iteration_blocks(self) -> list[TaskBlock]:
        shape, layout = self.shape, self.layout
        tp, pp = layout.tp, layout.pp
        groups = self.stage_groups()
        blocks = []
        reduce_name = "gradient_reduce_scatter" if self.zero else "gradient_all_reduce"
        for (dense, expert), stages in groups.items():
            calls = self.data_parallel(dense, expert, gather=False)
            if calls:
                blocks.append(TaskBlock(reduce_name, tuple(calls), stages=stages))
        if pp > 1 and shape.tied_embeddings:
            size = self.grad_precision.bytes_per_element * shape.local_vocab(tp) * shape.layer.d_model
            if self.zero >= 2:
                size = math.ceil(size / layout.dense_dp)
            call = CollectiveCall(CollectiveOp.ALL_REDUCE, size, layout.pipeline_pair(), Phase.BACKWARD,
                                  "embedding_all_reduce")
            blocks.append(TaskBlock("embedding_all_reduce", (call,), stages=(0, pp - 1)))
        if pp > 1 or tp > 1:
            group = layout.pipeline() if pp > 1 else layout.tensor()
            call = CollectiveCall(CollectiveOp.ALL_REDUCE, OPTIMIZER_SYNC_BYTES, group, Phase.OPTIMIZER,
                                  "optimizer_sync_all_reduce", count=OPTIMIZER_SYNC_CALLS)
            blocks.append(TaskBlock("optimizer_sync", (call,)))
        for (dense, expert), stages in groups.items():
            params = dense + expert
            if self.zero:
                params = math.ceil(dense / layout.dense_dp) + math.ceil(expert / layout.expert_dp)
            signature = ShardSignature("adam_shard", (("params", params),
                                                      ("tensors", self.param_tensors(stages[0]))),
                                       1, self.precision, False)
            blocks.append(TaskBlock("optimizer", (self.task("optimizer_step", Phase.OPTIMIZER, signature,
                                                            ADAM_FLOP_PER_PARAM * params),), stages=stages))
        for (dense, expert), stages in groups.items():
            calls = self.data_parallel(dense, expert, gather=True)
            if calls:
                blocks.append(TaskBlock("param_all_gather", tuple(calls), stages=stages))
        return blocks


def decoder_blocks(plan: DecoderPlan, precision: Precision, grad_precision: Precision,
                   scatter_gather: bool = True, kernel_bytes: KernelBytes | None = None) -> tuple[TaskBlock, ...]:
    """One micro-batch on one chunk, then the per-iteration blocks (see the module docstring)."""
    builder = _Blocks(plan, precision, grad_precision, scatter_gather, kernel_bytes)
    return (*builder.micro_batch_blocks(), *builder.iteration_blocks())
