"""WRHT: wavelength-reused hierarchical tree all-reduce on a WDM ring (WRHT Section 4).

Reduce stage: the ring's positions are cut into groups of m consecutive members; every member
sends its whole buffer to the group's middle member (the representative), which adds them up.
The representatives are grouped again, m at a time, until few enough remain: the last reduce
step is an all-to-all among those m* representatives when the wavelengths allow it
(ceil(m*^2 / 8) <= w), so that each of them ends with the total; otherwise they gather into one
last representative. Broadcast stage: the same groups in reverse, each representative copying
the result to its members. Every transfer carries the full buffer d, so the step count
2*ceil(log_m N) (or one less with the all-to-all) decides the time (Eq. 6).

This module holds the paper's logic as pure functions (grouping, representatives, step counts,
wavelength needs, Lemma 1); the schedule the estimator prices is built from `wrht_plan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

import numpy as np

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.optical_ring.budget import max_communication_length, num_levels
from ddlsim.network.fabrics.optical_ring.fabric import OpticalRing
from ddlsim.network.fabrics.optical_ring.params import OpticalRingConfig
from ddlsim.network.patterns import Pairs, content_key
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule


def last_stage_size(num_ranks: int, group_size: int) -> int:
    """m* = ceil(N / m**(L-1)): representatives left for the last reduce step."""
    levels = num_levels(num_ranks, group_size)
    if levels == 0:
        return 1
    return -(-num_ranks // group_size ** (levels - 1))


def group_wavelengths(group_size: int) -> int:
    """Section 4.1.2's wavelength need of one group step, ceil(m/2).

    Routed on the two directions of the ring, the middle representative hears floor(m/2)
    members from one side and the rest from the other, so first fit needs floor(m/2) per
    direction (Table 1's m = 129 with w = 64 relies on that); ceil(m/2) is one more for odd m.
    """
    return -(-group_size // 2)


def routed_group_wavelengths(group_size: int) -> int:
    """Wavelengths per direction that a group of m really needs: the larger side, floor(m/2)."""
    return group_size // 2


def all_to_all_wavelengths(num_members: int) -> int:
    """ceil(m*^2 / 8): wavelengths for an all-to-all among m* ring members (0 when m* = 1)."""
    return 0 if num_members <= 1 else -(-num_members * num_members // 8)


def uses_all_to_all(num_ranks: int, group_size: int, wavelengths: int) -> bool:
    """True when the last reduce step is the all-to-all among the m* representatives."""
    m_star = last_stage_size(num_ranks, group_size)
    return m_star > 1 and all_to_all_wavelengths(m_star) <= wavelengths


def num_steps(num_ranks: int, group_size: int, wavelengths: int) -> int:
    """2*ceil(log_m N), or one less when the last reduce step is the all-to-all."""
    levels = num_levels(num_ranks, group_size)
    if levels == 0:
        return 0
    return 2 * levels - (1 if uses_all_to_all(num_ranks, group_size, wavelengths) else 0)


def lemma1_group_size(wavelengths: int) -> int:
    """Lemma 1: w wavelengths per direction serve at most m = 2w + 1 members per group."""
    return 2 * wavelengths + 1


def lemma1_min_steps(num_ranks: int, wavelengths: int) -> int:
    """Lemma 1's lower bound on WRHT's steps, 2*ceil(log_(2w+1) N)."""
    return 2 * num_levels(num_ranks, lemma1_group_size(wavelengths))


def communication_time_s(size_bytes: float, bandwidth_bps: float, step_latency_s: float, steps: int) -> float:
    """Eq. 6: T = theta * d / B + theta * a."""
    return steps * (size_bytes * 8 / bandwidth_bps + step_latency_s)


def best_group_size(num_ranks: int, wavelengths: int, admissible=None) -> int:
    """The largest m <= min(2w+1, N) (fewest steps) for which `admissible(m)` holds, at least 2.

    Steps never grow with m, so the largest admissible group size is the best one.
    """
    largest = max(2, min(lemma1_group_size(wavelengths), num_ranks))
    for group_size in range(largest, 1, -1):
        if admissible is None or admissible(group_size):
            return group_size
    raise ConfigError("m", largest, f"no WRHT group size in [2, {largest}] is admissible on {num_ranks} ranks")


class StageKind(StrEnum):
    GATHER = "gather"          # members send to their representative, which reduces
    ALL_TO_ALL = "all_to_all"  # every member sends to every other; each reduces all
    BROADCAST = "broadcast"    # the representative copies its buffer to its members


@dataclass(frozen=True)
class Stage:
    """One WRHT step: `members` (sorted positions) in groups; `reps[g]` leads group g."""

    kind: StageKind
    members: np.ndarray
    group_of: np.ndarray
    reps: np.ndarray

    def transfers(self) -> tuple[np.ndarray, np.ndarray]:
        """(src, dst) position arrays of every transfer of this step, in a fixed order."""
        if self.kind is StageKind.ALL_TO_ALL:
            src, dst = np.meshgrid(self.members, self.members, indexing="ij")
            keep = src != dst
            return src[keep], dst[keep]
        leader = self.reps[self.group_of]
        others = self.members != leader
        if self.kind is StageKind.GATHER:
            return self.members[others], leader[others]
        return leader[others], self.members[others]


def group_consecutive(active: np.ndarray, group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut sorted `active` positions into runs of m; (group index per member, rep per group).

    The representative is the middle member, index (size - 1) // 2 inside its group.
    """
    count = active.size
    group_of = np.arange(count) // group_size
    starts = np.arange(0, count, group_size)
    sizes = np.minimum(group_size, count - starts)
    reps = active[starts + (sizes - 1) // 2]
    return group_of, reps


def wrht_plan(num_ranks: int, group_size: int, wavelengths: int, *, all_to_all: bool | None = None) -> list[Stage]:
    """Every step of WRHT's all-reduce on positions 0..N-1, reduce stage then broadcast stage.

    `all_to_all` forces the choice of the last reduce step (None: the paper's rule).
    """
    levels = num_levels(num_ranks, group_size)
    if levels == 0:
        return []
    if all_to_all is None:
        all_to_all = uses_all_to_all(num_ranks, group_size, wavelengths)
    all_to_all = all_to_all and last_stage_size(num_ranks, group_size) > 1
    active = np.arange(num_ranks)
    reduce: list[Stage] = []
    for level in range(levels):
        if level == levels - 1 and all_to_all:
            reduce.append(Stage(StageKind.ALL_TO_ALL, active, np.zeros(active.size, dtype=np.int64), active.copy()))
            break
        group_of, reps = group_consecutive(active, group_size)
        reduce.append(Stage(StageKind.GATHER, active, group_of, reps))
        active = reps
    gathers = [stage for stage in reduce if stage.kind is StageKind.GATHER]
    broadcast = [Stage(StageKind.BROADCAST, s.members, s.group_of, s.reps) for s in reversed(gathers)]
    return reduce + broadcast


def check_group_size(group_size: int) -> None:
    if not isinstance(group_size, int) or group_size < 0 or group_size == 1:
        raise ConfigError("m", group_size, "must be 0 (choose automatically) or an integer >= 2")


def binary_tree_steps(num_ranks: int) -> int:
    """Table 1's binary-tree all-reduce: ceil(log2 N) reduce steps plus as many broadcast steps."""
    return 2 * num_levels(num_ranks, 2)


def ring_steps(num_ranks: int) -> int:
    """Table 1's ring all-reduce: 2(N - 1)."""
    return 2 * (num_ranks - 1)


def hring_steps(num_ranks: int, group_size: int, wavelengths: int) -> int:
    """Table 1's H-Ring: 2(m^2 + N)/m - 3 if ceil(m/w) = 1, else 2(2m^2 + N)/m - 6, rounded up."""
    if math.ceil(group_size / wavelengths) == 1:
        value = 2 * (group_size**2 + num_ranks) / group_size - 3
    else:
        value = 2 * (2 * group_size**2 + num_ranks) / group_size - 6
    return math.ceil(value)


# -- the registered algorithm -------------------------------------------------------------------

GROUP_RULES = ("best", "lemma1")


@dataclass
class WrhtConfig:
    name: str = "wrht"
    m: int = 0  # group size; 0: chosen by group_rule
    # best: the fastest m that Lemma 1 (2w + 1) and the optical budget allow; lemma1: m = 2w + 1
    # (capped at the group size), as WRHT's Figs. 5 and 6 take it
    group_rule: str = "best"


@ALGORITHMS.register("wrht", WrhtConfig)
@dataclass(frozen=True)
class Wrht(CollectiveAlgorithm):
    """WRHT all-reduce on the WDM optical ring: hierarchical groups of m, all-to-all last stage."""

    m: int = 0
    name: str = "wrht"
    group_rule: str = "best"
    ops: ClassVar[frozenset[CollectiveOp]] = frozenset({CollectiveOp.ALL_REDUCE})

    @classmethod
    def from_config(cls, config: WrhtConfig) -> Wrht:
        check_group_size(config.m)
        if config.group_rule not in GROUP_RULES:
            raise ConfigError("group_rule", config.group_rule, f"must be one of {', '.join(GROUP_RULES)}")
        return cls(config.m, config.name, config.group_rule)

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is None and not isinstance(fabric, OpticalRing):
            return "WRHT is co-designed with the WDM optical ring (fabric=optical_ring)"
        return reason

    def group_size(self, request: ScheduleRequest) -> int:
        """m for this request: the configured one (checked against the optical budget) or the best."""
        fabric, n = request.fabric, request.group_size
        assert isinstance(fabric, OpticalRing)
        m = self.m or (min(lemma1_group_size(fabric.wavelengths), n) if self.group_rule == "lemma1" else 0)
        if m:
            if not fabric.group_size_ok(n, m):
                raise InfeasibleError(
                    f"WRHT group size m = {m} on {n} ranks fails the optical budget of {fabric.name} "
                    f"(Eqs. 7-13: lightpaths pass {max_communication_length(n, m)} interfaces); "
                    f"m' = {_max_group_size_text(fabric, n)}")
            return m
        return best_group_size(n, fabric.wavelengths,
                               lambda m: fabric.group_size_ok(n, m) and self._gathers_fit(request, m))

    def _gathers_fit(self, request: ScheduleRequest, group_size: int) -> bool:
        """True when every group step fits the fabric (broadcasts reuse the gathers' segments)."""
        stages = wrht_plan(request.group_size, group_size, request.fabric.wavelengths, all_to_all=False)
        return all(request.fabric.fits(self._pattern(request, stage, group_size), request.layout, request.placement)
                   for stage in stages if stage.kind is StageKind.GATHER)

    def plan(self, request: ScheduleRequest, group_size: int = 0) -> list[Stage]:
        """WRHT's stages for this request; the all-to-all last stage only where the fabric carries it."""
        fabric, n = request.fabric, request.group_size
        group_size = group_size or self.group_size(request)
        stages = wrht_plan(n, group_size, fabric.wavelengths)
        for stage in stages:
            pattern = self._pattern(request, stage, group_size)
            if stage.kind is StageKind.ALL_TO_ALL and not fabric.fits(pattern, request.layout, request.placement):
                return wrht_plan(n, group_size, fabric.wavelengths, all_to_all=False)
        return stages

    def _pattern(self, request: ScheduleRequest, stage: Stage, group_size: int) -> Pairs:
        src, dst = stage.transfers()
        key = ("wrht", group_size, stage.kind.value, stage.members.size, content_key(stage.members))
        return Pairs(request.group_size, src, dst, key=key)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        builder = ScheduleBuilder(request, self.name, 1, explicit=explicit)
        group_size = self.group_size(request)
        for level, stage in enumerate(self.plan(request, group_size)):
            pattern = self._pattern(request, stage, group_size)
            reductions: tuple[Reduction, ...] = ()
            if stage.kind is not StageKind.BROADCAST:
                largest_group = int(np.bincount(stage.group_of).max())
                fan_in = stage.members.size if stage.kind is StageKind.ALL_TO_ALL else largest_group
                reductions = (Reduction(fan_in, builder.payload),) if fan_in > 1 else ()
            step = CompactStep(pattern, builder.payload, reductions=reductions, label=f"{stage.kind.value} {level}")

            def rows(step=step, pattern=pattern, kind=stage.kind):
                zeros = np.zeros(pattern.src.size, dtype=np.int64)
                yield builder.rows(pattern.src, pattern.dst, zeros, zeros, kind is not StageKind.BROADCAST, step)

            builder.add(step, rows)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()

    def verification_fabric(self, group_size: int) -> Fabric:
        # Two wavelengths give groups of 5 and several levels from 6 ranks up.
        return OpticalRing.from_config(OpticalRingConfig(num_nodes=max(group_size, 1), wavelengths=2,
                                                         optical_constraints=False))


def _max_group_size_text(fabric: OpticalRing, num_ranks: int) -> str:
    try:
        return str(fabric.max_group_size(num_ranks))
    except InfeasibleError:
        return "none"
