"""Time of one collective on one fabric, step by step."""

from __future__ import annotations

from ddlsim import units
from ddlsim.errors import InfeasibleError
from ddlsim.types import CollectiveEstimate, CollectiveOp


def estimate_all_reduce(fabric, algorithm, size_bytes: int, num_ranks: int) -> CollectiveEstimate:
    if num_ranks > fabric.num_nodes:
        raise InfeasibleError(f"{num_ranks} ranks do not fit on {fabric.name} with {fabric.num_nodes} nodes")
    num_steps, step_bytes = algorithm.all_reduce_steps(num_ranks, size_bytes)
    latency_s = num_steps * fabric.latency_s
    transfer_s = num_steps * units.transfer_time_s(step_bytes, fabric.bandwidth_bps)
    return CollectiveEstimate(op=CollectiveOp.ALL_REDUCE, size_bytes=size_bytes, group_size=num_ranks,
                              algorithm=algorithm.name, fabric=fabric.name, time_s=latency_s + transfer_s,
                              latency_s=latency_s, transfer_s=transfer_s, compute_s=0.0, num_steps=num_steps)
