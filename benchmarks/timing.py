"""Timing shared by the benchmarks (run them as scripts: `python benchmarks/<name>.py`).

Benchmarks report CPU time (`time.process_time`: this process's user and system time), which a
machine shared with other jobs changes far less than wall time, beside wall time and the load
average (`load_average`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def timed(run: Callable[[], object], repeats: int) -> list[float]:
    """CPU seconds (`time.process_time`) of each of `repeats` calls of `run`."""
    return [cpu for cpu, _ in timed_cpu_and_wall(run, repeats)]


def timed_cpu_and_wall(run: Callable[[], object], repeats: int) -> list[tuple[float, float]]:
    """(CPU seconds, wall seconds) of each of `repeats` calls of `run`."""
    times = []
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        times.append((time.process_time() - cpu, time.perf_counter() - wall))
    return times


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, for a benchmark's first and last line."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f}"


def percentile(values: list[float], fraction: float) -> float:
    """The value at `fraction` (0.9: the 90th percentile) of `values`, by rank: no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
