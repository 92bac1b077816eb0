"""Hand-built workloads and fake timers with closed-form prices, for the timeline tests."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.types import (
    CollectiveCall,
    CollectiveEstimate,
    CollectiveOp,
    ComputeEstimate,
    ComputeSource,
    GroupLayout,
    Phase,
)
from ddlsim.core.work import ComputeTask, ShardSignature, TaskBlock, Workload
from ddlsim.training import Pricer

SIGNATURE = ShardSignature(model_kind="toy_layer", shape=(("width", 8),), local_batch=2)


@dataclass(frozen=True)
class AlphaBeta:
    """A collective takes `alpha_s` plus size / `bandwidth_Bps`, split 1:2 into transfer and reduction."""

    alpha_s: float = 0.0
    bytes_per_s: float = 100.0
    reduction_share: float = 0.0

    def __call__(self, call: CollectiveCall) -> CollectiveEstimate:
        moving_s = call.size_bytes / self.bytes_per_s
        compute_s = moving_s * self.reduction_share if call.op.reduces else 0.0
        transfer_s = moving_s - compute_s
        return CollectiveEstimate(op=call.op, size_bytes=call.size_bytes, group_size=call.group.size,
                                  algorithm="fake_ring", fabric="fake", time_s=self.alpha_s + moving_s,
                                  latency_s=self.alpha_s, transfer_s=transfer_s, compute_s=compute_s,
                                  num_steps=1)


@dataclass(frozen=True)
class FlopTimer:
    """A compute task takes flop / `flop_per_s`; tasks named ``*roofline*`` say so."""

    flop_per_s: float = 1.0

    def __call__(self, task: ComputeTask) -> ComputeEstimate:
        source = ComputeSource.ROOFLINE if "roofline" in task.name else ComputeSource.MEASURED
        return ComputeEstimate(time_s=task.flop / self.flop_per_s, source=source, device="fake_gpu")


def compute(name: str, phase: Phase, flop: float, count: int = 1) -> ComputeTask:
    return ComputeTask(name=name, phase=phase, signature=SIGNATURE, flop=flop, count=count)


def collective(name: str, op: CollectiveOp, size_bytes: int, group: GroupLayout, phase: Phase = Phase.FORWARD,
               count: int = 1) -> CollectiveCall:
    return CollectiveCall(op=op, size_bytes=size_bytes, group=group, phase=phase, name=name, count=count)


TP = GroupLayout(size=2, stride=1, num_ranks=8)
DP = GroupLayout(size=4, stride=2, num_ranks=8)


def layered_workload(layers: int = 4, forward_flop: float = 1.0, backward_flop: float = 2.0,
                     tp_bytes: int = 10, dp_bytes: int = 100, optimizer_flop: float = 0.5,
                     num_steps: int = 1000, global_batch: int = 64) -> Workload:
    """A Megatron-like iteration: forward and backward layers with TP all-reduces, DP all-reduce, optimizer."""
    forward = TaskBlock("forward", (
        compute("layer_fwd", Phase.FORWARD, forward_flop),
        collective("tp_fwd", CollectiveOp.ALL_REDUCE, tp_bytes, TP, Phase.FORWARD, count=2),
    ), repeat=layers)
    backward = TaskBlock("backward", (
        compute("layer_bwd", Phase.BACKWARD, backward_flop),
        collective("tp_bwd", CollectiveOp.ALL_REDUCE, tp_bytes, TP, Phase.BACKWARD, count=2),
    ), repeat=layers)
    dp = TaskBlock("dp_sync", (collective("dp_grad", CollectiveOp.ALL_REDUCE, dp_bytes, DP, Phase.BACKWARD),))
    optimizer = TaskBlock("optimizer", (compute("adam", Phase.OPTIMIZER, optimizer_flop),))
    return Workload(name="toy", num_ranks=8, blocks=(forward, backward, dp, optimizer), global_batch=global_batch,
                    num_steps=num_steps, plan={"tp_degree": 2, "dp_degree": 4, "num_steps": num_steps})


def pricer(alpha_s: float = 0.0, bytes_per_s: float = 100.0, flop_per_s: float = 1.0,
           reduction_share: float = 0.0) -> Pricer:
    return Pricer(AlphaBeta(alpha_s, bytes_per_s, reduction_share), FlopTimer(flop_per_s))


STAGE_RANKS = 2


def pipelined(stages: int, micro: int, forward: float = 1.0, backward: float = 2.0, send_bytes: int = 0,
              dp_bytes: int = 0, optimizer: float = 0.0, tail_sync_bytes: int = 0, virtual: int = 1) -> Workload:
    """p stages of 2 ranks, each running `virtual` model chunks (1: plain 1F1B); per micro-batch a
    stage's forward and backward take the given FLOPs in all (each chunk 1/virtual of them)."""
    chunks = stages * virtual
    pair = GroupLayout(2, STAGE_RANKS, 2 * STAGE_RANKS)
    blocks = [TaskBlock("forward", (compute("fwd", Phase.FORWARD, forward / virtual),), per_micro_batch=True)]
    if send_bytes and chunks > 1:
        blocks.append(TaskBlock("send_forward", (collective("send_f", CollectiveOp.SEND_RECV, send_bytes, pair),),
                                stages=tuple(range(chunks - 1)), per_micro_batch=True))
    blocks.append(TaskBlock("backward", (compute("bwd", Phase.BACKWARD, backward / virtual),), per_micro_batch=True))
    if send_bytes and chunks > 1:
        blocks.append(TaskBlock("send_backward", (collective("send_b", CollectiveOp.SEND_RECV, send_bytes, pair,
                                                             Phase.BACKWARD),),
                                stages=tuple(range(1, chunks)), per_micro_batch=True))
    if dp_bytes:
        blocks.append(TaskBlock("dp", (collective("dp_grad", CollectiveOp.ALL_REDUCE, dp_bytes,
                                                  GroupLayout(2, 1, STAGE_RANKS), Phase.BACKWARD),)))
    if tail_sync_bytes and stages > 1:
        blocks.append(TaskBlock("sync", (collective("sync", CollectiveOp.ALL_REDUCE, tail_sync_bytes,
                                                    GroupLayout(stages, STAGE_RANKS, stages * STAGE_RANKS),
                                                    Phase.OPTIMIZER),)))
    if optimizer:
        blocks.append(TaskBlock("optimizer", (compute("adam", Phase.OPTIMIZER, optimizer),)))
    plan = {"pp_degree": stages, "micro_batches": micro}
    if virtual > 1:
        plan["virtual_stages"] = virtual
    return Workload("pipe", stages * STAGE_RANKS, tuple(blocks), global_batch=micro, plan=plan)
