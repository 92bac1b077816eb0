"""Compute beside communication: what the SMs that NCCL holds cost the kernels that overlap it.

An NCCL collective runs as one thread block per channel, and each block needs about 100 KB of
shared memory, so it holds a whole SM while the collective lasts. Compute that overlaps the
collective runs on the SMs left: a compute-bound kernel slows by channels / SMs. Figures:

- channels of a large collective: 24 on an H100 (an `ncclAllGather` launching 24 blocks beside a
  132-block GEMM, NVIDIA developer forum thread 337991, "Compute-Communication Overlap Causes
  Severe GEMM Performance Degradation because of Tail Effect", Nsight Systems trace); the A100 is
  taken at the same count. 24 / 132 = 18 % on an H100, the average computational slowdown that
  Lee et al. measured across A100, H100, MI250 and MI210 GPUs training GPT and LLaMA models with
  overlapped communication (18.9 %, up to 40 %: "Characterizing Compute-Communication Overlap in
  GPU-Accelerated Distributed Deep Learning: Performance and Power Implications", 2025,
  arXiv:2507.03114).
- message size: NCCL gives a collective fewer channels while its bytes are below
  channels x threads x threshold (src/enqueue.cc, channel tuning; ring: 512 threads x 64 bytes of
  the Simple protocol x the group's ranks, src/graph/tuning.cc), so a small collective holds few SMs.
- kind: a point-to-point exchange (pipeline send and receive) holds the channels NCCL gives one
  peer, 2 by default (`NCCL_NCHANNELS_PER_NET_PEER`).

The iteration's overlapped compute is the communication the summary counts as hidden behind it;
it is split among the collectives in proportion to their time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NCCL_CHANNELS = 24  # large collectives on an H100 (forum thread 337991); the A100 is taken the same
NCCL_P2P_CHANNELS = 2  # NCCL_NCHANNELS_PER_NET_PEER's default
NCCL_RING_THREADS = 512  # NCCL_SIMPLE_MAX_NTHREADS
NCCL_SIMPLE_THREAD_THRESHOLD_BYTES = 64  # NCCL_SIMPLE_THREAD_THRESHOLD, per rank of a ring


def channels_of(op: str, size_bytes: float, group_size: int) -> float:
    """The channels (SMs) NCCL gives one call of `op` over `size_bytes` in a group of `group_size`."""
    if op == "send_recv":
        return float(NCCL_P2P_CHANNELS)
    full_bytes = NCCL_CHANNELS * NCCL_RING_THREADS * NCCL_SIMPLE_THREAD_THRESHOLD_BYTES * max(group_size, 1)
    return max(1.0, NCCL_CHANNELS * min(1.0, size_bytes / full_bytes))


def slowdown_of(op: str, size_bytes: float, group_size: int, sm_count: int) -> float:
    """The fraction of its speed that compute overlapping this collective loses."""
    if sm_count <= 0:
        return 0.0
    return min(1.0, channels_of(op, size_bytes, group_size) / sm_count)


def interference_s(hidden_comm_s: float, collectives: Iterable[Any], sm_count: int) -> float:
    """Extra compute time of an iteration whose `hidden_comm_s` of communication overlapped its
    compute, shared among `collectives` (`CollectiveBreakdown`s) by their time."""
    items = [item for item in collectives if item.time_s > 0]
    total_s = sum(item.time_s for item in items)
    if hidden_comm_s <= 0 or total_s <= 0:
        return 0.0
    weighted = sum(item.time_s * slowdown_of(item.op, item.size_bytes / max(item.calls, 1), item.group_size,
                                             sm_count) for item in items)
    return hidden_comm_s * weighted / total_s
