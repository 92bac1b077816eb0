"""How long pricing one collective takes at scale, for every (fabric, algorithm, op).

    python benchmarks/bench_network.py                       # 65,536 ranks, 4 electrical fabrics, every algorithm
    python benchmarks/bench_network.py --fabrics ramp --algorithms ring direct rhd best --ops all_reduce
    python benchmarks/bench_network.py --ranks 4096 --fabrics superpod --algorithms ring rhd

For each combination it prints the median over --repeats of
  cold: `ddlsim.clear_caches()`, a freshly built fabric and a fresh CollectiveEstimator, then one
        estimate (the schedule is built and every step priced; for `best` every candidate that
        is not given up), which is what a first call costs in a fresh process once imports are done;
  warm: the same estimator asked again with another message size (schedules and step prices
        cached; what a training run pays for every further call of the same group);
the CPU time of the cold estimate (process time: less sensitive to a loaded machine than the
wall time), and the memory one cold estimate allocates (tracemalloc). It ends with the median,
the maximum and the number of combinations over 10 ms, 20 ms and 100 ms of the cold times (targets of issue
15: 20 ms median, 100 ms max, selectors included), per fabric and over all, and the machine's
load average, since a shared machine slows everything down.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ddlsim  # noqa: E402
from ddlsim.catalog import load_all  # noqa: E402
from ddlsim.errors import InfeasibleError  # noqa: E402
from ddlsim.network import CollectiveEstimator, make_fabric  # noqa: E402
from ddlsim.registry import ALGORITHMS  # noqa: E402
from ddlsim.types import CollectiveOp  # noqa: E402

THRESHOLDS_S = (0.010, 0.020, 0.100)
TARGET_MEDIAN_S, TARGET_MAX_S, TARGET_BYTES = 0.020, 0.100, 10**9
ELECTRICAL = ["ideal", "superpod", "torus2d", "leaf_spine"]


def fabric_builders(ranks: int) -> dict:
    """Fabrics with at least `ranks` nodes (RAMP has 65,536 at its defaults)."""
    return {
        "ideal": lambda: make_fabric("ideal", num_nodes=max(ranks, 2)),
        "superpod": lambda: make_fabric("superpod", num_nodes=ranks),
        "torus2d": lambda: make_fabric("torus2d", num_nodes=ranks, dims=[]),
        "leaf_spine": lambda: make_fabric("leaf_spine", num_nodes=ranks, tier_sizes=[max(ranks, 16)]),
        "ramp": lambda: make_fabric("ramp"),
    }


def measure(build, algorithm, op: CollectiveOp, ranks: int, repeats: int) -> dict:
    size = 0 if op is CollectiveOp.BARRIER else 10**9
    cold, cold_cpu, warm = [], [], []
    try:
        for repeat in range(repeats):
            ddlsim.clear_caches()
            estimator = CollectiveEstimator(build(), algorithm)
            start, start_cpu = time.perf_counter(), time.process_time()
            result = estimator.estimate(op, size, num_ranks=ranks)
            cold.append(time.perf_counter() - start)
            cold_cpu.append(time.process_time() - start_cpu)
            start = time.perf_counter()
            estimator.estimate(op, 0 if op is CollectiveOp.BARRIER else size + 1 + repeat, num_ranks=ranks)
            warm.append(time.perf_counter() - start)
    except InfeasibleError as error:
        return {"skipped": str(error)}
    ddlsim.clear_caches()
    estimator = CollectiveEstimator(build(), algorithm)
    tracemalloc.start()
    estimator.estimate(op, size, num_ranks=ranks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"steps": result.num_steps, "cold_s": statistics.median(cold), "cold_cpu_s": statistics.median(cold_cpu),
            "warm_s": statistics.median(warm),
            "peak_bytes": peak, "chosen": result.algorithm}


def summary(label: str, colds: list[float]) -> str:
    if not colds:
        return f"{label:18s} (none)"
    over = "  ".join(f">{limit * 1e3:.0f} ms: {sum(c > limit for c in colds):3d}" for limit in THRESHOLDS_S)
    return (f"{label:18s} {len(colds):4d} prices  median {statistics.median(colds) * 1e3:7.2f} ms  "
            f"max {max(colds) * 1e3:8.1f} ms  {over}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fabrics", nargs="*", default=ELECTRICAL, help="of ideal, superpod, torus2d, "
                        "leaf_spine, ramp (default: the four electrical ones)")
    parser.add_argument("--algorithms", nargs="*", default=None, help="default: every registered one")
    every_op = [op.value for op in CollectiveOp if op is not CollectiveOp.SEND_RECV]
    parser.add_argument("--ops", nargs="*", default=every_op)
    args = parser.parse_args()
    load_all()
    names = args.algorithms or [entry.name for entry in ALGORITHMS]
    builders = fabric_builders(args.ranks)
    print(f"pricing one collective of 1 GB on {args.ranks} ranks; median of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'fabric':11s} {'algorithm':21s} {'op':15s} {'steps':>7s} {'cold ms':>9s} {'cpu ms':>9s} {'warm ms':>9s} "
          f"{'peak MB':>8s}")
    colds: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    worst_peak = 0
    for fabric_name in args.fabrics:
        build = builders[fabric_name]
        fabric = build()
        for name in names:
            algorithm = ALGORITHMS.make(name)
            selector = getattr(algorithm, "is_selector", False)
            for op in map(CollectiveOp, args.ops):
                if not selector and algorithm.supports(fabric, op, args.ranks) is not None:
                    continue
                row = measure(build, algorithm, op, args.ranks, args.repeats)
                if "skipped" in row:
                    print(f"{fabric_name:11s} {name:21s} {op.value:15s}  skipped: {row['skipped'][:70]}")
                    continue
                label = f"{name}->{row['chosen']}" if selector else name
                print(f"{fabric_name:11s} {label:21s} {op.value:15s} {row['steps']:7d} {row['cold_s'] * 1e3:9.2f} "
                      f"{row['cold_cpu_s'] * 1e3:9.2f} {row['warm_s'] * 1e3:9.3f} {row['peak_bytes'] / 1e6:8.1f}",
                      flush=True)
                for group in (fabric_name, "selectors" if selector else "single algorithms"):
                    colds.setdefault(group, []).append(row["cold_s"])
                    cpus.setdefault(group, []).append(row["cold_cpu_s"])
                worst_peak = max(worst_peak, row["peak_bytes"])
    print(f"\ncold prices at {args.ranks} ranks (targets: median {TARGET_MEDIAN_S * 1e3:.0f} ms, "
          f"max {TARGET_MAX_S * 1e3:.0f} ms); load average now {os.getloadavg()[0]:.1f}")
    for title, times in (("wall time", colds), ("CPU time of the process (less sensitive to load)", cpus)):
        print(title)
        for label in [*args.fabrics, "single algorithms", "selectors"]:
            print("  " + summary(label, times.get(label, [])))
        print("  " + summary("all", [value for name in args.fabrics for value in times.get(name, [])]))
    max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"worst traced peak of one estimate {worst_peak / 1e6:.0f} MB (target {TARGET_BYTES / 1e6:.0f} MB); "
          f"process max RSS {max_rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
