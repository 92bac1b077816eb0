"""A workload's traffic as TopoOpt sees it: AllReduce groups and the MP demand between servers.

TopologyFinder (Algorithm 1) and the reconfigurable baselines need, per training iteration, the
bytes each server sends each other server. This module derives them from the collective calls of
a `ddlsim.core.work.Workload` (so network/ never imports workload/):

* all-reduce, reduce-scatter and all-gather are *AllReduce* traffic (mutable: any ring order
  does): a ring over each group in position order, 2(k-1)/k x size per neighbour pair for an
  all-reduce and (k-1)/k x size for the other two. A group kind made of whole servers (or of
  GPUs spread across servers at a stride of whole servers) becomes one `AllReduceDemand` at server
  level, for TopologyFinder to give it ring permutations;
* every other op is *MP* traffic (immutable): its per-pair bytes (all-to-all: size / k to each
  peer; gather, scatter, broadcast, reduce: size / k or size between root and each member;
  send/recv: size) summed into the server-by-server matrix.

Traffic between GPUs of one server never leaves the server and is left out of both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout
from ddlsim.core.work import Workload
from ddlsim.network.fabrics.topoopt.topology_finder import AllReduceDemand

Op = CollectiveOp
RING_OPS = frozenset({Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER})


@dataclass(frozen=True, eq=False)
class ServerTraffic:
    """One iteration's inter-server traffic: AllReduce kinds (server layouts) and MP demand."""

    num_servers: int
    allreduce: tuple[AllReduceDemand, ...]
    allreduce_matrix: np.ndarray
    mp_matrix: np.ndarray

    @property
    def allreduce_bytes(self) -> float:
        return float(self.allreduce_matrix.sum())

    @property
    def mp_bytes(self) -> float:
        return float(self.mp_matrix.sum())


def workload_calls(workload: Workload) -> Iterator[tuple[CollectiveCall, int]]:
    """Every collective call of one iteration with how many times it runs (count x block repeat)."""
    for block in workload.blocks:
        for task in block.tasks:
            if isinstance(task, CollectiveCall):
                yield task, task.count * block.repeat


def call_pairs(call: CollectiveCall) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src rank, dst rank, bytes) of one call over all its groups, as the logical demand."""
    layout = call.group
    k, size = layout.size, float(call.size_bytes)
    ranks = np.array(list(layout.groups()), dtype=np.int64)             # [group, position]
    if k == 1 or size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    if call.op in RING_OPS:
        share = 2 * (k - 1) / k if call.op is Op.ALL_REDUCE else (k - 1) / k
        return ranks.ravel(), np.roll(ranks, -1, axis=1).ravel(), np.full(ranks.size, share * size)
    if call.op is Op.ALL_TO_ALL:
        src = np.repeat(ranks, k, axis=1).ravel()
        dst = np.tile(ranks, (1, k)).ravel()
        keep = src != dst
        return src[keep], dst[keep], np.full(int(keep.sum()), size / k)
    if call.op is Op.SEND_RECV:
        sender = ranks[:, call.root]
        return sender, ranks[:, 1 - call.root], np.full(sender.size, size)
    if call.op is Op.BARRIER:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    root = np.repeat(ranks[:, call.root], k - 1)
    others = np.delete(ranks, call.root, axis=1).ravel()
    per_peer = size / k if call.op in (Op.GATHER, Op.SCATTER) else size
    if call.op in (Op.GATHER, Op.REDUCE):
        return others, root, np.full(others.size, per_peer)
    return root, others, np.full(others.size, per_peer)


def server_layout(layout: GroupLayout, gpus_per_server: int) -> GroupLayout | None:
    """The same groups counted in servers, when each group uses one GPU index of whole servers or
    whole servers; None when a group splits servers irregularly."""
    g = gpus_per_server
    if layout.job_ranks % g:
        return None
    servers = layout.job_ranks // g
    if g == 1:
        return layout
    if layout.stride == 1 and layout.size % g == 0:
        return GroupLayout(layout.size // g, 1, servers)
    if layout.stride % g == 0:
        return GroupLayout(layout.size, layout.stride // g, servers)
    return None


def server_traffic(workload: Workload, gpus_per_server: int = 1) -> ServerTraffic:
    """The inter-server traffic of one iteration of `workload` (ranks r on server r // g)."""
    g = gpus_per_server
    if g < 1:
        raise ConfigError("gpus_per_server", g, "must be >= 1")
    servers = -(-workload.num_ranks // g)
    allreduce = np.zeros((servers, servers))
    mp = np.zeros((servers, servers))
    kinds: dict[GroupLayout, float] = {}
    for call, times in workload_calls(workload):
        src, dst, size = call_pairs(call)
        src, dst = src // g, dst // g
        keep = src != dst
        matrix = np.zeros((servers, servers))
        np.add.at(matrix, (src[keep], dst[keep]), size[keep] * times)
        layout = server_layout(call.group, g) if call.op in RING_OPS else None
        if layout is not None and layout.size > 1:
            allreduce += matrix
            kinds[layout] = kinds.get(layout, 0.0) + float(matrix.sum())
        else:
            mp += matrix
    demands = tuple(AllReduceDemand(layout, traffic) for layout, traffic in kinds.items())
    return ServerTraffic(servers, demands, allreduce, mp)
