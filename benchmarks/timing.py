"""Wall-clock timing shared by the benchmarks (run them as scripts: `python benchmarks/<name>.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(run: Callable[[], object], repeats: int) -> list[float]:
    """Seconds of each of `repeats` calls of `run`."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times
