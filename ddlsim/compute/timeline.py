"""From profiler events to per-phase device time: pure functions, no torch.

The profiler marks every phase of every iteration with a named window (host time, in
microseconds). Device activities (GPU kernels, or top-level CPU operators when the CPU is the
device) are attributed to the innermost window that contains their start: the recompute window
sits inside the backward window, so recompute kernels count as recompute, not backward. A phase's
busy time is the union of its activities' intervals, so kernels overlapping on two streams are
not counted twice; its wall time is the window's length less the windows nested in it.
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError

MICROSECOND_S = 1e-6


@dataclass(frozen=True)
class Window:
    """One phase of one iteration, as marked on the host."""

    phase: str
    iteration: int
    start_us: float
    end_us: float

    def __post_init__(self) -> None:
        if not self.end_us >= self.start_us:
            raise ConfigError("window.end_us", self.end_us, f"must be >= start_us = {self.start_us}")

    @property
    def length_us(self) -> float:
        return self.end_us - self.start_us

    def contains(self, time_us: float) -> bool:
        return self.start_us <= time_us < self.end_us


@dataclass(frozen=True)
class Activity:
    """A device kernel (or a top-level CPU operator) and the interval it occupied the device."""

    start_us: float
    end_us: float


@dataclass(frozen=True)
class PhaseSample:
    """What one phase took in one iteration."""

    phase: str
    iteration: int
    busy_s: float
    wall_s: float
    kernels: int


@dataclass(frozen=True)
class PhaseSummary:
    """One phase over all measured iterations: median, minimum, mean and spread of the busy time."""

    phase: str
    time_median_s: float
    time_min_s: float
    time_mean_s: float
    time_std_s: float
    wall_time_s: float
    kernels: int
    iterations: int


def union_length_us(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping intervals."""
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def _innermost(windows: Sequence[Window], starts: Sequence[float], time_us: float) -> int | None:
    # Windows are disjoint except for nesting, so only the last few starting before `time_us`
    # can contain it; the shortest containing one is the innermost.
    best = None
    index = bisect.bisect_right(starts, time_us) - 1
    for candidate in range(index, max(index - 4, -1), -1):
        window = windows[candidate]
        if window.contains(time_us) and (best is None or window.length_us < windows[best].length_us):
            best = candidate
    return best


def attribute(windows: Sequence[Window], activities: Iterable[Activity]) -> list[PhaseSample]:
    """Per (phase, iteration) busy time, wall time and activity count, in window order."""
    ordered = sorted(windows, key=lambda w: (w.start_us, -w.end_us))
    starts = [window.start_us for window in ordered]
    assigned: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for activity in activities:
        index = _innermost(ordered, starts, activity.start_us)
        if index is not None:
            assigned[index].append((activity.start_us, activity.end_us))
    nested_us = [0.0] * len(ordered)
    open_windows: list[int] = []  # a stack of windows enclosing the current one
    for index, window in enumerate(ordered):
        while open_windows and ordered[open_windows[-1]].end_us <= window.start_us:
            open_windows.pop()
        if open_windows and ordered[open_windows[-1]].end_us >= window.end_us:
            nested_us[open_windows[-1]] += window.length_us
        open_windows.append(index)
    return [PhaseSample(phase=window.phase, iteration=window.iteration,
                        busy_s=union_length_us(assigned[index]) * MICROSECOND_S,
                        wall_s=max(window.length_us - nested_us[index], 0.0) * MICROSECOND_S,
                        kernels=len(assigned[index]))
            for index, window in enumerate(ordered)]


def summarise(samples: Iterable[PhaseSample]) -> dict[str, PhaseSummary]:
    """Median, minimum, mean and spread per phase, over the iterations in `samples`."""
    by_phase: dict[str, list[PhaseSample]] = defaultdict(list)
    for sample in samples:
        by_phase[sample.phase].append(sample)
    summaries = {}
    for phase, group in by_phase.items():
        busy = [sample.busy_s for sample in group]
        summaries[phase] = PhaseSummary(
            phase=phase,
            time_median_s=statistics.median(busy),
            time_min_s=min(busy),
            time_mean_s=statistics.fmean(busy),
            time_std_s=statistics.pstdev(busy),
            wall_time_s=statistics.median(sample.wall_s for sample in group),
            kernels=round(statistics.median(sample.kernels for sample in group)),
            iterations=len(group),
        )
    return summaries
