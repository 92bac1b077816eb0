"""The physical lower bound on the time of a collective: no algorithm on a fabric can beat it.

    lower_bound_s(fabric, op, size_bytes, layout, root=0, placement=None) -> seconds

`size_bytes` is S in the nccl-tests convention (`ddlsim.types.CollectiveCall`); n is the group
size; every group of `layout` runs at once. The bound is

    min_latency_s + max(node egress term, node ingress term, bisection term)

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
- **Bisection term** (where the fabric declares `bisection_bps`): with A the lower half of the
  fabric's node ids and k the members of a group in A, the bytes that must cross, summed over
  all concurrent groups, in the busier direction: all_to_all k(n-k)/n S; all_gather k/n S into
  B (each block crosses once, then B can forward it); reduce_scatter (n-k)/n S into B (A's
  partial sums of B's blocks); all_reduce S each way; broadcast and reduce S, gather and
  scatter the far side's blocks, send_recv S, when the group straddles the cut.
- **Latency.** Every algorithm moves data in at least one step, and every step pays at least
  the fabric's `min_latency_s` (one hop); a barrier, which carries no data, pays it too. Nothing
  is charged for an empty message or a one-rank group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.errors import DdlsimError
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placement import Placement, group_bases, job_ranks
from ddlsim.types import CollectiveOp, GroupLayout
from ddlsim.units import BITS_PER_BYTE

Op = CollectiveOp
RELATIVE_TOLERANCE = 1e-9
"""A price may undercut the bound by this fraction (floating-point rounding), no more."""


class BelowPhysicalBoundError(DdlsimError, AssertionError):
    """A price below the physical lower bound: a modelling bug in the fabric or the algorithm."""


@dataclass(frozen=True)
class BoundTerms:
    """The parts of the bound, in seconds: the bound is latency_s + max(the three others)."""

    latency_s: float
    egress_s: float
    ingress_s: float
    bisection_s: float

    @property
    def time_s(self) -> float:
        return self.latency_s + max(self.egress_s, self.ingress_s, self.bisection_s)


def lower_bound_s(fabric: Fabric, op: CollectiveOp | str, size_bytes: int, layout: GroupLayout, root: int = 0,
                  placement: Placement | None = None) -> float:
    """Seconds below which no algorithm can run `op` on every group of `layout` (module docstring)."""
    return bound_terms(fabric, op, size_bytes, layout, root, placement).time_s


def bound_terms(fabric: Fabric, op: CollectiveOp | str, size_bytes: int, layout: GroupLayout, root: int = 0,
                placement: Placement | None = None) -> BoundTerms:
    """The bound's latency, node egress, node ingress and bisection terms."""
    op = CollectiveOp(op)
    n = layout.size
    if n < 2 or (size_bytes == 0 and op is not Op.BARRIER):
        return BoundTerms(0.0, 0.0, 0.0, 0.0)
    out_bytes, in_bytes = node_bytes(op, size_bytes, n, multicast=fabric.supports_multicast(),
                                     in_network=fabric.reduces_in_network())
    egress_s = out_bytes * BITS_PER_BYTE / fabric.node_egress_bps()
    ingress_s = in_bytes * BITS_PER_BYTE / fabric.node_ingress_bps()
    bisection_s = 0.0
    capacity = fabric.bisection_bps()
    if capacity and size_bytes:
        crossing = bisection_bytes(op, size_bytes, layout, root, fabric.num_nodes // 2,
                                   placement if placement is not None else fabric.place(layout.job_ranks))
        bisection_s = crossing * BITS_PER_BYTE / capacity
    return BoundTerms(fabric.min_latency_s(), egress_s, ingress_s, bisection_s)


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


def bisection_bytes(op: CollectiveOp, size_bytes: int, layout: GroupLayout, root: int, half: int,
                    placement: Placement) -> float:
    """Bytes that must cross the cut between nodes [0, half) and the rest, in the busier direction,
    summed over every group of `layout`."""
    inside, root_inside = _members_below(layout, root, half, placement)
    n = layout.size
    k = inside.astype(np.float64)
    far = n - k
    s = float(size_bytes)
    split = (inside > 0) & (inside < n)
    if op is Op.ALL_TO_ALL:
        forward = backward = k * far * s / n
    elif op is Op.ALL_GATHER:
        forward, backward = np.where(far > 0, k, 0) * s / n, np.where(k > 0, far, 0) * s / n
    elif op is Op.REDUCE_SCATTER:
        forward, backward = np.where(k > 0, far, 0) * s / n, np.where(far > 0, k, 0) * s / n
    elif op is Op.ALL_REDUCE:
        forward = backward = np.where(split, s, 0.0)
    elif op in (Op.BROADCAST, Op.SEND_RECV):
        forward, backward = np.where(split & root_inside, s, 0.0), np.where(split & ~root_inside, s, 0.0)
    elif op is Op.REDUCE:
        forward, backward = np.where(split & ~root_inside, s, 0.0), np.where(split & root_inside, s, 0.0)
    elif op is Op.GATHER:
        forward, backward = np.where(root_inside, 0, k) * s / n, np.where(root_inside, far, 0) * s / n
    elif op is Op.SCATTER:
        forward, backward = np.where(root_inside, far, 0) * s / n, np.where(root_inside, 0, k) * s / n
    else:
        return 0.0
    return max(float(np.sum(forward)), float(np.sum(backward)))


def _members_below(layout: GroupLayout, root: int, half: int, placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """Per group: how many members sit on nodes below `half`, and whether its root does."""
    if placement.nodes is None:  # node = rank: count in closed form, one row per group
        bases = group_bases(layout)
        below = np.clip(-(-(half - bases) // layout.stride), 0, layout.size)
        return below, bases + root * layout.stride < half
    nodes = placement.node_of(job_ranks(layout, np.arange(layout.size)))
    side = nodes < half
    return side.sum(axis=1), side[:, root]


def check_price(time_s: float, bound_s: float, *, fabric: str, algorithm: str, op: CollectiveOp, size_bytes: int,
                layout: GroupLayout) -> None:
    """Raise `BelowPhysicalBoundError` when a price undercuts the physical bound."""
    if time_s < bound_s * (1 - RELATIVE_TOLERANCE):
        raise BelowPhysicalBoundError(
            f"modelling bug: {algorithm} prices {op.value} of {size_bytes} B on {fabric} (group of {layout.size}, "
            f"stride {layout.stride}, {layout.job_ranks} ranks) at {time_s:.6g} s, below the physical lower bound "
            f"{bound_s:.6g} s (ddlsim.network.bounds)")


__all__ = ["BelowPhysicalBoundError", "BoundTerms", "bisection_bytes", "bound_terms", "check_price",
           "lower_bound_s", "node_bytes"]
