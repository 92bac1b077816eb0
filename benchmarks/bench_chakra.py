"""CPU time of `model=chakra` on ddlsim's own 16-rank Chakra export, warm in process and in a new process.

    python benchmarks/bench_chakra.py [--repeats 9] [--trace DIR] [--no-process]

The trace is issue 34's: a GPT of 8 layers with TP 2 x DP 2 x PP 4 (16 ranks) and 16 micro-batches
per replica (global batch 32, micro-batch 1), written by ``training.chakra=true`` into a temporary
directory (or read from ``--trace``). A `ddlsim.Session` on ``model=chakra model.trace=<dir>``
runs it once (the first run: reading the 16 files, pricing every collective), then ``--repeats``
more times: the warm time. Unless ``--no-process``, a new ``ddlsim model=chakra`` process on the
same trace is timed too (its CPU time from the operating system: imports, composition, the run).

Times are CPU time (`time.process_time`) medians and 90th percentiles, with wall time and the load
average beside them. Target (issue 34): 0.05 s CPU warm in process.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import load_average, percentile, timed_cpu_and_wall  # noqa: E402

EXPORT = ["model=gpt", "model.layers=8", "model.global_batch=32", "parallel.tensor=2", "parallel.data=2",
          "parallel.pipeline=4", "training.chakra=true"]
TARGET_WARM_S = 0.05


def export_trace(directory: Path) -> Path:
    """Write the 16-rank export into `directory`/chakra (the run writes where the process runs)."""
    import ddlsim

    here = Path.cwd()
    os.chdir(directory)
    try:
        ddlsim.run(EXPORT)
    finally:
        os.chdir(here)
    return directory / "chakra"


def child_cpu_s(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process running `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="warm runs")
    parser.add_argument("--trace", type=Path, help="an existing export (default: write one)")
    parser.add_argument("--no-process", action="store_true", help="skip the new-process timing")
    args = parser.parse_args()
    print(load_average())
    import ddlsim

    with tempfile.TemporaryDirectory() as scratch:
        trace = args.trace or export_trace(Path(scratch))
        files = sorted(trace.glob("*.et"))
        print(f"trace: {len(files)} rank files in {trace}")
        session = ddlsim.Session(["model=chakra", f"model.trace={trace}"])
        (first_cpu, first_wall), = timed_cpu_and_wall(lambda: session.run([]), 1)
        times = timed_cpu_and_wall(lambda: session.run([]), args.repeats)
        row = session.run([]).rows[0]
        cpu = [value for value, _ in times]
        wall = [value for _, value in times]
        print(f"iteration time {row['iteration_time_s'] * 1e3:.3f} ms on {row.get('fabric', 'the default fabric')}")
        print(f"first run in the session: CPU {first_cpu:.3f} s (wall {first_wall:.3f} s)")
        print(f"warm, {len(cpu)} runs: CPU median {statistics.median(cpu):.4f} s, p90 {percentile(cpu, 0.9):.4f} s "
              f"(wall median {statistics.median(wall):.4f} s); target {TARGET_WARM_S} s: "
              f"{'met' if statistics.median(cpu) <= TARGET_WARM_S else 'missed'}")
        if not args.no_process:
            command = [sys.executable, "-m", "ddlsim.app.cli", "model=chakra", f"model.trace={trace}",
                       f"hydra.run.dir={Path(scratch) / 'run'}"]
            process_cpu, process_wall = child_cpu_s(command)
            print(f"new process (`ddlsim model=chakra`): CPU {process_cpu:.2f} s (wall {process_wall:.2f} s)")
    print(load_average())


if __name__ == "__main__":
    main()
