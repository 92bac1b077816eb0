"""The physical lower bound on the time of a collective: no algorithm on a fabric can beat it.

    lower_bound_s(fabric, op, size_bytes, layout, root=0, placement=None) -> seconds

`size_bytes` is S in the nccl-tests convention (`ddlsim.core.types.CollectiveCall`); n is the group
size; every group of `layout` runs at once. The bound is

    min_latency_s + max(node egress term, node ingress term, bisection term, domain terms)

- **Node terms.** Bytes that must leave (enter) one rank, over the fabric's `node_egress_bps`
  (`node_ingress_bps`); capacities are the same on every node of a fabric, so where only the
  total over the group is known (marked "on average") the average rank's share is a bound:

  ============== =============================== =========================================
  op             leaves a rank                   enters a rank
  ============== =============================== =========================================
  all_gather     S / n (its block, once)         (n-1)/n S
  reduce_scatter (n-1)/n S                       (n-1)/n S on average (S / n with in-network
                                                 reduction)
  all_to_all     (n-1)/n S                       (n-1)/n S
  all_reduce     2(n-1)/n S on average (S with   2(n-1)/n S on average (S with in-network
                 multicast or in-network         reduction)
                 reduction)
  broadcast      S (root)                        S (each receiver)
  reduce         S (each non-root)               S (root)
  gather         S / n (each non-root)           (n-1)/n S (root)
  scatter        (n-1)/n S (root)                S / n (each non-root)
  send_recv      S (sender)                      S (receiver)
  ============== =============================== =========================================

  The all-reduce figure without in-network reduction is the one-way gossip bound: every element
  needs n - 1 receptions before some rank holds the sum and n - 1 more after (Patarasuk and
  Yuan 2009 give the same 2(n-1)/n S); a multicast copy still counts once per receiver.
- **Cut terms.** For a set A of nodes with k members of a group inside, the bytes that must
  leave and enter A: all_to_all k(n-k)/n S each way; all_gather k/n S out and (n-k)/n S in
  (each block crosses once, then it can be forwarded); reduce_scatter (n-k)/n S out (A's partial
  sums of the outside blocks) and k/n S in; all_reduce S each way; broadcast S out of the root's
  side and into every other; reduce the reverse; gather and scatter the blocks of the side
  without the root; send_recv S; whenever the group straddles the cut. Summed over concurrent
  groups, over the cut's capacity. All-reduce and reduce-scatter also get the node table's
  averages with each domain as one node (m domains touched: 2(m-1)/m S and (m-1)/m S in).
  The cuts are the fabric's bisection (`bisection_bps`: A = the lower half of the node ids) and
  its domains (`domain_cuts`: every aligned block of node ids of a declared size, e.g. a DGX's
  8 GPUs behind their 8 NICs, a TopoOpt server behind its d interfaces, an OPSquare pod).
- **Latency.** Every algorithm moves data in at least one step, and every step pays at least
  the fabric's `min_latency_s` (one hop); a barrier, which carries no data, pays it too. Nothing
  is charged for an empty message or a one-rank group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import DdlsimError
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.int_arrays import sorted_distinct
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.placing import place_ranks

Op = CollectiveOp
RELATIVE_TOLERANCE = 1e-9
"""A price may undercut the bound by this fraction (floating-point rounding), no more."""


class BelowPhysicalBoundError(DdlsimError, AssertionError):
    """A price below the physical lower bound: a modelling bug in the fabric or the algorithm."""


@dataclass(frozen=True)
class BoundTerms:
    """The parts of the bound, in seconds: the bound is latency_s + max(the others)."""

    latency_s: float
    egress_s: float
    ingress_s: float
    bisection_s: float
    domain_s: float = 0.0

    @property
    def time_s(self) -> float:
        return self.latency_s + max(self.egress_s, self.ingress_s, self.bisection_s, self.domain_s)


def lower_bound_s(fabric: Fabric, op: CollectiveOp | str, size_bytes: int, layout: GroupLayout, root: int = 0,
                  placement: Placement | None = None) -> float:
    """Seconds below which no algorithm can run `op` on every group of `layout` (module docstring)."""
    return bound_terms(fabric, op, size_bytes, layout, root, placement).time_s


def bound_terms(fabric: Fabric, op: CollectiveOp | str, size_bytes: int, layout: GroupLayout, root: int = 0,
                placement: Placement | None = None) -> BoundTerms:
    """The bound's latency, node egress, node ingress, bisection and domain terms."""
    op = CollectiveOp(op)
    n = layout.size
    if n < 2 or (size_bytes == 0 and op is not Op.BARRIER):
        return BoundTerms(0.0, 0.0, 0.0, 0.0)
    multicast, in_network = fabric.supports_multicast(), fabric.reduces_in_network()
    out_bytes, in_bytes = node_bytes(op, size_bytes, n, multicast=multicast, in_network=in_network)
    egress_s = out_bytes * BITS_PER_BYTE / fabric.node_egress_bps()
    ingress_s = in_bytes * BITS_PER_BYTE / fabric.node_ingress_bps()
    bisection_s = domain_s = 0.0
    capacity = fabric.bisection_bps()
    cuts = fabric.domain_cuts()
    if size_bytes and (capacity or cuts) and op is not Op.BARRIER:
        place = placement if placement is not None else place_ranks(fabric, layout.job_ranks)
        nodes = _member_nodes(layout, place)
        if capacity:
            side = (nodes >= fabric.num_nodes // 2).astype(np.int64)
            bisection_s = _cut_time_s(op, size_bytes, n, side, root, capacity, capacity, multicast, in_network)
        for cut in cuts:
            if cut.size_nodes > 1:
                domain_s = max(domain_s, _cut_time_s(op, size_bytes, n, nodes // cut.size_nodes, root,
                                                     cut.egress_bps, cut.ingress_bps, multicast, in_network))
    return BoundTerms(fabric.min_latency_s(), egress_s, ingress_s, bisection_s, domain_s)


def node_bytes(op: CollectiveOp, size_bytes: int, n: int, *, multicast: bool = False,
               in_network: bool = False) -> tuple[float, float]:
    """(bytes that must leave, bytes that must enter) the busiest rank of a group of n >= 2."""
    s = float(size_bytes)
    rest = (n - 1) / n * s
    if op is Op.ALL_GATHER:
        return s / n, rest
    if op is Op.REDUCE_SCATTER:
        return rest, s / n if in_network else rest
    if op is Op.ALL_TO_ALL:
        return rest, rest
    if op is Op.ALL_REDUCE:
        if in_network:
            return s, s
        return (s if multicast else 2 * rest), 2 * rest
    if op in (Op.BROADCAST, Op.REDUCE, Op.SEND_RECV):
        return s, s
    if op is Op.GATHER:
        return s / n, rest
    if op is Op.SCATTER:
        return rest, s / n
    return 0.0, 0.0


def _member_nodes(layout: GroupLayout, placement: Placement) -> np.ndarray:
    """Fabric node of every member, shape (groups, group size)."""
    return placement.node_of(job_ranks(layout, np.arange(layout.size)))


def cut_bytes(op: CollectiveOp, size_bytes: int, n: int, k: np.ndarray, root_inside: np.ndarray, *,
              in_network: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Bytes that must leave and enter a set of nodes holding k >= 1 members of a group of n
    (`root_inside`: whether the root is among them), per (group, set) entry."""
    s = float(size_bytes)
    k = k.astype(np.float64)
    far = n - k
    split = far > 0
    if op is Op.ALL_TO_ALL:
        out = k * far * s / n
        return out, out
    if op is Op.ALL_GATHER:
        return np.where(split, k, 0) * s / n, far * s / n
    if op is Op.REDUCE_SCATTER:
        return far * s / n, np.where(split, k, 0) * s / n
    if op is Op.ALL_REDUCE:
        both = np.where(split, s, 0.0)
        return both, both
    if op in (Op.BROADCAST, Op.SEND_RECV):
        return np.where(split & root_inside, s, 0.0), np.where(root_inside, 0.0, s)
    if op is Op.REDUCE:
        return np.where(root_inside, 0.0, s), np.where(split & root_inside, s, 0.0)
    if op is Op.GATHER:
        return np.where(root_inside, 0.0, k * s / n), np.where(root_inside, far * s / n, 0.0)
    if op is Op.SCATTER:
        return np.where(root_inside, far * s / n, 0.0), np.where(root_inside, 0.0, k * s / n)
    zero = np.zeros(k.size)
    return zero, zero


def _domain_members(domain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, domain, members k) of every (group, domain) pair with members, from runs of equal
    domains along each group's row (the placements here number nodes in rank order; other rows
    are sorted first)."""
    size = domain.shape[1]
    if size > 1 and not np.all(domain[:, 1:] >= domain[:, :-1]):
        domain = np.sort(domain, axis=1)
    starts = np.ones(domain.shape, dtype=bool)
    starts[:, 1:] = domain[:, 1:] != domain[:, :-1]
    first = np.flatnonzero(starts.ravel())
    k = np.diff(np.append(first, domain.size))
    group, place = first // size, domain.ravel()[first]
    return group, place, k


def _cut_time_s(op: CollectiveOp, size_bytes: int, n: int, domain: np.ndarray, root: int, egress_bps: float,
                ingress_bps: float, multicast: bool, in_network: bool) -> float:
    """Seconds the busiest domain needs for what must cross its boundary; `domain[g, p]` is the
    domain of position p of group g."""
    _, out, into = domain_bytes(op, size_bytes, n, domain, root, multicast, in_network)
    return max(float(out.max()) * BITS_PER_BYTE / egress_bps, float(into.max()) * BITS_PER_BYTE / ingress_bps)


def domain_bytes(op: CollectiveOp, size_bytes: int, n: int, domain: np.ndarray, root: int, multicast: bool,
                 in_network: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(domains touched, bytes that must leave each, bytes that must enter each), summed over the
    groups; `domain[g, p]` is the domain of position p of group g. All-reduce and reduce-scatter
    also count each domain as one node of the node table (receptions over all domains touched,
    on average), which every touched domain is charged."""
    groups = domain.shape[0]
    group, place, k = _domain_members(domain)
    root_inside = domain[group, root] == place
    out, into = cut_bytes(op, size_bytes, n, k, root_inside, in_network=in_network)
    touched = sorted_distinct(place)
    local = np.searchsorted(touched, place)
    per_domain_out = np.bincount(local, out, minlength=touched.size)
    per_domain_in = np.bincount(local, into, minlength=touched.size)
    if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER) and not in_network:
        spans = np.bincount(group, minlength=groups).astype(np.float64)
        factor = 2.0 if op is Op.ALL_REDUCE else 1.0
        average = factor * float(np.sum(spans - 1)) * size_bytes / touched.size
        per_domain_in = np.maximum(per_domain_in, average)
        if op is Op.REDUCE_SCATTER or not multicast:
            per_domain_out = np.maximum(per_domain_out, average)
    return touched, per_domain_out, per_domain_in


def check_price(time_s: float, bound_s: float, *, fabric: str, algorithm: str, op: CollectiveOp, size_bytes: int,
                layout: GroupLayout) -> None:
    """Raise `BelowPhysicalBoundError` when a price undercuts the physical bound."""
    if time_s < bound_s * (1 - RELATIVE_TOLERANCE):
        raise BelowPhysicalBoundError(
            f"modelling bug: {algorithm} prices {op.value} of {size_bytes} B on {fabric} (group of {layout.size}, "
            f"stride {layout.stride}, {layout.job_ranks} ranks) at {time_s:.6g} s, below the physical lower bound "
            f"{bound_s:.6g} s (ddlsim.network.bounds)")


__all__ = ["BelowPhysicalBoundError", "BoundTerms", "bound_terms", "check_price", "cut_bytes", "domain_bytes",
           "lower_bound_s", "node_bytes"]
