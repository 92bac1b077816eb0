"""Transceiver loads of a direct exchange (a mesh) on OPSquare, counted without listing pairs.

Every member of a block sends one unit to every other member of its block; blocks run at once.
With routes fixed (`topology.py`), the load of each transceiver follows from a few counts per
block: members per pod, per (pod, group), per index and per group. Per member x (pod a, group
g) and channel p, with F = M / P and B = blocks, C_* = counts of the member's block:

- intra transmitter p of x: C_pod,group[a, g + p] (minus x itself when p = 0);
- intra receiver p of x: C_pod,group[a, g - p] (minus x) plus the relays of group g - p in pod a
  that forward to x: C_group[g - p] - C_pod,group[a, g - p] (minus x's own index when p = 0);
- inter transmitter of x: members outside pod a;
- inter receiver of node (c, i), member or not: senders at index i outside pod c times the
  members in pod c; that node then forwards those senders' data to the members of pod c on its
  intra transmitters, one per destination group.

`mesh_loads` returns (resource ids, loads) with the fabric's numbering: transmitters
node * (P + 1) + channel, receivers after all transmitters.
"""

from __future__ import annotations

import numpy as np

from ddlsim.network.fabrics.opsquare.topology import OpsquareTopology


class _Counts:
    """Counts of members per key, looked up for arbitrary keys (0 when absent)."""

    def __init__(self, keys: np.ndarray) -> None:
        self.keys, self.counts = np.unique(keys, return_counts=True)

    def __getitem__(self, query: np.ndarray) -> np.ndarray:
        where = np.searchsorted(self.keys, query)
        where = np.minimum(where, self.keys.size - 1)
        return np.where(self.keys[where] == query, self.counts[where], 0)


def mesh_loads(topo: OpsquareTopology, nodes: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Load of every transceiver a mesh uses; `nodes[k]` is a member of block `blocks[k]`."""
    P, M, F = topo.num_groups, topo.pod_size, topo.split
    C = topo.channels_per_node
    receivers = topo.num_nodes * C
    pod, index = np.divmod(nodes, M)
    group = index // F
    by_pod = _Counts(blocks * topo.num_pods + pod)
    by_pod_group = _Counts((blocks * topo.num_pods + pod) * P + group)
    by_index = _Counts(blocks * M + index)
    by_group = _Counts(blocks * P + group)
    is_member = _Counts(blocks * topo.num_nodes + nodes)
    size = np.bincount(blocks)[blocks]

    ids, loads = [], []
    channel = np.arange(P)[None, :]
    is_self = (channel == 0).astype(np.int64)
    # 1. intra-pod pairs and 5. relayed traffic arriving at its destination
    towards = (group[:, None] + channel) % P
    ids.append(nodes[:, None] * C + channel)
    loads.append(by_pod_group[(blocks * topo.num_pods + pod)[:, None] * P + towards] - is_self)
    source_group = (group[:, None] - channel) % P
    same_pod = by_pod_group[(blocks * topo.num_pods + pod)[:, None] * P + source_group]
    own_index_senders = (by_index[blocks * M + index] - 1)[:, None]
    relayed_in = by_group[blocks[:, None] * P + source_group] - same_pod - is_self * own_index_senders
    ids.append(receivers + nodes[:, None] * C + channel)
    loads.append(same_pod - is_self + relayed_in)
    # 2. inter-pod transmitters
    ids.append(nodes * C + P)
    loads.append(size - by_pod[blocks * topo.num_pods + pod])
    # 3. and 4. every (block, pod with members, index with members): the relay node of that pod and index
    block_of_pod, pods = np.divmod(by_pod.keys, topo.num_pods)
    block_of_index, indices = np.divmod(by_index.keys, M)
    per_block = np.bincount(block_of_index, minlength=int(block_of_pod.max()) + 1)
    first_index_row = np.concatenate([[0], np.cumsum(per_block)[:-1]])
    repeat = per_block[block_of_pod]
    row_pod = np.repeat(np.arange(pods.size), repeat)
    offset = np.arange(row_pod.size) - np.repeat(np.cumsum(repeat) - repeat, repeat)
    row_index = first_index_row[block_of_pod[row_pod]] + offset
    block, relay_pod, relay_index = block_of_pod[row_pod], pods[row_pod], indices[row_index]
    relay = relay_pod * M + relay_index
    relay_is_member = is_member[block * topo.num_nodes + relay]
    senders = by_index.counts[row_index] - relay_is_member
    ids.append(receivers + relay * C + P)
    loads.append(senders * by_pod.counts[row_pod])
    relay_group = relay_index // F
    towards = (relay_group[:, None] + channel) % P
    destinations = by_pod_group[(block * topo.num_pods + relay_pod)[:, None] * P + towards]
    ids.append(relay[:, None] * C + channel)
    loads.append(senders[:, None] * (destinations - is_self * relay_is_member[:, None]))
    return np.concatenate([a.ravel() for a in ids]), np.concatenate([a.ravel() for a in loads]).astype(np.float64)


def has_relayed_pair(topo: OpsquareTopology, nodes: np.ndarray, blocks: np.ndarray) -> bool:
    """True if some pair of one block differs in both pod and index (a two-hop route)."""
    pod, index = np.divmod(nodes, topo.pod_size)
    size = np.bincount(blocks)
    _, per_pod = np.unique(blocks * topo.num_pods + pod, return_counts=True)
    _, per_index = np.unique(blocks * topo.pod_size + index, return_counts=True)
    cross_pod = np.sum(size.astype(np.int64) ** 2) - np.sum(per_pod.astype(np.int64) ** 2)
    same_index_cross_pod = np.sum(per_index.astype(np.int64) ** 2 - per_index)
    return bool(cross_pod > same_index_cross_pod)
