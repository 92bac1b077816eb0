"""H-Ring, the hierarchical-ring baseline of WRHT (Table 1, after Ueno and Yokota 2019).

The group is cut into G = ceil(n/m) runs of m consecutive ranks (the last run may be shorter),
and the buffer into m shards of G pieces:

1. intra-run ring reduce-scatter: in a run of s members, member i ends owning the shards
   j with j % s == i, summed over the run (s - 1 steps, every run at once);
2. inter-run ring all-reduce of each shard among its G owners, one per run (2(G - 1) steps of
   one piece). On a WDM ring all m shard rings cross every segment, so they need m channels
   per direction; when the fabric has fewer, the shards go in rounds;
3. intra-run ring all-gather (s - 1 steps).

Steps: 2(m - 1) + 2(G - 1) x rounds. WRHT's Table 1 formula, 2(m^2 + N)/m - 3 when
ceil(m/w) = 1 (417 for N = 1024, m = 5), is one step more; `hring_steps` in wrht.py keeps it.
Unlike the core's `hierarchical` (one dimension per fabric level, sizes that divide n), this
variant takes m from its config and any n, as WRHT's baseline needs (1024 is not a multiple of 5).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.optical_ring.fabric import OpticalRing
from ddlsim.network.fabrics.optical_ring.params import OpticalRingConfig
from ddlsim.network.patterns import Pairs
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, ExplicitStep, Reduction, Schedule


@dataclass(frozen=True)
class Runs:
    """The runs of one H-Ring group: n ranks in runs of m (the last one possibly shorter)."""

    n: int
    m: int

    @property
    def count(self) -> int:
        return -(-self.n // self.m)

    def size(self, run: np.ndarray | int) -> np.ndarray:
        return np.minimum(self.m, self.n - np.asarray(run) * self.m)

    def owner(self, shard: np.ndarray | int, run: np.ndarray | int) -> np.ndarray:
        """Position of the member of `run` that owns `shard` after the reduce-scatter."""
        return np.asarray(run) * self.m + np.asarray(shard) % self.size(run)


@dataclass
class HRingConfig:
    name: str = "hring"
    m: int = 5  # ranks per run; WRHT's Table 1 and Figs. 5-6 use 5


@ALGORITHMS.register("hring", HRingConfig)
@dataclass(frozen=True)
class HRing(CollectiveAlgorithm):
    """WRHT's H-Ring baseline on the WDM ring: rings in runs of m, a ring across runs, rings again."""

    m: int = 5
    name: str = "hring"
    ops: ClassVar[frozenset[CollectiveOp]] = frozenset({CollectiveOp.ALL_REDUCE})

    @classmethod
    def from_config(cls, config: HRingConfig) -> HRing:
        if not isinstance(config.m, int) or config.m < 2:
            raise ConfigError("m", config.m, "must be an integer >= 2")
        return cls(config.m, config.name)

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is None and not isinstance(fabric, OpticalRing):
            return "hring is WRHT's baseline for the WDM optical ring; use 'hierarchical' elsewhere"
        return reason

    def verification_fabric(self, group_size: int) -> Fabric:
        # Two channels per direction: runs of 5 need their shard rings in three rounds.
        return OpticalRing.from_config(OpticalRingConfig(num_nodes=max(group_size, 1), wavelengths=1,
                                                         optical_constraints=False))

    # -- structure ---------------------------------------------------------------------------------
    def runs(self, request: ScheduleRequest) -> Runs:
        return Runs(request.group_size, min(self.m, request.group_size))

    def _inter_pattern(self, request: ScheduleRequest, runs: Runs, shards: range) -> Pairs:
        run = np.arange(runs.count)
        src = np.concatenate([runs.owner(j, run) for j in shards])
        dst = np.concatenate([runs.owner(j, (run + 1) % runs.count) for j in shards])
        pair, weight = np.unique(src * runs.n + dst, return_counts=True)
        return Pairs(runs.n, pair // runs.n, pair % runs.n, weight.astype(np.float64),
                     key=("hring-inter", runs.n, runs.m, shards.start, shards.stop))

    def rounds(self, request: ScheduleRequest) -> list[range]:
        """Shards split into the fewest rounds of consecutive shards whose rings the fabric carries."""
        runs = self.runs(request)
        fabric = request.fabric
        for count in range(1, runs.m + 1):
            width = -(-runs.m // count)
            rounds = [range(start, min(start + width, runs.m)) for start in range(0, runs.m, width)]
            if not isinstance(fabric, OpticalRing) or all(
                    fabric.fits(self._inter_pattern(request, runs, shards), request.layout, request.placement)
                    for shards in rounds):
                return rounds
        return [range(j, j + 1) for j in range(runs.m)]

    # -- both views ----------------------------------------------------------------------------
    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        runs = self.runs(request)
        builder = ScheduleBuilder(request, self.name, runs.m * runs.count, explicit=explicit)
        self._intra(builder, runs, gather=False)
        if runs.count > 1:
            for shards in self.rounds(request):
                pattern = self._inter_pattern(request, runs, shards)
                self._inter(builder, runs, shards, pattern)
        self._intra(builder, runs, gather=True)
        return builder

    def _intra(self, builder: ScheduleBuilder, runs: Runs, gather: bool) -> None:
        """Ring reduce-scatter (or all-gather) inside every run, in lockstep across runs.

        Member i of a run of s sends, at step t, the block of shards j with j % s == (i - t - 1)
        mod s (reduce-scatter; i - t for the all-gather). In full runs a block is one shard, so
        the steps repeat one pattern; a shorter last run sends blocks of unequal sizes and
        stops early, so then every step is listed with its own weights (same circuits).
        """
        sizes = runs.size(np.arange(runs.count))
        kind = "all-gather" if gather else "reduce-scatter"
        fraction = builder.payload / runs.m
        circuit = ("hring-intra", runs.n, runs.m)
        uneven = bool(np.any((sizes > 1) & (sizes < runs.m)))
        spans = [range(t, t + 1) for t in range(runs.m - 1)] if uneven else [range(runs.m - 1)]
        for times in spans:
            members = np.flatnonzero(runs.size(np.arange(runs.n) // runs.m) - 1 > times.start)
            if members.size == 0 or len(times) == 0:
                continue
            size = runs.size(members // runs.m)
            successor = (members // runs.m) * runs.m + (members % runs.m + 1) % size
            block = (members % runs.m - times.start - (0 if gather else 1)) % size
            weight = (runs.m - 1 - block) // size + 1  # shards j < m with j % s == block
            reductions = () if gather else (Reduction(2, fraction * int(weight.max())),)
            pattern = Pairs(runs.n, members, successor, weight.astype(np.float64),
                            key=("hring-intra", runs.n, runs.m, kind, times.start, len(times)))
            step = CompactStep(pattern, fraction, len(times), reductions=reductions, circuit=circuit,
                               label=f"intra-run {kind} {times.start}-{times.stop - 1}")
            builder.add(step, lambda step=step, members=members, successor=successor, times=times:
                        self._intra_rows(builder, runs, step, members, successor, times, gather))

    def _intra_rows(self, builder: ScheduleBuilder, runs: Runs, step: CompactStep, members: np.ndarray,
                    successor: np.ndarray, times: range, gather: bool) -> Iterator[ExplicitStep]:
        local = members % runs.m
        size = runs.size(members // runs.m)
        shard = np.arange(runs.m)
        pieces = np.arange(runs.count)
        for t in times:
            block = (local - t - (0 if gather else 1)) % size
            src, dst, slots = [], [], []
            for member, target, which, s in zip(members, successor, block, size):
                chunks = (shard[shard % s == which][:, None] * runs.count + pieces[None, :]).ravel()
                src.append(np.full(chunks.size, member))
                dst.append(np.full(chunks.size, target))
                slots.append(chunks)
            slot = np.concatenate(slots)
            yield builder.rows(np.concatenate(src), np.concatenate(dst), slot, slot, not gather, step)

    def _inter(self, builder: ScheduleBuilder, runs: Runs, shards: range, pattern: Pairs) -> None:
        """Ring all-reduce of every shard in `shards` among its owners, one per run."""
        g = runs.count
        fraction = builder.payload / (runs.m * g)
        run = np.arange(runs.count)
        owned = np.bincount(np.concatenate([runs.owner(j, run) for j in shards]), minlength=runs.n)
        reduce_step = CompactStep(pattern, fraction, g - 1, reductions=(Reduction(2, fraction * int(owned.max())),),
                                  label=f"inter-run reduce-scatter shards {shards.start}-{shards.stop - 1}")
        gather_step = CompactStep(pattern, fraction, g - 1,
                                  label=f"inter-run all-gather shards {shards.start}-{shards.stop - 1}")
        for step, gather in ((reduce_step, False), (gather_step, True)):
            builder.add(step, lambda step=step, gather=gather: self._inter_rows(builder, runs, shards, step, gather))

    def _inter_rows(self, builder: ScheduleBuilder, runs: Runs, shards: range, step: CompactStep,
                    gather: bool) -> Iterator[ExplicitStep]:
        g = runs.count
        run = np.arange(g)
        src = np.concatenate([runs.owner(j, run) for j in shards])
        dst = np.concatenate([runs.owner(j, (run + 1) % g) for j in shards])
        shard = np.repeat(np.asarray(shards), g)
        ring = np.tile(run, len(shards))
        for t in range(g - 1):
            piece = (ring - t - (0 if gather else 1)) % g
            slot = shard * g + piece
            yield builder.rows(src, dst, slot, slot, not gather, step)

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()
