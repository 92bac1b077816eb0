"""SiPCO (SiPAC Section V) as a registered collective algorithm on SiPAC and electronic BCube.

A group of n = r^L ranks is read as an L-digit radix-r number (digit l: the port on the level-l
switch). SiPCO's principle is to keep every one of the L links of every CU busy at every step
and to make every transmitted chunk useful. The ops:

- all_reduce: Algorithm 1 exactly (L + 1 steps, C = r L chunks, `sipco_logic`);
- reduce_scatter / all_gather: the message is split into L parts; part g is reduce-scattered
  (gathered) over the levels in the rotated order g, g + 1, ... (backwards), so at every step
  each level carries a different part: L steps, (r - 1) r^(L-1-s) / (p L) per link at step s;
- all_to_all: the same rotation of a dimension-ordered exchange (L steps of (r-1)/(r L));
- broadcast / scatter: L trees, part g descending the levels in the order g, g + 1, ...;
  reduce / gather: the same trees upwards. Each step uses a different level for every part;
- barrier: L steps of tokens to every direct neighbour on all levels.

The added ops (all but all_reduce) are ddlsim's application of the paper's stated principle
("maximize the utilization of link resources at each timestep"); the paper defines only
all-reduce. With L = 1 every op is the direct (mesh) exchange, as the paper notes.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import ALL_OPS, CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.sipco_logic import all_reduce_steps
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.bcube import Bcube
from ddlsim.network.fabrics.sipac import Sipac
from ddlsim.network.patterns import Pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


def radix_levels(fabric: Fabric, n: int) -> tuple[int, int] | None:
    """(r, L') with r^L' = n for the fabric's switch radix, or None."""
    radix = fabric.switch_radix()
    if radix is None:
        return None
    levels, size = 0, 1
    while size < n:
        size *= radix
        levels += 1
    return (radix, levels) if size == n and 1 <= levels <= len(fabric.domain_sizes()) else None


class _Cube:
    """Digits of positions 0..r^L - 1 and the helpers every phase needs."""

    def __init__(self, radix: int, levels: int) -> None:
        self.r, self.levels, self.n = radix, levels, radix ** levels
        self.positions = np.arange(self.n, dtype=np.int64)

    def digit(self, values: np.ndarray | int, level: int) -> np.ndarray:
        return (np.asarray(values, dtype=np.int64) // self.r ** level) % self.r

    def with_digit(self, values: np.ndarray | int, level: int, digit: np.ndarray | int) -> np.ndarray:
        values = np.asarray(values, dtype=np.int64)
        return values + (np.asarray(digit, dtype=np.int64) - self.digit(values, level)) * self.r ** level

    def level_of(self, part: int, step: int) -> int:
        return (part + step) % self.levels

    def matching(self, reference: int, free_levels: list[int]) -> np.ndarray:
        """Positions equal to `reference` on every level outside `free_levels`."""
        keep = np.ones(self.n, dtype=bool)
        for level in range(self.levels):
            if level not in free_levels:
                keep &= self.digit(self.positions, level) == self.digit(reference, level)
        return self.positions[keep]

    def neighbour_pairs(self, senders: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
        """(sender, receiver) for every sender and each of its r - 1 level-`level` neighbours."""
        ports = np.arange(self.r, dtype=np.int64)
        receivers = self.with_digit(np.repeat(senders, self.r), level, np.tile(ports, senders.size))
        src = np.repeat(senders, self.r)
        keep = receivers != src
        return src[keep], receivers[keep]


def _add(builder: ScheduleBuilder, label: str, src: np.ndarray, dst: np.ndarray, fraction: float,
         rows, reduce: bool, reductions: tuple[Reduction, ...] = ()) -> None:
    """One compact step over (src, dst) pairs and its explicit rows from `rows()` -> (s, d, slots).

    No step is flagged multicast: a WSS broadcast reaches each neighbour on that pair's own
    wavelengths, so it costs what sending to each neighbour costs (and the parts sent on
    different levels differ)."""
    pattern = Pairs(builder.n, src, dst)
    step = CompactStep(pattern, fraction, reductions=reductions, label=label)

    def explicit():
        s, d, src_slot, dst_slot = rows()
        yield builder.rows(s, d, src_slot, dst_slot, reduce, step)

    builder.add(step, explicit)


def _concat(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    return tuple(np.concatenate(column) for column in zip(*parts))


# -- all-reduce: Algorithm 1 ------------------------------------------------------------------------
def all_reduce(builder: ScheduleBuilder, cube: _Cube) -> None:
    chunk = builder.payload / (cube.r * cube.levels)
    for index, step in enumerate(all_reduce_steps(cube.r, cube.levels)):
        reductions = (Reduction(cube.r, builder.payload / cube.r),) if step.reduce and cube.r > 1 else ()
        _add(builder, f"sipco all-reduce step {index}", step.src, step.dst, chunk,
             lambda step=step: (step.src, step.dst, step.chunk, step.chunk), step.reduce, reductions)


# -- rotated reduce-scatter, all-gather and all-to-all ------------------------------------------------
def _blocks_with(cube: _Cube, reference: np.ndarray, levels: list[int]) -> np.ndarray:
    """Shape (len(reference), r^(L - len(levels))): blocks equal to each reference on `levels`."""
    free = [level for level in range(cube.levels) if level not in levels]
    offsets = cube.matching(0, free)  # every combination of the free digits, others zero
    base = np.zeros(len(reference), dtype=np.int64)
    for level in levels:
        base += cube.digit(reference, level) * cube.r ** level
    return base[:, None] + offsets[None, :]


def reduce_scatter(builder: ScheduleBuilder, cube: _Cube, gather: bool = False) -> None:
    """Part g: reduce-scatter over levels g, g+1, ... (all-gather: the same steps backwards)."""
    r, levels, n = cube.r, cube.levels, cube.n
    order = range(levels - 1, -1, -1) if gather else range(levels)
    for s in order:
        parts = []
        for g in range(levels):
            level = cube.level_of(g, s)
            src, dst = cube.neighbour_pairs(cube.positions, level)
            fixed = [cube.level_of(g, t) for t in range(s + 1)]
            # All-gather sends the sender's own blocks on the levels still to be gathered; reduce-
            # scatter the receiver's blocks among those the sender still holds.
            blocks = _blocks_with(cube, src if gather else dst, fixed)
            chunks = blocks * levels + g
            width = chunks.shape[1]
            parts.append((np.repeat(src, width), np.repeat(dst, width), chunks.ravel()))
        src_all = np.concatenate([cube.neighbour_pairs(cube.positions, cube.level_of(g, s))[0] for g in range(levels)])
        dst_all = np.concatenate([cube.neighbour_pairs(cube.positions, cube.level_of(g, s))[1] for g in range(levels)])
        fraction = builder.payload * r ** (levels - s - 1) / (n * levels)
        reductions = () if gather else (Reduction(r, builder.payload / r ** (s + 1)),)
        kind = "all-gather" if gather else "reduce-scatter"
        _add(builder, f"sipco {kind} step {s}", src_all, dst_all, fraction,
             lambda parts=parts: (*_concat(parts)[:2], _concat(parts)[2], _concat(parts)[2]), not gather, reductions)


def all_to_all(builder: ScheduleBuilder, cube: _Cube) -> None:
    """Part g of every block moves along levels g, g+1, ... A piece's slot holds the origin's
    digits on the levels it has crossed and the destination's on the others, so a holder always
    holds every slot, and crossing level l swaps digit l from the destination's to the origin's."""
    r, levels, n = cube.r, cube.levels, cube.n
    for s in range(levels):
        rows, pairs = [], []
        for g in range(levels):
            level = cube.level_of(g, s)
            pairs.append(cube.neighbour_pairs(cube.positions, level))
            holder = np.repeat(cube.positions, n)
            slot = np.tile(cube.positions, n)
            moving = cube.digit(slot, level) != cube.digit(holder, level)
            holder, slot = holder[moving], slot[moving]
            receiver = cube.with_digit(holder, level, cube.digit(slot, level))
            landing = cube.with_digit(slot, level, cube.digit(holder, level))
            rows.append((holder, receiver, slot * levels + g, landing * levels + g))
        src = np.concatenate([p[0] for p in pairs])
        dst = np.concatenate([p[1] for p in pairs])
        _add(builder, f"sipco all-to-all step {s}", src, dst, builder.payload / (r * levels),
             lambda rows=rows: _concat(rows), False)


# -- rooted trees: broadcast, scatter, reduce, gather -------------------------------------------------
def rooted(builder: ScheduleBuilder, cube: _Cube, op: CollectiveOp) -> None:
    r, levels, n, root = cube.r, cube.levels, cube.n, builder.request.root
    upward = op in (Op.REDUCE, Op.GATHER)
    whole = op in (Op.BROADCAST, Op.REDUCE)
    order = range(levels - 1, -1, -1) if upward else range(levels)
    for s in order:
        parts = []
        for g in range(levels):
            level = cube.level_of(g, s)
            visited = [cube.level_of(g, t) for t in range(s)]
            holders = cube.matching(root, visited)  # part g has reached these before step s
            parents, children = cube.neighbour_pairs(holders, level)
            if whole:
                chunks = np.full((children.size, 1), g, dtype=np.int64)
            else:  # the part-g chunks of every block in the child's subtree
                chunks = _blocks_with(cube, children, visited + [level]) * levels + g
            width = chunks.shape[1]
            src, dst = (children, parents) if upward else (parents, children)
            parts.append((np.repeat(src, width), np.repeat(dst, width), chunks.ravel()))
        src_all = np.concatenate([np.unique(np.stack([p[0], p[1]]), axis=1)[0] for p in parts])
        dst_all = np.concatenate([np.unique(np.stack([p[0], p[1]]), axis=1)[1] for p in parts])
        width = 1 if whole else r ** (levels - s - 1)
        fraction = builder.payload * width / (levels if whole else n * levels)
        reduce = op is Op.REDUCE
        reductions = (Reduction(r, builder.payload),) if reduce else ()  # the root reduces every part
        _add(builder, f"sipco {op.value} step {s}", src_all, dst_all, fraction,
             lambda parts=parts: (*_concat(parts), _concat(parts)[2]), reduce, reductions)


def barrier(builder: ScheduleBuilder, cube: _Cube) -> None:
    for s in range(cube.levels):
        pairs = [cube.neighbour_pairs(cube.positions, level) for level in range(cube.levels)]
        src = np.concatenate([p[0] for p in pairs])
        dst = np.concatenate([p[1] for p in pairs])
        zero = np.zeros(src.size, dtype=np.int64)
        _add(builder, f"sipco barrier step {s}", src, dst, 0.0,
             lambda src=src, dst=dst, zero=zero: (src, dst, zero, zero), True)


@dataclass
class SipcoConfig:
    name: str = "sipco"


@ALGORITHMS.register("sipco", SipcoConfig, summary="SiPCO (SiPAC Alg. 1): L + 1 steps using every link, r^L ranks")
@dataclass(frozen=True)
class Sipco(CollectiveAlgorithm):
    """SiPCO on SiPAC / BCube: every link of every CU busy at every step; groups of r^L ranks."""

    name: str = "sipco"
    ops = ALL_OPS

    @classmethod
    def from_config(cls, config: SipcoConfig) -> Sipco:
        return cls(config.name)

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is not None:
            return reason
        if not isinstance(fabric, (Sipac, Bcube)):
            return "SiPCO runs only on the sipac and bcube fabrics"
        if radix_levels(fabric, group_size) is None:
            return f"SiPCO needs r^L ranks with r = {fabric.radix} and 1 <= L <= {fabric.levels}"
        return None

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        return radix_levels(request.fabric, request.group_size)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        radix, levels = radix_levels(request.fabric, request.group_size)
        cube = _Cube(radix, levels)
        op = request.op
        chunks = {Op.ALL_REDUCE: radix * levels, Op.BROADCAST: levels, Op.REDUCE: levels, Op.BARRIER: 1}.get(
            op, cube.n * levels)
        builder = ScheduleBuilder(request, self.name, chunks, explicit=explicit)
        if op is Op.ALL_REDUCE:
            all_reduce(builder, cube)
        elif op in (Op.REDUCE_SCATTER, Op.ALL_GATHER):
            reduce_scatter(builder, cube, gather=op is Op.ALL_GATHER)
        elif op is Op.ALL_TO_ALL:
            all_to_all(builder, cube)
        elif op is Op.BARRIER:
            barrier(builder, cube)
        else:
            rooted(builder, cube, op)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()

    def verification_fabric(self, group_size: int) -> Fabric:
        """The SiPAC whose r^L is `group_size` with the fewest levels >= 2 (else L = 1, a mesh)."""
        for levels in (2, 3, 4, 5, 6, 1):
            radix = round(group_size ** (1 / levels))
            for candidate in (radix - 1, radix, radix + 1):
                if candidate >= 2 and candidate ** levels == group_size:
                    return Sipac(candidate, levels, 400e9, candidate, 1e-6)
        return Sipac(group_size, 1, 400e9, group_size, 1e-6)
