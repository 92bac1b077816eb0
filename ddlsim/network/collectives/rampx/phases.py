"""RAMP-x phases: one algorithmic step of an op, in both schedule views (RAMP 6.1.3-6.1.5, Table 8).

Buffer and local operations of Table 8, per step of a subgroup with k members:

- reduce-scatter: Reshape (split into k portions by the information map), send portion p to
  the member handling p, Reduce the k inputs (a k-to-1 reduction);
- all-gather / gather: Copy (the buffer grows k-fold, own data at the own portion), send,
  Identity; all-gather runs the steps backwards;
- scatter: Reshape, send, Identity; barrier: empty tokens, logical AND.

Blocks keep their slot (block b in slot b) throughout, so no local reordering is needed.
Formulation 1's step 4 is one-to-one: its phases run as rings of k - 1 sub-steps over the
step-4 subgroup (the ring successor of Table 6 row 4.1).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.rampx.layout import RampXLayout
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.network.schedule import CompactStep, ExplicitStep, Reduction


def is_ring_step(lay: RampXLayout, step: int) -> bool:
    return lay.plan.formulation == 1 and step == 4 and lay.radix(4) > 2


def ring_pattern(lay: RampXLayout) -> Pairs:
    """Every position sends to its formulation-1 step-4 ring successor."""
    positions = np.arange(lay.n, dtype=np.int64)
    return Pairs(lay.n, positions, lay.successor(positions), key=("rampx ring", lay.plan, lay.inforank.tobytes()))


def _mesh(lay: RampXLayout, step: int, multicast: bool = False) -> Mesh:
    return Mesh(lay.n, lay.subgroup_ids(step), multicast=multicast)


def _rows(builder: ScheduleBuilder, step: CompactStep, parts: list[tuple[int, int, np.ndarray]], reduce: bool,
          multicast: bool = False) -> ExplicitStep:
    """Rows from (sender, receiver, slots) triples; slots keep their index at the receiver."""
    src = np.concatenate([np.full(slots.size, s, dtype=np.int64) for s, _, slots in parts])
    dst = np.concatenate([np.full(slots.size, d, dtype=np.int64) for _, d, slots in parts])
    slots = np.concatenate([slots for _, _, slots in parts])
    return builder.rows(src, dst, slots, slots, reduce, step, multicast)


# -- reduce-scatter and all-gather ---------------------------------------------------------------
def reduce_scatter(builder: ScheduleBuilder, lay: RampXLayout, step: int) -> None:
    if is_ring_step(lay, step):
        return _ring_exchange(builder, lay, "reduce-scatter")
    k, width = lay.radix(step), lay.below(step)
    fraction = builder.payload * width / lay.n
    compact = CompactStep(_mesh(lay, step), fraction, reductions=(Reduction(k, fraction),),
                          label=f"rampx reduce-scatter step {step}")

    def explicit() -> Iterator[ExplicitStep]:
        peers = lay.peers(step)
        parts = []
        for p in range(lay.n):
            own, prefix = int(lay.digit(step, p)), int(lay.prefix(step - 1, p))
            parts += [(p, int(peers[p, q]), lay.blocks(step, prefix * k + q)) for q in range(k) if q != own]
        yield _rows(builder, compact, parts, True)

    builder.add(compact, explicit)


def all_gather(builder: ScheduleBuilder, lay: RampXLayout, step: int) -> None:
    if is_ring_step(lay, step):
        return _ring_exchange(builder, lay, "all-gather")
    k, width = lay.radix(step), lay.below(step)
    compact = CompactStep(_mesh(lay, step), builder.payload * width / lay.n, label=f"rampx all-gather step {step}")

    def explicit() -> Iterator[ExplicitStep]:
        peers = lay.peers(step)
        parts = []
        for p in range(lay.n):
            own = int(lay.digit(step, p))
            mine = lay.blocks(step, int(lay.prefix(step, p)))
            parts += [(p, int(peers[p, q]), mine) for q in range(k) if q != own]
        yield _rows(builder, compact, parts, False)

    builder.add(compact, explicit)


def barrier(builder: ScheduleBuilder, lay: RampXLayout, step: int) -> None:
    if is_ring_step(lay, step):
        return _ring_exchange(builder, lay, "barrier")
    compact = CompactStep(_mesh(lay, step), 0.0, label=f"rampx barrier step {step}")

    def explicit() -> Iterator[ExplicitStep]:
        peers = lay.peers(step)
        token = np.zeros(1, dtype=np.int64)
        parts = [(p, int(q), token) for p in range(lay.n) for q in peers[p] if q != p]
        yield _rows(builder, compact, parts, True)

    builder.add(compact, explicit)


def _ring_exchange(builder: ScheduleBuilder, lay: RampXLayout, kind: str) -> None:
    """k - 1 ring sub-steps over formulation 1's step-4 subgroups (one portion each)."""
    k = lay.radix(4)
    positions = np.arange(lay.n, dtype=np.int64)
    pattern = ring_pattern(lay)
    successor = pattern.dst
    fraction = 0.0 if kind == "barrier" else builder.payload / lay.n
    reductions = (Reduction(2, fraction),) if kind == "reduce-scatter" else ()
    compact = CompactStep(pattern, fraction, k - 1, reductions=reductions, label=f"rampx ring {kind} step 4")

    def explicit() -> Iterator[ExplicitStep]:
        own = lay.digit(4, positions)
        prefix = lay.prefix(3, positions)
        for t in range(k - 1):
            if kind == "barrier":
                slots = np.zeros(lay.n, dtype=np.int64)
            else:
                portion = (own - 1 - t) % k if kind == "reduce-scatter" else (own - t) % k
                slots = np.array([lay.blocks(4, int(prefix[p]) * k + int(portion[p]))[0] for p in positions])
            yield builder.rows(positions, successor, slots, slots, kind != "all-gather", compact)

    builder.add(compact, explicit)


# -- scatter and gather (trees rooted at the root) ----------------------------------------------
def tree_levels(lay: RampXLayout, root: int) -> dict[int, np.ndarray]:
    """Positions holding data before each step of a scatter from `root` (level s-1 for step s)."""
    holders = np.array([root], dtype=np.int64)
    levels = {}
    for step in lay.steps:
        levels[step] = holders
        reached = np.zeros(lay.n, dtype=bool)
        reached[lay.peers(step)[holders].ravel()] = True
        holders = np.flatnonzero(reached)
    return levels


def _ring_walk(lay: RampXLayout, parents: np.ndarray) -> np.ndarray:
    """Shape (parents, k): each parent's step-4 ring, starting at the parent."""
    walk = [parents]
    for _ in range(lay.radix(4) - 1):
        walk.append(lay.successor(walk[-1]))
    return np.stack(walk, axis=1)


def scatter(builder: ScheduleBuilder, lay: RampXLayout, step: int, parents: np.ndarray) -> None:
    k, width = lay.radix(step), lay.below(step)
    if is_ring_step(lay, step):
        return _ring_scatter_gather(builder, lay, parents, towards_root=False)
    peers = lay.peers(step)[parents]
    own = lay.digit(step, parents)
    src = np.repeat(parents, k - 1)
    dst = np.array([q for row, mine in zip(peers, own) for portion, q in enumerate(row) if portion != mine],
                   dtype=np.int64)
    compact = CompactStep(Pairs(lay.n, src, dst), builder.payload * width / lay.n, label=f"rampx scatter step {step}")

    def explicit() -> Iterator[ExplicitStep]:
        parts = []
        for parent, row, mine in zip(parents, peers, own):
            prefix = int(lay.prefix(step - 1, parent))
            parts += [(int(parent), int(q), lay.blocks(step, prefix * k + p)) for p, q in enumerate(row) if p != mine]
        yield _rows(builder, compact, parts, False)

    builder.add(compact, explicit)


def gather(builder: ScheduleBuilder, lay: RampXLayout, step: int, parents: np.ndarray) -> None:
    k, width = lay.radix(step), lay.below(step)
    if is_ring_step(lay, step):
        return _ring_scatter_gather(builder, lay, parents, towards_root=True)
    peers = lay.peers(step)[parents]
    own = lay.digit(step, parents)
    children = np.array([q for row, mine in zip(peers, own) for p, q in enumerate(row) if p != mine], dtype=np.int64)
    dst = np.repeat(parents, k - 1)
    compact = CompactStep(Pairs(lay.n, children, dst), builder.payload * width / lay.n,
                          label=f"rampx gather step {step}")

    def explicit() -> Iterator[ExplicitStep]:
        parts = [(int(c), int(d), lay.blocks(step, int(lay.prefix(step, c)))) for c, d in zip(children, dst)]
        yield _rows(builder, compact, parts, False)

    builder.add(compact, explicit)


def _ring_scatter_gather(builder: ScheduleBuilder, lay: RampXLayout, parents: np.ndarray, towards_root: bool) -> None:
    """Scatter (or gather) along each parent's step-4 ring: k - 1 sub-steps, one hop each."""
    k = lay.radix(4)
    walk = _ring_walk(lay, parents)
    own = [lay.blocks(4, int(lay.prefix(4, member))) for member in range(lay.n)]
    order = range(k - 1)
    for t in order:
        if towards_root:  # member at distance t + 1 forwards the t + 1 blocks gathered so far
            senders, receivers = walk[:, t + 1], walk[:, (t + 2) % k]
            carried = [walk[i, 1:t + 2] for i in range(len(parents))]
            amount = t + 1
        else:  # member at distance t forwards the blocks of members at distances t + 1 .. k - 1
            senders, receivers = walk[:, t], walk[:, t + 1]
            carried = [walk[i, t + 1:] for i in range(len(parents))]
            amount = k - 1 - t
        kind = "gather" if towards_root else "scatter"
        compact = CompactStep(Pairs(lay.n, senders, receivers), builder.payload * amount / lay.n,
                              label=f"rampx ring {kind} step 4.{t}")

        def explicit(senders=senders, receivers=receivers, carried=carried, compact=compact):
            parts = [(int(s), int(r), np.concatenate([own[m] for m in members]))
                     for s, r, members in zip(senders, receivers, carried)]
            yield _rows(builder, compact, parts, False)

        builder.add(compact, explicit)
