#!/usr/bin/env python
"""Time to price one collective on TopoOpt at 65,536 ranks (the RAMP Sec. 7.5 configuration).

For each (fabric variant, algorithm, op) it prints the median CPU time (`time.process_time`) of
pricing one 1 GB collective with cold caches, with the median wall time beside it (a new
estimator each run; the shard's topology is built once per fabric, as in any real run, and
reported separately), and the peak Python heap of the whole run. Times are CPU time with wall
time beside; the load average is the first and the last line. The core's target is 10 ms or
less per collective.

    python benchmarks/bench_topoopt.py              # topoopt_ramp (d = 1) and d = 8 x 200 Gbps
    python benchmarks/bench_topoopt.py --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from timing import load_average

from ddlsim.core.errors import InfeasibleError
from ddlsim.network import CollectiveEstimator, clear_caches, make_fabric

RANKS = 65536
ALGORITHMS = ("ring", "topoopt_ring", "hierarchical", "rhd", "direct")
OPS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce")


def variants() -> dict[str, object]:
    return {"topoopt_ramp (d=1, 1.6 Tbps)": make_fabric("topoopt_ramp"),
            "topoopt d=8 x 200 Gbps": make_fabric("topoopt_ramp", degree=8, link_bandwidth="200Gbps")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args(argv)
    ranks = 64 if args.tiny else RANKS
    if args.tiny:
        args.repeats = 1
    print(load_average())
    tracemalloc.start()
    print(f"{'fabric':30} {'algorithm':14} {'op':15} {'cpu ms':>10} {'median ms':>10} {'time_s':>12}")
    for label, fabric in variants().items():
        started_cpu, started = time.process_time(), time.perf_counter()
        fabric.shard(ranks)
        print(f"{label:30} {'(shard build)':14} {'':15} {1e3 * (time.process_time() - started_cpu):10.1f} "
              f"{1e3 * (time.perf_counter() - started):10.1f}")
        for algorithm in ALGORITHMS:
            for op in OPS:
                samples, cpu_samples, result = [], [], None
                try:
                    for _ in range(args.repeats):
                        clear_caches()
                        estimator = CollectiveEstimator(fabric, algorithm)
                        started_cpu, started = time.process_time(), time.perf_counter()
                        result = estimator.estimate(op, 10**9, num_ranks=ranks)
                        samples.append(time.perf_counter() - started)
                        cpu_samples.append(time.process_time() - started_cpu)
                except InfeasibleError as error:
                    print(f"{label:30} {algorithm:14} {op:15} {'-':>10} {'-':>10}  ({str(error)[:60]})")
                    continue
                print(f"{label:30} {algorithm:14} {op:15} {1e3 * statistics.median(cpu_samples):10.1f} "
                      f"{1e3 * statistics.median(samples):10.1f} {result.time_s:12.5g}")
    _, peak = tracemalloc.get_traced_memory()
    print(f"peak traced memory: {peak / 2**20:.0f} MiB")
    print("cpu ms: median CPU time; median ms: median wall time; time_s: the collective's simulated time")
    print(load_average())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
