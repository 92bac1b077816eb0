"""The collective calls of one decoder layer, per micro-batch and phase, for every parallelism.

Sizes follow the nccl-tests convention of `CollectiveCall` (all-gather: the gathered buffer;
reduce-scatter, all-reduce, all-to-all: each rank's input; send/recv: the bytes sent). With
T = b s / CP tokens of a micro-batch on a rank, h the width, A = 2 bytes per activation:

=======================================  ==============  ============================  ======================
name (result columns ``comm_<name>_*``)  op              bytes                         group (`layout.py`)
=======================================  ==============  ============================  ======================
tp_{attention,mlp}_all_reduce            all_reduce      T h A                         tensor
tp_{attention,mlp}_{all_gather,          all_gather,     T h A                         tensor
reduce_scatter} (sequence parallel)      reduce_scatter
cp_kv_send_recv                          send_recv       T kv A / TP, CP - 1 per pass  context neighbours
cp_kv_grad_send_recv (backward)          send_recv       T kv A / TP, CP - 1           context neighbours
ep_dispatch_all_to_all,                  all_to_all      T k h A c / TP                expert
ep_combine_all_to_all
tp_moe_{all_gather,reduce_scatter}       all_gather,     T k h A c                     tensor
                                         reduce_scatter
tp_shared_expert_{all_gather,            all_gather,     T h A                         tensor
reduce_scatter}                          reduce_scatter
fsdp_param_all_gather (ZeRO 3)           all_gather      dense layer params x A        data x context
fsdp_gradient_reduce_scatter (ZeRO 3)    reduce_scatter  dense layer params x grad     data x context
fsdp_expert_param_all_gather,            as above        expert params of the rank     expert data
fsdp_expert_gradient_reduce_scatter
=======================================  ==============  ============================  ======================

kv is the width of K and V together (2 x KV heads x head dim; MLA: heads x (qk + v) dims), k the
top-k, c the capacity factor (1 when dropless). Per layer and micro-batch: forward runs the TP
collectives of attention then MLP (2 all-reduces, or 2 all-gathers and 2 reduce-scatters with
SP), CP - 1 K/V passes, and for MoE layers dispatch, TP all-gather, TP reduce-scatter, combine;
full recompute runs the forward's collectives again (not the ZeRO-3 gathers: backward's gather
serves the recompute); selective recompute only the K/V passes; backward runs the same TP and MoE
collectives in reverse order, CP - 1 K/V passes and CP - 1 K/V-gradient passes. ZeRO 3 (FSDP,
parameters resharded after forward) gathers each layer's parameters in forward and again in
backward, and reduce-scatters its gradients after backward, every micro-batch.

Megatron-Core's all-to-all token dispatcher with TP > 1 (expert tensor parallel = TP, sequence
parallel required): each TP rank dispatches its T / TP tokens over EP, the received tokens are
all-gathered over TP, the TP-split experts run, and the outputs are reduce-scattered over TP
before the combine.

The tensor-parallel collectives of a layer (`tp_layer_calls`) are the same in both flavours of
the generator; the Megatron-2021 flavour (`megatron2021_blocks.py`) may also ask for RAMP 7.2.1's
reading of them (`TP_ALL_REDUCE_RULES`).
"""

from __future__ import annotations

import math

from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout, Phase, Precision
from ddlsim.workload.transformer.arithmetic import query_tokens
from ddlsim.workload.transformer.layer import ACTIVATION_BYTES
from ddlsim.workload.transformer.layout import ParallelLayout
from ddlsim.workload.transformer.shape import MOE, DecoderShape

A = ACTIVATION_BYTES
AG, RS, AR = CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_REDUCE
# Which tensor-parallel collectives a layer runs: "megatron" every one Megatron runs (attention and
# MLP blocks in forward, in the recompute and in backward); "ramp_7_2_1" only the two RAMP 7.2.1
# names ("the partitioned multi-head attention and corresponding backward path all-reduce, and
# partitioned feed-forward MLP with corresponding forward path all-reduce").
TP_ALL_REDUCE_RULES = ("megatron", "ramp_7_2_1")
_RAMP_7_2_1_BLOCKS = {Phase.FORWARD: ("mlp",), Phase.BACKWARD: ("attention",), Phase.RECOMPUTE: ()}


def tp_block_calls(tensor: GroupLayout, message_bytes: int, block: str, phase: Phase,
                   sequence_parallel: bool) -> list[CollectiveCall]:
    """The tensor-parallel collectives of one block (``attention`` or ``mlp``) on the `tensor` groups:
    an all-reduce, or with sequence parallelism an all-gather and a reduce-scatter."""
    if tensor.size == 1:
        return []
    if sequence_parallel:
        return [CollectiveCall(op, message_bytes, tensor, phase, f"tp_{block}_{op.value}") for op in (AG, RS)]
    return [CollectiveCall(AR, message_bytes, tensor, phase, f"tp_{block}_all_reduce")]


def tp_layer_blocks(phase: Phase, rule: str = "megatron") -> tuple[str, ...]:
    """The blocks whose tensor-parallel collectives run in `phase`, in order (MLP first in backward)."""
    if rule == "ramp_7_2_1":
        return _RAMP_7_2_1_BLOCKS[phase]
    return ("mlp", "attention") if phase is Phase.BACKWARD else ("attention", "mlp")


def tp_layer_calls(tensor: GroupLayout, message_bytes: int, phase: Phase, sequence_parallel: bool,
                   rule: str = "megatron") -> list[CollectiveCall]:
    """The tensor-parallel collectives of one dense layer in `phase` under `rule` (`TP_ALL_REDUCE_RULES`)."""
    return [call for block in tp_layer_blocks(phase, rule)
            for call in tp_block_calls(tensor, message_bytes, block, phase, sequence_parallel)]


class LayerCollectives:
    """Builds the collective calls of one plan's layers (sizes computed once per plan)."""

    def __init__(self, shape: DecoderShape, layout: ParallelLayout, micro_batch: int, *, sequence_parallel: bool,
                 zero: int, precision: Precision, grad_precision: Precision) -> None:
        self.shape, self.layout, self.sp, self.zero = shape, layout, sequence_parallel, zero
        self.precision, self.grad_precision = precision, grad_precision
        tokens = query_tokens(shape, micro_batch, layout.cp)
        self.tokens = tokens
        self.message_bytes = A * tokens * shape.layer.d_model
        self.tensor = layout.tensor()
        layer, mla = shape.layer, shape.mla
        kv_width = 2 * layer.kv_dim if mla is None else layer.heads * (mla.qk_dim + mla.v_head_dim)
        self.kv_chunk_bytes = A * tokens * kv_width // layout.tp
        moe = shape.moe
        self.routed_bytes = math.ceil(A * tokens * moe.top_k * moe.load_factor * layer.d_model) if moe else 0

    # ---- tensor parallel (and sequence parallel) -------------------------------------------------
    def tp_block(self, block: str, phase: Phase) -> list[CollectiveCall]:
        return tp_block_calls(self.tensor, self.message_bytes, block, phase, self.sp)

    def tp_pair(self, size_bytes: int, phase: Phase, name: str) -> list[CollectiveCall]:
        """An all-gather and a reduce-scatter of `size_bytes` over TP (an SP region)."""
        if self.layout.tp == 1:
            return []
        return [CollectiveCall(op, size_bytes, self.tensor, phase, f"{name}_{op.value}") for op in (AG, RS)]

    # ---- context parallel -------------------------------------------------------------------------------
    def ring_passes(self, phase: Phase) -> list[CollectiveCall]:
        cp = self.layout.cp
        if cp == 1:
            return []
        pairs = self.layout.context_pairs()
        calls = [CollectiveCall(CollectiveOp.SEND_RECV, self.kv_chunk_bytes, pairs, phase, "cp_kv_send_recv",
                                count=cp - 1)]
        if phase is Phase.BACKWARD:
            calls.append(CollectiveCall(CollectiveOp.SEND_RECV, self.kv_chunk_bytes, pairs, phase,
                                        "cp_kv_grad_send_recv", count=cp - 1))
        return calls

    # ---- mixture of experts ------------------------------------------------------------------------------
    def moe(self, phase: Phase) -> list[CollectiveCall]:
        moe, layout = self.shape.moe, self.layout
        assert moe is not None
        calls: list[CollectiveCall] = []
        if layout.ep > 1:
            size = math.ceil(self.routed_bytes / layout.tp)
            dispatch, combine = (CollectiveCall(CollectiveOp.ALL_TO_ALL, size, layout.expert(), phase,
                                                f"ep_{name}_all_to_all") for name in ("dispatch", "combine"))
        routed = self.tp_pair(self.routed_bytes, phase, "tp_moe")
        shared = self.tp_pair(self.message_bytes, phase, "tp_shared_expert") if moe.shared_ffn else []
        calls = [dispatch, *routed, combine] if layout.ep > 1 else list(routed)
        if phase is Phase.BACKWARD:
            calls.reverse()
            shared.reverse()
        return [*calls, *shared]

    # ---- one layer ----------------------------------------------------------------------------------------
    def layer(self, kind: str, phase: Phase) -> list[CollectiveCall]:
        """The collectives of one layer of `kind` in `phase` after its compute (see the module doc)."""
        mlp = self.moe(phase) if kind == MOE else self.tp_block("mlp", phase)
        attention = self.tp_block("attention", phase)
        if phase is Phase.BACKWARD:
            return [*mlp, *attention, *self.ring_passes(phase)]
        return [*self.ring_passes(phase), *attention, *mlp]

    # ---- ZeRO 3 (FSDP) ----------------------------------------------------------------------------------
    def fsdp(self, dense_params: int, expert_params: int, gather: bool, phase: Phase) -> list[CollectiveCall]:
        """All-gather (`gather`) the parameters, or reduce-scatter the gradients, of one unit."""
        if self.zero != 3:
            return []
        layout, calls = self.layout, []
        element = self.precision.bytes_per_element if gather else self.grad_precision.bytes_per_element
        op, what = (AG, "param_all_gather") if gather else (RS, "gradient_reduce_scatter")
        if layout.dense_dp > 1 and dense_params:
            calls.append(CollectiveCall(op, element * dense_params, layout.data(), phase, f"fsdp_{what}"))
        if layout.expert_dp > 1 and expert_params:
            calls.append(CollectiveCall(op, element * expert_params, layout.expert_data(), phase,
                                        f"fsdp_expert_{what}"))
        return calls
