"""The resources a fabric's traffic shares, and the bytes one collective puts on each.

Concurrent collectives contend for what the fabric declares for its physical bound
(`ddlsim.network.bounds`), the one source of truth for capacities:

- every node's egress and ingress (`node_egress_bps`, `node_ingress_bps`: a GPU's NIC and
  NVLink ports, a CU's transceivers, a server's wavelengths or circuits, together),
- every domain of every declared cut, both ways (`domain_cuts`: a DGX's NICs, an
  oversubscribed tier's uplinks, a TopoOpt server's interfaces, an OPSquare pod's uplinks),
- the bisection, both ways (`bisection_bps`).

A collective's demand on them is the bytes it must move across each: per node what its
position in the group must send and receive (the bound's node table), per domain and across
the bisection what must cross the boundary (the bound's cut table), for every group of its
layout. Spread evenly over the collective's isolated time, that demand is feasible on every
resource (the price is never below the bound), so a collective alone runs at its own price,
and a concurrent set is never faster than its summed bytes on its busiest resource allow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.caches import Memo
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.bounds import domain_bytes, node_bytes
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.placing import place_ranks

Op = CollectiveOp
_ROOTED = (Op.BROADCAST, Op.REDUCE, Op.GATHER, Op.SCATTER, Op.SEND_RECV)


@dataclass(frozen=True, eq=False)
class Demand:
    """Bits a collective puts on each resource it touches (`resources`, `bits`, aligned)."""

    resources: np.ndarray
    bits: np.ndarray

    @property
    def total_bits(self) -> float:
        return float(self.bits.sum())


@dataclass(frozen=True, eq=False)
class SharedResources:
    """The declared resources of one fabric, numbered: node egress [0, N), node ingress
    [N, 2N), then every domain of every cut (egress block, ingress block), then the bisection
    (lower-to-upper, upper-to-lower)."""

    fabric: Fabric
    capacity_bps: np.ndarray
    names: tuple[str, ...]
    cut_offsets: tuple[int, ...]
    bisection_offset: int | None
    kinds: np.ndarray
    """The kind of every resource (node egress 0, node ingress 1, each cut's egress and ingress,
    then the bisection's two directions): resources of one kind have one capacity."""

    @classmethod
    def of(cls, fabric: Fabric) -> SharedResources:
        nodes = fabric.num_nodes
        blocks = [(nodes, fabric.node_egress_bps()), (nodes, fabric.node_ingress_bps())]
        names = ["node egress", "node ingress"]
        offsets = []
        offset = 2 * nodes
        for cut in fabric.domain_cuts():
            count = -(-nodes // cut.size_nodes)
            offsets.append(offset)
            blocks += [(count, cut.egress_bps), (count, cut.ingress_bps)]
            names += [f"{cut.size_nodes}-node domain egress", f"{cut.size_nodes}-node domain ingress"]
            offset += 2 * count
        bisection = fabric.bisection_bps()
        bisection_offset = None
        if bisection:
            bisection_offset = offset
            blocks += [(1, float(bisection)), (1, float(bisection))]
            names += ["bisection"]
        capacity = np.concatenate([np.full(count, value, dtype=np.float64) for count, value in blocks])
        kinds = np.repeat(np.arange(len(blocks)), [count for count, _ in blocks])
        return cls(fabric, capacity, tuple(names), tuple(offsets), bisection_offset, kinds)

    @property
    def size(self) -> int:
        return int(self.capacity_bps.size)

    def kind_capacity_bps(self) -> np.ndarray:
        """The capacity of each kind (`kinds`)."""
        capacity = np.zeros(int(self.kinds.max()) + 1)
        capacity[self.kinds] = self.capacity_bps
        return capacity

    def collapse(self, demand: Demand) -> Demand:
        """The demand on each kind of resource: the most any one resource of that kind carries.

        For one job whose collectives load every node alike (the groups of a parallel dimension
        tile the job), the busiest resource of a kind stands for all of them, and concurrent
        collectives meet there; where loads differ, assuming that their busiest resources
        coincide can only overstate contention, never understate a bound."""
        if demand.resources.size == 0:
            return demand
        kind = self.kinds[demand.resources]
        most = np.zeros(int(self.kinds.max()) + 1)
        np.maximum.at(most, kind, demand.bits)
        used = np.flatnonzero(most > 0)
        return Demand(used, most[used])

    def demand(self, op: CollectiveOp | str, size_bytes: int, layout: GroupLayout, root: int = 0,
               placement: Placement | None = None) -> Demand:
        """The bits `op` on every group of `layout` puts on each resource (module docstring)."""
        op = CollectiveOp(op)
        n = layout.size
        if n < 2 or size_bytes == 0 or op is Op.BARRIER:
            return Demand(np.zeros(0, dtype=np.int64), np.zeros(0))
        fabric = self.fabric
        place = placement if placement is not None else place_ranks(fabric, layout.job_ranks)
        nodes = place.node_of(job_ranks(layout, np.arange(n)))
        out, into = position_bytes(op, size_bytes, n, root, multicast=fabric.supports_multicast(),
                                   in_network=fabric.reduces_in_network())
        ids = [nodes.ravel(), nodes.ravel() + fabric.num_nodes]
        loads = [np.tile(out, layout.num_groups), np.tile(into, layout.num_groups)]
        for cut, offset in zip(fabric.domain_cuts(), self.cut_offsets):
            if cut.size_nodes > 1:
                count = -(-fabric.num_nodes // cut.size_nodes)
                self._cut(op, size_bytes, n, root, nodes // cut.size_nodes, offset, offset + count, ids, loads)
        if self.bisection_offset is not None:
            side = (nodes >= fabric.num_nodes // 2).astype(np.int64)
            self._cut(op, size_bytes, n, root, side, self.bisection_offset, self.bisection_offset + 1, ids, loads)
        resources = np.concatenate(ids)
        bits = np.concatenate(loads) * BITS_PER_BYTE
        unique, inverse = np.unique(resources, return_inverse=True)
        total = np.bincount(inverse, weights=bits, minlength=unique.size)
        keep = total > 0
        return Demand(unique[keep], total[keep])

    def _cut(self, op: CollectiveOp, size_bytes: int, n: int, root: int, domain: np.ndarray, egress_base: int,
             ingress_base: int, ids: list, loads: list) -> None:
        fabric = self.fabric
        touched, out, into = domain_bytes(op, size_bytes, n, domain, root, fabric.supports_multicast(),
                                          fabric.reduces_in_network())
        if ingress_base == egress_base + 1:  # the bisection: out of one half is into the other
            ids += [egress_base + touched, egress_base + 1 - touched]
        else:
            ids += [egress_base + touched, ingress_base + touched]
        loads += [out, into]

    def describe(self) -> dict[str, float]:
        """Each kind of resource and its capacity (the first of its kind), for docs and rows."""
        summary = {"node egress": self.fabric.node_egress_bps(), "node ingress": self.fabric.node_ingress_bps()}
        for cut in self.fabric.domain_cuts():
            summary[f"{cut.size_nodes}-node domain egress"] = cut.egress_bps
            summary[f"{cut.size_nodes}-node domain ingress"] = cut.ingress_bps
        if self.bisection_offset is not None:
            summary["bisection"] = float(self.fabric.bisection_bps())
        return summary


def position_bytes(op: CollectiveOp, size_bytes: int, n: int, root: int, *, multicast: bool = False,
                   in_network: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each position of a group must send and receive: the bound's node table, with the
    root of a rooted op apart from the others."""
    out, into = node_bytes(op, size_bytes, n, multicast=multicast, in_network=in_network)
    sent, received = np.full(n, out), np.full(n, into)
    if op in _ROOTED:
        s = float(size_bytes)
        root_out, root_in, other_out, other_in = {
            Op.BROADCAST: (s, 0.0, 0.0, s), Op.SEND_RECV: (s, 0.0, 0.0, s),
            Op.REDUCE: (0.0, s, s, 0.0), Op.GATHER: (0.0, (n - 1) / n * s, s / n, 0.0),
            Op.SCATTER: ((n - 1) / n * s, 0.0, 0.0, s / n),
        }[op]
        sent[:], received[:] = other_out, other_in
        sent[root], received[root] = root_out, root_in
    return sent, received


_RESOURCES = Memo("network.contention.resources", maxsize=16)


def shared_resources(fabric: Fabric) -> SharedResources:
    """The fabric's declared resources (memoised per fabric object)."""
    key = id(fabric)
    entry = _RESOURCES.get(key)
    if entry is None or entry.fabric is not fabric:
        entry = _RESOURCES.put(key, SharedResources.of(fabric))
    return entry
