"""Helpers that algorithms share: a builder that grows both schedule views side by side, and
mixed-radix arithmetic for positions and chunks laid out along dimensions.

A phase function adds one compact step and, only when the builder is explicit, the explicit
steps it stands for, so the two views of a phase are written next to each other and the
compact path never lists chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import product

import numpy as np

from ddlsim.network.collectives.base import ScheduleRequest, barrier_fraction
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, ExplicitStep, Schedule


class ScheduleBuilder:
    """Collects compact steps (always) and explicit steps (when `explicit` is true)."""

    def __init__(self, request: ScheduleRequest, algorithm: str, num_chunks: int, *, explicit: bool,
                 num_slots: int | None = None) -> None:
        self.request = request
        self.algorithm = algorithm
        self.num_chunks = num_chunks
        self.num_slots = num_slots or num_chunks
        self.explicit = explicit
        self.payload = barrier_fraction(request.op)
        self.compact_steps: list[CompactStep] = []
        self.explicit_steps: list[ExplicitStep] = []

    @property
    def n(self) -> int:
        return self.request.group_size

    def add(self, step: CompactStep, explicit_steps: Callable[[], Iterable[ExplicitStep]] | None = None) -> None:
        """Add a compact step; `explicit_steps` (called only in explicit mode) lists its steps."""
        self.compact_steps.append(step)
        if self.explicit and explicit_steps is not None:
            self.explicit_steps.extend(explicit_steps())

    def rows(self, src: np.ndarray, dst: np.ndarray, src_slot: np.ndarray, dst_slot: np.ndarray, reduce: bool,
             step: CompactStep, multicast: bool = False) -> ExplicitStep:
        return ExplicitStep(src, dst, src_slot, dst_slot, reduce, multicast=multicast, circuit=step.circuit,
                            label=step.label)

    def schedule(self) -> Schedule:
        return Schedule(self.request.op, self.n, self.algorithm, tuple(self.compact_steps), self.request.root,
                        self.num_chunks)

    def explicit_schedule(self) -> ExplicitSchedule:
        return ExplicitSchedule(self.request.op, self.n, self.algorithm, tuple(self.explicit_steps), self.num_chunks,
                                self.payload / self.num_chunks, self.request.root, self.num_slots)


class Radix:
    """Mixed radix over `dims` (fastest first): index = sum of digit[d] * weight[d]."""

    def __init__(self, dims: Iterable[int]) -> None:
        self.dims = tuple(int(k) for k in dims)
        self.weights = tuple(int(np.prod(self.dims[:d], dtype=np.int64)) for d in range(len(self.dims)))
        self.size = int(np.prod(self.dims, dtype=np.int64))

    def digit(self, index: np.ndarray, d: int) -> np.ndarray:
        return (index // self.weights[d]) % self.dims[d]

    def replace(self, index: np.ndarray, d: int, value: np.ndarray | int) -> np.ndarray:
        return index + (value - self.digit(index, d)) * self.weights[d]

    def kept(self, index: np.ndarray, dims: Iterable[int]) -> np.ndarray:
        """The part of `index` made of the digits in `dims` (the others zeroed)."""
        total = np.zeros_like(index)
        for d in dims:
            total = total + self.digit(index, d) * self.weights[d]
        return total

    def span(self, dims: Iterable[int]) -> int:
        return int(np.prod([self.dims[d] for d in dims], dtype=np.int64))

    def offsets(self, free: Iterable[int]) -> np.ndarray:
        """Every index whose digits outside `free` are zero, in increasing order."""
        free = sorted(set(free))
        values = [0]
        if free:
            values = [sum(digit * self.weights[d] for digit, d in zip(combo, free))
                      for combo in product(*(range(self.dims[d]) for d in free))]
        return np.sort(np.asarray(values, dtype=np.int64))


def expand_rows(senders: np.ndarray, receivers: np.ndarray, chunks: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rows for senders[i] -> receivers[i] moving chunks[i, :] (a 2-D array, one row per sender)."""
    width = chunks.shape[1]
    return np.repeat(senders, width), np.repeat(receivers, width), chunks.ravel()
