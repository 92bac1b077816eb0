"""How long pricing an all-reduce on the WDM optical ring takes, per algorithm and ring size.

    python benchmarks/bench_wrht.py                      # 1,024, 4,096 and 65,536 nodes
    python benchmarks/bench_wrht.py --nodes 65536 --algorithms wrht ring

"cold": a fresh CollectiveEstimator and cleared module caches (WRHT's group size chosen, its
plan built, every step routed and given wavelengths by first fit); "warm": the same estimator
asked again with another message size. Medians of --repeats runs; peak memory of one cold
estimate (tracemalloc). Infeasible combinations (too few wavelengths) are listed as such. Times
are CPU time (`time.process_time`, the "cpu" columns) with wall time beside; the load average is
the first and the last line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import load_average

from ddlsim.app.catalog import load_all  # noqa: E402
from ddlsim.core.errors import InfeasibleError  # noqa: E402
from ddlsim.network import CollectiveEstimator, clear_caches, make_fabric  # noqa: E402

ALGORITHMS = ("wrht", "ring", "hring", "binomial_tree", "torus2d", "best")


def measure(fabric, algorithm: str, nodes: int, repeats: int) -> dict:
    cold, warm, cold_cpu, warm_cpu = [], [], [], []
    try:
        for repeat in range(repeats):
            clear_caches()
            estimator = CollectiveEstimator(fabric, algorithm, device=None)
            start, start_cpu = time.perf_counter(), time.process_time()
            result = estimator.estimate("all_reduce", 10**8, num_ranks=nodes)
            cold.append(time.perf_counter() - start)
            cold_cpu.append(time.process_time() - start_cpu)
            start, start_cpu = time.perf_counter(), time.process_time()
            estimator.estimate("all_reduce", 10**8 + 1 + repeat, num_ranks=nodes)
            warm.append(time.perf_counter() - start)
            warm_cpu.append(time.process_time() - start_cpu)
    except InfeasibleError as error:
        return {"skipped": str(error)}
    clear_caches()
    tracemalloc.start()
    CollectiveEstimator(fabric, algorithm, device=None).estimate("all_reduce", 10**8, num_ranks=nodes)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"chosen": result.algorithm, "steps": result.num_steps, "cold_s": statistics.median(cold),
            "warm_s": statistics.median(warm), "cold_cpu_s": statistics.median(cold_cpu),
            "warm_cpu_s": statistics.median(warm_cpu), "peak_bytes": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[1024, 4096, 65536])
    parser.add_argument("--algorithms", nargs="*", default=list(ALGORITHMS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        args.nodes, args.algorithms, args.repeats = [64], ["ring", "best"], 1
    print(load_average())
    load_all()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"all_reduce of 100 MB on optical_ring (64 wavelengths, optical budget off); median of {args.repeats}; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    print(f"{'nodes':>6}  {'algorithm':<14} {'chosen':<14} {'steps':>7} {'cold cpu ms':>11} {'cold ms':>9} "
          f"{'warm cpu ms':>11} {'warm ms':>9} {'peak MB':>8}")
    for nodes in args.nodes:
        fabric = make_fabric("optical_ring", num_nodes=nodes, optical_constraints=False)
        for algorithm in args.algorithms:
            row = measure(fabric, algorithm, nodes, args.repeats)
            if "skipped" in row:
                print(f"{nodes:>6}  {algorithm:<14} infeasible: {row['skipped'][:90]}")
                continue
            print(f"{nodes:>6}  {algorithm:<14} {row['chosen']:<14} {row['steps']:>7} "
                  f"{row['cold_cpu_s'] * 1e3:>11.2f} {row['cold_s'] * 1e3:>9.2f} {row['warm_cpu_s'] * 1e3:>11.3f} "
                  f"{row['warm_s'] * 1e3:>9.3f} {row['peak_bytes'] / 1e6:>8.1f}")
    print(load_average())


if __name__ == "__main__":
    main()
