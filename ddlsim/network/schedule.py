"""Schedules: what a collective algorithm says happens, step by step, in one group. Never times.

Every byte count is a fraction of the call's ``size_bytes`` (the nccl-tests buffer size), so one
schedule serves every message size. Two views describe the same steps:

- the compact view (`Schedule` of `CompactStep`): a pattern, the bytes one unit of its weight
  carries, a repeat count, an optional window of active pattern classes per repetition, and
  the local work (x-to-1 reductions, copies) of the busiest rank. A ring all-reduce on 65,536
  ranks is two compact steps repeated 65,535 times.
- the explicit view (`ExplicitSchedule` of `ExplicitStep`): every chunk moved, from which slot
  of which position to which slot of which position, added or copied. It is executed on arrays
  to verify an algorithm and priced step by step to check the compact view.

Steps run in lockstep: a step's transfers all read the state before the step; receives then
apply (copies overwrite, reductions add); the next step starts when the slowest transfer ends.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveOp
from ddlsim.network.patterns import Pattern


@dataclass(frozen=True)
class Reduction:
    """An x-to-1 reduction: `fan_in` inputs of `fraction` x size_bytes each, into one output."""

    fan_in: int
    fraction: float

    def __post_init__(self) -> None:
        if not (isinstance(self.fan_in, (int, np.integer)) and self.fan_in >= 2):
            raise ConfigError("reduction.fan_in", self.fan_in, "must be an integer >= 2")
        if not (np.isfinite(self.fraction) and self.fraction >= 0):
            raise ConfigError("reduction.fraction", self.fraction, "must be finite and >= 0")
        object.__setattr__(self, "fan_in", int(self.fan_in))
        object.__setattr__(self, "fraction", float(self.fraction))


def merge_reductions(reductions: list[Reduction] | tuple[Reduction, ...]) -> tuple[Reduction, ...]:
    """Reductions of equal fan-in summed, sorted by fan-in (their cost is linear in bytes)."""
    total: dict[int, float] = {}
    for reduction in reductions:
        total[reduction.fan_in] = total.get(reduction.fan_in, 0.0) + reduction.fraction
    return tuple(Reduction(fan_in, fraction) for fan_in, fraction in sorted(total.items()) if fraction > 0)


@dataclass(frozen=True, eq=False)
class CompactStep:
    """One pattern, priced once, run `repeat` times.

    `fraction` is the bytes per unit of pattern weight, divided by size_bytes: a number, or one
    number per repetition. `windows` (two integer arrays, one entry per repetition) activates
    only the pattern classes in [low, high] in each repetition. `reductions` and
    `copy_fraction` are the local work of the busiest rank after each repetition. A step with
    no pattern is local work only and does not count as a communication step. Consecutive
    steps with the same `circuit` reuse the same circuits (no optical reconfiguration).
    """

    pattern: Pattern | None
    fraction: float | np.ndarray = 0.0
    repeat: int = 1
    windows: tuple[np.ndarray, np.ndarray] | None = None
    reductions: tuple[Reduction, ...] = ()
    copy_fraction: float = 0.0
    label: str = ""
    circuit: Hashable = None
    annotations: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (isinstance(self.repeat, (int, np.integer)) and self.repeat >= 1):
            raise ConfigError("step.repeat", self.repeat, "must be an integer >= 1")
        object.__setattr__(self, "repeat", int(self.repeat))
        fraction = np.asarray(self.fraction, dtype=np.float64)
        if fraction.ndim == 1 and fraction.size != self.repeat:
            raise ConfigError("step.fraction", fraction.size, f"needs one value per repetition ({self.repeat})")
        if fraction.ndim > 1 or not np.all(np.isfinite(fraction)) or np.any(fraction < 0):
            raise ConfigError("step.fraction", self.fraction, "must be finite, >= 0, a number or one per repetition")
        object.__setattr__(self, "fraction", float(fraction) if fraction.ndim == 0 else fraction)
        object.__setattr__(self, "reductions", merge_reductions(tuple(self.reductions)))
        if self.windows is not None:
            self._check_windows()
        if self.circuit is None and self.pattern is not None:
            object.__setattr__(self, "circuit", self.pattern.circuit_key)
        object.__setattr__(self, "annotations", dict(self.annotations))

    def _check_windows(self) -> None:
        if self.pattern is None or self.pattern.num_classes == 0:
            raise ConfigError("step.windows", "given", "needs a pattern with classes")
        low, high = (np.ascontiguousarray(np.broadcast_to(np.asarray(bound, dtype=np.int64), (self.repeat,)))
                     for bound in self.windows)
        if np.any(low > high) or low.min() < 0 or high.max() >= self.pattern.num_classes:
            raise ConfigError("step.windows", (int(low.min()), int(high.max())),
                              f"need 0 <= low <= high < {self.pattern.num_classes} in every repetition")
        object.__setattr__(self, "windows", (low, high))

    @property
    def is_communication(self) -> bool:
        return self.pattern is not None

    def fractions(self) -> np.ndarray:
        """The per-repetition bytes per weight unit, divided by size_bytes."""
        return np.broadcast_to(np.asarray(self.fraction, dtype=np.float64), (self.repeat,))


@dataclass(frozen=True, eq=False)
class Schedule:
    """The compact view of one collective in one group."""

    op: CollectiveOp
    group_size: int
    algorithm: str
    steps: tuple[CompactStep, ...]
    root: int = 0
    num_chunks: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", CollectiveOp(self.op))
        object.__setattr__(self, "steps", tuple(self.steps))

    @property
    def num_steps(self) -> int:
        """Communication steps, repetitions included (local-only steps do not count)."""
        return sum(step.repeat for step in self.steps if step.is_communication)


@dataclass(frozen=True, eq=False)
class ExplicitStep:
    """Every chunk moved in one step: row i moves chunk slot src_slot[i] of position src[i] into
    slot dst_slot[i] of position dst[i], adding it when reduce[i] is true, copying otherwise.

    `local_perm`, when given, is applied after the receives: position p's new slot s takes the
    value of its old slot local_perm[p, s] (a local reshape, charged as a copy of the moved slots).
    """

    src: np.ndarray
    dst: np.ndarray
    src_slot: np.ndarray
    dst_slot: np.ndarray
    reduce: np.ndarray
    multicast: bool = False
    circuit: Hashable = None
    label: str = ""
    local_perm: np.ndarray | None = None

    def __post_init__(self) -> None:
        arrays = [np.ascontiguousarray(getattr(self, name), dtype=np.int64)
                  for name in ("src", "dst", "src_slot", "dst_slot")]
        reduce = np.broadcast_to(np.asarray(self.reduce, dtype=bool), arrays[0].shape).copy()
        if any(array.shape != arrays[0].shape for array in arrays) or arrays[0].ndim != 1:
            raise ConfigError("explicit_step", [array.shape for array in arrays], "rows must be 1-D and aligned")
        for name, array in zip(("src", "dst", "src_slot", "dst_slot"), arrays):
            object.__setattr__(self, name, array)
        object.__setattr__(self, "reduce", reduce)

    @property
    def is_communication(self) -> bool:
        return self.src.size > 0


@dataclass(frozen=True, eq=False)
class ExplicitSchedule:
    """The explicit view of one collective in one group: `num_slots` slots of
    ``chunk_fraction x size_bytes`` bytes per position; slots [0, num_chunks) hold the op's
    buffer (input and output), the rest are scratch."""

    op: CollectiveOp
    group_size: int
    algorithm: str
    steps: tuple[ExplicitStep, ...]
    num_chunks: int
    chunk_fraction: float
    root: int = 0
    num_slots: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", CollectiveOp(self.op))
        object.__setattr__(self, "steps", tuple(self.steps))
        if self.num_slots < self.num_chunks:
            object.__setattr__(self, "num_slots", self.num_chunks)

    @property
    def num_steps(self) -> int:
        return sum(1 for step in self.steps if step.is_communication)
