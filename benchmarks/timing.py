"""Timing shared by the benchmarks: wall clock, or CPU time with ``clock=time.process_time`` (run them as
scripts: `python benchmarks/<name>.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(run: Callable[[], object], repeats: int, clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds of `clock` of each of `repeats` calls of `run`."""
    times = []
    for _ in range(repeats):
        start = clock()
        run()
        times.append(clock() - start)
    return times
