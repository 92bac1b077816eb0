"""Recursive halving and doubling (Thakur, Rabenseifner and Gropp 2005; Rabenseifner 2004).

On m = 2^floor(log2 n) "virtual" ranks, step b pairs rank v with v XOR 2^b:

- reduce_scatter: recursive halving, distance doubling (b = 0, 1, ...): each keeps the half of its
  segments whose bit b matches its own and sends the other half, which the partner adds;
- all_gather: recursive doubling, distance halving (b = log m - 1, ..., 0);
- all_reduce (Rabenseifner): reduce_scatter then all_gather, 2 log2 n steps for n = 2^k;
- reduce: reduce_scatter then a binomial gather to the root; broadcast (van de Geijn): a
  binomial scatter from the root then all_gather; gather / scatter: binomial trees;
- barrier: all_gather of empty tokens.

Non-power-of-two groups (r = n - m extra ranks) follow MPICH: ranks 2i and 2i + 1 (i < r) first
fold into 2i + 1, which stands for both as virtual rank i (and owns both of their segments);
a final step hands 2i its result. all_to_all is not offered (use bruck or direct).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.patterns import Pairs, xor_pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


class Virtual:
    """The m virtual ranks of a group of n, and the chunks each virtual segment owns."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.bits = int(np.floor(np.log2(n)))
        self.m = 1 << self.bits
        self.r = n - self.m
        v = np.arange(self.m, dtype=np.int64)
        self.real = np.where(v < self.r, 2 * v + 1, v + self.r)

    def virtual_of(self, position: int) -> int:
        """The virtual rank that holds `position`'s data (its own, or its partner's if folded)."""
        if position < 2 * self.r:
            return position // 2
        return position - self.r

    def chunks(self, segments: np.ndarray) -> np.ndarray:
        """Chunks owned by virtual segments (two for a folded pair, one otherwise)."""
        segments = np.asarray(segments, dtype=np.int64)
        folded = segments[segments < self.r]
        return np.sort(np.concatenate([2 * folded, 2 * folded + 1, segments[segments >= self.r] + self.r]))

    def range_count(self, start: np.ndarray, width: int) -> np.ndarray:
        """Chunks owned by segments [start, start + width)."""
        return width + np.clip(self.r - start, 0, width)

    def masked_count(self, pattern: np.ndarray, bits: int) -> np.ndarray:
        """Chunks owned by segments whose low `bits` bits equal `pattern`."""
        period = 1 << bits
        if self.r == 0:
            return np.full(np.shape(pattern), self.m // period, dtype=np.int64)
        extra = np.where(pattern < self.r, (self.r - 1 - pattern) // period + 1, 0)
        return self.m // period + extra


def _pairs_step(builder: ScheduleBuilder, src_v: np.ndarray, dst_v: np.ndarray, counts: np.ndarray,
                chunk_lists, key, label: str, reduce: bool, real=True) -> None:
    virtual = builder.virtual
    most, least = (int(counts.max()), int(counts.min())) if counts.size else (0, 0)
    weight = float(most) if most == least else counts.astype(np.float64)
    # Halving and doubling use the same pairs for a bit: build the pattern once per (key, weights).
    memo_key = (key, most if most == least else None)
    pattern = builder.memo.get(memo_key) if memo_key[1] is not None else None
    if pattern is None and key[0] == "xor bit" and virtual.r == 0 and most == least:
        pattern = builder.memo[memo_key] = xor_pairs(builder.n, 1 << key[1], most)
    if pattern is None:
        src = virtual.real[src_v] if real else src_v
        dst = virtual.real[dst_v] if real else dst_v
        pattern = Pairs(builder.n, src, dst, weight, key=key, one_to_one=True)
        builder.memo[memo_key] = pattern
    fraction = builder.payload / builder.n
    reductions = (Reduction(2, fraction * most),) if reduce and counts.size else ()
    step = CompactStep(pattern, fraction, reductions=reductions, label=label)

    def explicit():
        src, dst = pattern.src, pattern.dst
        lists = [chunk_lists(i) for i in range(src.size)]
        sizes = np.array([chunks.size for chunks in lists])
        chunks = np.concatenate(lists)
        yield builder.rows(np.repeat(src, sizes), np.repeat(dst, sizes), chunks, chunks, reduce, step)

    builder.add(step, explicit)


def _fold(builder: ScheduleBuilder, towards_odd: bool, what: str, reduce: bool = False) -> None:
    """Pre/post step between 2i and 2i + 1 (i < r): `what` is "all", "own" (chunk 2i) or "rest"."""
    r, n = builder.virtual.r, builder.n
    if r == 0:
        return
    even = 2 * np.arange(r, dtype=np.int64)
    src, dst = (even, even + 1) if towards_odd else (even + 1, even)
    every = np.arange(n, dtype=np.int64)
    lists = {"all": lambda i: every, "own": lambda i: np.array([2 * i]),
             "rest": lambda i: every[every != 2 * i]}[what]
    count = {"all": n, "own": 1, "rest": n - 1}[what]
    _pairs_step(builder, src, dst, np.full(r, count), lists, ("rhd fold", towards_odd, what),
                f"fold {what}", reduce, real=False)


def _halving(builder: ScheduleBuilder) -> None:
    virtual = builder.virtual
    v = np.arange(virtual.m, dtype=np.int64)
    for b in range(virtual.bits):
        if virtual.r == 0 and not builder.explicit:  # uniform halves: no per-rank arrays needed
            _pairs_step(builder, v, v, np.array([virtual.m >> (b + 1)]), None, ("xor bit", b), f"halving bit {b}", True)
            continue
        partner = v ^ (1 << b)
        pattern = (v & ((1 << b) - 1)) | (partner & (1 << b))
        counts = virtual.masked_count(pattern, b + 1)
        segments = np.arange(virtual.m)

        def lists(i, b=b, pattern=pattern, segments=segments):
            mask = (1 << (b + 1)) - 1
            return virtual.chunks(segments[(segments & mask) == pattern[i]])

        _pairs_step(builder, v, partner, counts, lists, ("xor bit", b), f"halving bit {b}", True)


def _doubling(builder: ScheduleBuilder) -> None:
    virtual = builder.virtual
    v = np.arange(virtual.m, dtype=np.int64)
    for b in reversed(range(virtual.bits)):
        if virtual.r == 0 and not builder.explicit:
            _pairs_step(builder, v, v, np.array([virtual.m >> (b + 1)]), None, ("xor bit", b), f"doubling bit {b}",
                        False)
            continue
        mask = (1 << (b + 1)) - 1
        counts = virtual.masked_count(v & mask, b + 1)
        segments = np.arange(virtual.m)

        def lists(i, mask=mask, segments=segments):
            return virtual.chunks(segments[(segments & mask) == (i & mask)])

        _pairs_step(builder, v, v ^ (1 << b), counts, lists, ("xor bit", b), f"doubling bit {b}", False)


def _binomial(builder: ScheduleBuilder, gather: bool) -> None:
    """Binomial gather to (or scatter from) the root's virtual rank; segment v = own chunks of v."""
    virtual = builder.virtual
    root = virtual.virtual_of(builder.request.root)
    order = range(virtual.bits) if gather else reversed(range(virtual.bits))
    segments = np.arange(virtual.m)
    for b in order:
        width = 1 << b
        # The ranks v whose low b + 1 bits of v ^ root are width (gather) or 0 (scatter), ascending:
        # XOR with root only permutes the higher bits, so they are every 2 * width from the offset.
        offset = (root & (2 * width - 1)) ^ (width if gather else 0)
        senders = np.arange(offset, virtual.m, 2 * width, dtype=np.int64)
        receivers = senders ^ width
        starts = ((senders if gather else receivers) >> b) << b
        counts = virtual.range_count(starts, width)

        def lists(i, starts=starts, width=width, segments=segments):
            return virtual.chunks(segments[(segments >= starts[i]) & (segments < starts[i] + width)])

        kind = "gather" if gather else "scatter"
        _pairs_step(builder, senders, receivers, counts, lists, (kind, root, b), f"binomial {kind} bit {b}", False)


def build_rhd(builder: ScheduleBuilder) -> None:
    op, virtual = builder.request.op, builder.virtual
    root_is_folded = builder.request.root < 2 * virtual.r and builder.request.root % 2 == 0
    if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.REDUCE):
        _fold(builder, True, "all", reduce=True)
        _halving(builder)
    if op in (Op.ALL_GATHER, Op.GATHER, Op.BARRIER):
        _fold(builder, True, "own")
    if op in (Op.BROADCAST, Op.SCATTER) and root_is_folded:
        _fold_root(builder)
    if op in (Op.BROADCAST, Op.SCATTER):
        _binomial(builder, gather=False)
    if op in (Op.ALL_REDUCE, Op.ALL_GATHER, Op.BROADCAST, Op.BARRIER):
        _doubling(builder)
    if op in (Op.REDUCE, Op.GATHER):
        _binomial(builder, gather=True)
    if op in (Op.ALL_REDUCE, Op.BROADCAST):
        _fold(builder, False, "all")
    elif op in (Op.ALL_GATHER, Op.BARRIER):
        _fold(builder, False, "rest")
    elif op in (Op.REDUCE_SCATTER, Op.SCATTER):
        _fold(builder, False, "own")
    elif op in (Op.REDUCE, Op.GATHER) and root_is_folded:
        _fold_root(builder, towards_root=True)


def _fold_root(builder: ScheduleBuilder, towards_root: bool = False) -> None:
    """A root that folded away (even, < 2r) hands its data to, or takes the result from, its partner."""
    root, n = builder.request.root, builder.n
    src, dst = (root + 1, root) if towards_root else (root, root + 1)
    every = np.arange(n, dtype=np.int64)
    _pairs_step(builder, np.array([src]), np.array([dst]), np.array([n]), lambda i: every,
                ("rhd root", root, towards_root), "root hand-over", False, real=False)


@dataclass
class HalvingDoublingConfig:
    name: str = "rhd"


@ALGORITHMS.register("rhd", HalvingDoublingConfig)
@dataclass(frozen=True)
class HalvingDoubling(CollectiveAlgorithm):
    """Recursive halving/doubling (Rabenseifner all-reduce): 2 log2 n steps of shrinking size."""

    name: str = "rhd"
    ops = frozenset(CollectiveOp) - {Op.SEND_RECV, Op.ALL_TO_ALL}

    @classmethod
    def from_config(cls, config: HalvingDoublingConfig) -> HalvingDoubling:
        return cls(config.name)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        builder = ScheduleBuilder(request, self.name, request.group_size, explicit=explicit)
        builder.virtual = Virtual(request.group_size)
        builder.memo = {}
        build_rhd(builder)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, True).explicit_schedule()
