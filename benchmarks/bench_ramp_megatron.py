"""CPU and wall time of the full ramp_megatron sweep (RAMP Fig. 16: ten target losses x five fabrics).

    python benchmarks/bench_ramp_megatron.py [--repeats 5] [--cli] [--cli-repeats 1]

Compute comes from the shipped profiles and the roofline (nothing is profiled); every job
builds its workload, prices every collective on its fabric and places the iteration. The
sweep runs in this process as `ddlsim.app.sweep.inprocess.run_sweep` does (each fabric's config
composed once, each group's object reused while its config is unchanged). Prints the median
over `--repeats` runs after one warm-up run, and the first run's time, which includes importing
torch and the rooms. `--cli` also times `ddlsim experiment=ramp_megatron` as a subprocess, `--cli-repeats`
times (the median is printed, and each run's CPU time) (basic launcher, report included; the sweeper
composes once per fabric, `ddlsim.app.sweep.compose`)
and prints its CPU time (user + system, as ``/usr/bin/time`` reports them), its wall time and
peak resident memory (the largest child's maximum RSS). Times are CPU time (`time.process_time`
in this process, the children's user + system for the command) with wall time beside; the load
average is the first and the last line. Targets: the command in 5 s of CPU or less (issue 22),
peak RSS 1 GB or less (issue 15), on 2 cores.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import load_average

OVERRIDES = ["experiment=ramp_megatron"]


def _time_cli() -> tuple[float, float] | None:
    """CPU (user + system of the child) and wall seconds of one ``ddlsim`` run into a scratch directory."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "ddlsim.app.cli", *OVERRIDES, f"hydra.sweep.dir={Path(scratch) / 'sweep'}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=scratch)
        wall_s = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        print(result.stderr, file=sys.stderr)
        return None
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="also time the ddlsim command")
    parser.add_argument("--cli-repeats", type=int, default=1, help="times to run the command (median printed)")
    args = parser.parse_args()
    print(load_average())

    started_cpu, started = time.process_time(), time.perf_counter()
    from ddlsim.app.sweep.inprocess import run_sweep

    frame = run_sweep(OVERRIDES)
    first_cpu_s, first_s = time.process_time() - started_cpu, time.perf_counter() - started

    cpu_times, times = [], []
    for _ in range(args.repeats):
        started_cpu, started = time.process_time(), time.perf_counter()
        again = run_sweep(OVERRIDES)
        cpu_times.append(time.process_time() - started_cpu)
        times.append(time.perf_counter() - started)
        assert again.equals(frame), "the sweep is not deterministic"
    ok = int((frame["status"] == "ok").sum())
    print(f"ramp_megatron sweep: {frame['job'].nunique()} jobs ({ok} feasible), "
          f"{frame['fabric'].nunique()} fabrics x {frame['model_target_loss'].nunique()} target losses")
    print(f"first run (with imports): {first_cpu_s:.2f} s CPU, {first_s:.2f} s wall")
    if cpu_times:  # --repeats 0: the first run only
        print(f"median of {args.repeats} runs: CPU {statistics.median(cpu_times):.2f} s (min {min(cpu_times):.2f} s, "
              f"max {max(cpu_times):.2f} s); wall {statistics.median(times):.2f} s "
              f"(min {min(times):.2f} s, max {max(times):.2f} s)")
    if args.cli:
        cli_runs = [_time_cli() for _ in range(args.cli_repeats)]
        if any(run is None for run in cli_runs):
            return 1
        cpu_s = statistics.median(run[0] for run in cli_runs)
        cli_s = statistics.median(run[1] for run in cli_runs)
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"ddlsim {' '.join(OVERRIDES)} (subprocess, report and plots included; median of {len(cli_runs)}): "
              f"{cpu_s:.2f} s CPU (target 5 s; runs: {', '.join(f'{run[0]:.2f}' for run in cli_runs)}), "
              f"{cli_s:.2f} s wall, peak RSS {peak_mb:.0f} MB (target 1024 MB)")
    print(load_average())
    return 0


if __name__ == "__main__":
    sys.exit(main())
