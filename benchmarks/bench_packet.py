#!/usr/bin/env python
"""CPU and wall time of the OPSquare paper's full load sweep at 1,024 nodes, with the packet models.

The sweep: OPSquare and the H100 leaf-spine, localities 0, 0.33, 0.67 and 1, loads 0.1 to 1.0
(80 points, each 20 us warm-up + 20 us measured, 1,500-byte packets). Prints the CPU time of
the whole sweep (`time.process_time` of each point, summed over the points, whichever process
ran them) with its wall time beside, the median CPU and wall time per point for each network,
the simulated packets per CPU second, and the peak resident memory of the process (of the
largest worker with --jobs > 1). Times are CPU time with wall time beside, because wall time on
a shared machine depends on its load; the load average is the first and the last line.

    python benchmarks/bench_packet.py              # the full 1,024-node sweep, one process
    python benchmarks/bench_packet.py --jobs 4
    python benchmarks/bench_packet.py --loads 0.5 1.0 --localities 0.33   # a subset
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time

from timing import load_average

from ddlsim.network.packet.experiment import FULL_LOADS, FULL_LOCALITIES, LoadSweep, run_sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CPU and wall time of the 1,024-node OPSquare load sweep")
    parser.add_argument("--nodes", type=int, default=1024, choices=(256, 1024))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--loads", type=float, nargs="+", default=list(FULL_LOADS))
    parser.add_argument("--localities", type=float, nargs="+", default=list(FULL_LOCALITIES))
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args(argv)
    if args.tiny:
        args.nodes, args.loads, args.localities = 256, args.loads[:1], args.localities[:1]
    sweep = LoadSweep(scales=(args.nodes,), loads=tuple(args.loads), localities=tuple(args.localities))
    total = len(list(sweep.points()))
    print(load_average())
    print(f"{total} points at {args.nodes} nodes, {args.jobs} process(es), Python {platform.python_version()}, "
          f"{platform.processor() or platform.machine()}", flush=True)

    def progress(done: int, count: int, row: dict) -> None:
        print(f"  [{done}/{count}] {row['network']:9s} locality {row['locality']:.2f} load {row['load']:.1f}: "
              f"{row['cpu_s']:.2f} s CPU, {row['wall_s']:.2f} s wall", flush=True)

    started = time.perf_counter()
    rows = run_sweep(sweep, jobs=args.jobs, progress=progress)
    wall_s = time.perf_counter() - started
    cpu_s = sum(row["cpu_s"] for row in rows)
    print(f"\nfull sweep: {cpu_s:.1f} s CPU, {wall_s:.1f} s wall ({wall_s / 60:.1f} min), for {total} points")
    print(f"load average during the run (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for network in sweep.networks:
        mine = [row for row in rows if row["network"] == network]
        walls = [row["wall_s"] for row in mine]
        cpus = [row["cpu_s"] for row in mine]
        packets = sum(row["packets_generated"] for row in mine) * (sweep.warmup_s + sweep.measure_s) / sweep.measure_s
        print(f"  {network:9s} median {statistics.median(cpus):.2f} s CPU / {statistics.median(walls):.2f} s wall "
              f"per point (CPU min {min(cpus):.2f}, max {max(cpus):.2f}; wall min {min(walls):.2f}, "
              f"max {max(walls):.2f}); "
              f"{packets / sum(cpus) / 1e6:.2f} M simulated packets per CPU second")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak resident memory: {max(own, workers):.0f} MiB")
    print(load_average())
    return 0


if __name__ == "__main__":
    sys.exit(main())
