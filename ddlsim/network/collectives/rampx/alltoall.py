"""RAMP-x all-to-all (Table 8: Reshape before sending, Reshape after receiving, m / k per peer).

At every step a position sends each member of its subgroup the blocks whose destination has
that member's portion, and reshapes what it holds (Table 8's Loc.op: the received data are
transposed into destination order). Explicitly, slots are four banks of n: A (the op's buffer),
B and C (intermediate layouts) and L (where received blocks land). After each step a local
reshape writes all n held blocks, sorted by (destination, origin), into the next bank, ending
in bank A in origin order: rank i's slot j holds rank j's block for i. Every reshape moves the
whole buffer (one from A back to A, in a single-step all-to-all, leaves the rank's own block
in place), which is what the compact view charges.

Formulation 1's step 4 relays around the step-4 ring: sub-step t forwards the k - 1 - t
portions still in transit.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.rampx.layout import RampXLayout
from ddlsim.network.collectives.rampx.phases import is_ring_step, ring_pattern
from ddlsim.network.patterns import Mesh
from ddlsim.network.schedule import CompactStep, ExplicitStep

BANKS = 4


def sub_steps(lay: RampXLayout) -> list[tuple[int, int]]:
    """(step, sub-step) of every communication step; ring steps have k - 1 sub-steps."""
    return [(step, t) for step in lay.steps for t in range(lay.radix(4) - 1 if is_ring_step(lay, step) else 1)]


def banks(count: int) -> list[int]:
    """Target bank after each of `count` steps: never the current one, ending in bank 0 (A)."""
    if count == 1:
        return [0]
    sequence = [1, 2, 0] if count % 2 else []
    while len(sequence) < count:
        sequence = [1, 0] + sequence
    return sequence


def all_to_all(builder: ScheduleBuilder, lay: RampXLayout) -> None:
    n = lay.n
    schedule = sub_steps(lay)
    targets = banks(len(schedule))
    copy = builder.payload * ((n - 1) / n if len(schedule) == 1 else 1.0)
    state = _State(lay) if builder.explicit else None
    for (step, t), bank in zip(schedule, targets):
        k = lay.radix(step)
        if is_ring_step(lay, step):
            pattern = ring_pattern(lay)
            fraction = builder.payload * (k - 1 - t) / k
        else:
            pattern = Mesh(n, lay.subgroup_ids(step))
            fraction = builder.payload / k
        compact = CompactStep(pattern, fraction, copy_fraction=copy, label=f"rampx all-to-all step {step}.{t}")
        builder.add(compact, (lambda s=step, b=bank, c=compact: state.advance(builder, s, b, c)) if state else None)


class _State:
    """Which (origin, destination) block each slot of each position holds, for the explicit view."""

    def __init__(self, lay: RampXLayout) -> None:
        n = lay.n
        self.lay = lay
        self.origin = np.repeat(np.arange(n, dtype=np.int64)[:, None], n, axis=1)  # [position, index]
        self.dest = np.repeat(np.arange(n, dtype=np.int64)[None, :], n, axis=0)
        self.bank = 0

    def _next_hop(self, step: int, holders: np.ndarray, dest: np.ndarray) -> np.ndarray:
        """Where each held block goes at `step` (itself when it stays)."""
        lay = self.lay
        if is_ring_step(lay, step):
            moving = lay.digit(4, dest) != lay.digit(4, holders)
            return np.where(moving, lay.successor(holders), holders)
        return lay.peers(step)[holders, lay.digit(step, dest)]

    def advance(self, builder: ScheduleBuilder, step: int, bank: int, compact: CompactStep) -> Iterator[ExplicitStep]:
        n = self.lay.n
        holders = np.repeat(np.arange(n, dtype=np.int64)[:, None], n, axis=1)
        hop = self._next_hop(step, holders.ravel(), self.dest.ravel()).reshape(n, n)
        moving = hop != holders
        src, src_index = np.nonzero(moving)
        dst = hop[moving]
        origin, dest = self.origin[moving], self.dest[moving]
        order = np.lexsort((origin, dest, dst))  # incoming blocks numbered per receiver
        landing = np.empty(order.size, dtype=np.int64)
        starts = np.searchsorted(dst[order], np.arange(n))
        landing[order] = np.arange(order.size) - starts[dst[order]]
        old_slot = self.bank * n + src_index
        new_origin, new_dest, source_slot = [], [], []
        for v in range(n):
            stay = ~moving[v]
            here = dst == v
            o = np.concatenate([self.origin[v, stay], origin[here]])
            d = np.concatenate([self.dest[v, stay], dest[here]])
            slot = np.concatenate([self.bank * n + np.flatnonzero(stay), (BANKS - 1) * n + landing[here]])
            sort = np.lexsort((o, d))
            new_origin.append(o[sort])
            new_dest.append(d[sort])
            source_slot.append(slot[sort])
        perm = np.repeat(np.arange(BANKS * n, dtype=np.int64)[None, :], n, axis=0)
        perm[:, bank * n:(bank + 1) * n] = np.stack(source_slot)
        self.origin, self.dest, self.bank = np.stack(new_origin), np.stack(new_dest), bank
        yield ExplicitStep(src, dst, old_slot, (BANKS - 1) * n + landing, False, circuit=compact.circuit,
                           label=compact.label, local_perm=perm)
