"""How long pricing one collective takes at scale, for every (fabric, algorithm, op).

    python benchmarks/bench_network.py                       # 65,536 ranks, 4 electrical fabrics, every algorithm
    python benchmarks/bench_network.py --fabrics ramp --algorithms ring direct rhd best --ops all_reduce
    python benchmarks/bench_network.py --ranks 4096 --fabrics superpod --algorithms ring rhd
    python benchmarks/bench_network.py --ramp-scaling                 # RAMP at 1,024 to 65,536 ranks
    python benchmarks/bench_network.py --million                      # `best` at 2^20 ranks, fresh processes

For each combination it prints the median over --repeats of
  cold: `ddlsim.clear_caches()`, a freshly built fabric and a fresh CollectiveEstimator, then one
        estimate (the schedule is built and every step priced; for `best` every candidate that
        is not given up), which is what a first call costs in a fresh process once imports are done;
  warm: the same estimator asked again with another message size (schedules and step prices
        cached; what a training run pays for every further call of the same group);
the CPU time of each (process time: less sensitive to a loaded machine than the wall time) with
its wall time beside, and the memory one cold estimate allocates (tracemalloc). It ends with the
median, the maximum and the number of combinations over 10 ms, 20 ms and 100 ms of the cold times
(targets of issue 22: 10 ms median, 100 ms max, selectors included), per fabric and over all, in
CPU time and in wall time, and the machine's load average, since a shared machine slows
everything down. Every mode prints the load average as its first and its last line.

--ramp-scaling prices every algorithm (and `best`) and op on RAMP at 1,024, 4,096, 16,384 and
65,536 ranks and prints the cold CPU times with their wall times beside, then how many fourfold
steps in ranks grow more than 2x and more than 4x in CPU time and how many are not monotone
(targets of issue 34: each cold price 1 s or less of CPU, and none at 4n ranks more than 4 times
the same price at n, nor below it). --million runs `best` for every op on the ideal switch and the torus at 2^20 ranks,
each in a fresh process, and prints the cold price's CPU time, its wall time and the process's
peak resident memory (targets: 1 s, 1 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import load_average

import ddlsim  # noqa: E402
from ddlsim.app.catalog import load_all  # noqa: E402
from ddlsim.core.errors import InfeasibleError  # noqa: E402
from ddlsim.core.registry import ALGORITHMS  # noqa: E402
from ddlsim.core.types import CollectiveOp  # noqa: E402
from ddlsim.network import CollectiveEstimator, make_fabric  # noqa: E402

THRESHOLDS_S = (0.010, 0.020, 0.100)
TARGET_MEDIAN_S, TARGET_MAX_S, TARGET_BYTES = 0.010, 0.100, 10**9
ELECTRICAL = ["ideal", "superpod", "torus2d", "leaf_spine"]
RAMP_RANKS = (1024, 4096, 16384, 65536)
RAMP_TARGET_S, GROWTH_LIMIT = 1.0, 4.0
MILLION = 1 << 20
MILLION_TARGET_S, MILLION_TARGET_BYTES = 1.0, 10**9


def fabric_builders(ranks: int) -> dict:
    """Fabrics with at least `ranks` nodes (RAMP has 65,536 at its defaults)."""
    return {
        "ideal": lambda: make_fabric("ideal", num_nodes=max(ranks, 2)),
        "superpod": lambda: make_fabric("superpod", num_nodes=ranks),
        "torus2d": lambda: make_fabric("torus2d", num_nodes=ranks, dims=[]),
        "leaf_spine": lambda: make_fabric("leaf_spine", num_nodes=ranks, tier_sizes=[max(ranks, 16)]),
        "ramp": lambda: make_fabric("ramp"),
    }


def measure(build, algorithm, op: CollectiveOp, ranks: int, repeats: int, trace: bool = True) -> dict:
    size = 0 if op is CollectiveOp.BARRIER else 10**9
    cold, cold_cpu, warm, warm_cpu = [], [], [], []
    try:
        for repeat in range(repeats):
            ddlsim.clear_caches()
            estimator = CollectiveEstimator(build(), algorithm)
            start, start_cpu = time.perf_counter(), time.process_time()
            result = estimator.estimate(op, size, num_ranks=ranks)
            cold.append(time.perf_counter() - start)
            cold_cpu.append(time.process_time() - start_cpu)
            start, start_cpu = time.perf_counter(), time.process_time()
            estimator.estimate(op, 0 if op is CollectiveOp.BARRIER else size + 1 + repeat, num_ranks=ranks)
            warm.append(time.perf_counter() - start)
            warm_cpu.append(time.process_time() - start_cpu)
    except InfeasibleError as error:
        return {"skipped": str(error)}
    peak = 0
    if trace:
        ddlsim.clear_caches()
        estimator = CollectiveEstimator(build(), algorithm)
        tracemalloc.start()
        estimator.estimate(op, size, num_ranks=ranks)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {"steps": result.num_steps, "cold_s": statistics.median(cold), "cold_cpu_s": statistics.median(cold_cpu),
            "warm_s": statistics.median(warm), "warm_cpu_s": statistics.median(warm_cpu),
            "peak_bytes": peak, "chosen": result.algorithm}


def summary(label: str, colds: list[float]) -> str:
    if not colds:
        return f"{label:18s} (none)"
    over = "  ".join(f">{limit * 1e3:.0f} ms: {sum(c > limit for c in colds):3d}" for limit in THRESHOLDS_S)
    return (f"{label:18s} {len(colds):4d} prices  median {statistics.median(colds) * 1e3:7.2f} ms  "
            f"max {max(colds) * 1e3:8.1f} ms  {over}")


def every_op() -> list[CollectiveOp]:
    return [op for op in CollectiveOp if op is not CollectiveOp.SEND_RECV]


def ramp_scaling(names: list[str], ops: list[CollectiveOp], repeats: int, ranks: tuple[int, ...]) -> None:
    """Every algorithm and op on RAMP at each rank count; cold times, and growth against 4n ranks."""
    print(f"RAMP: cold prices of 1 GB at {', '.join(map(str, ranks))} ranks, CPU time; median of {repeats}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'algorithm':21s} {'op':15s} " + " ".join(f"{n:>9d} {'wall':>7s}" for n in ranks)
          + "   (cold CPU ms, wall ms)")
    build = fabric_builders(max(ranks))["ramp"]
    fabric = build()
    colds: dict[tuple[str, str], dict[int, float]] = {}
    walls: dict[tuple[str, str], dict[int, float]] = {}
    for name in names:
        algorithm = ALGORITHMS.make(name)
        selector = getattr(algorithm, "is_selector", False)
        for op in ops:
            row: dict[int, float] = {}
            wall: dict[int, float] = {}
            for n in ranks:
                if not selector and algorithm.supports(fabric, op, n) is not None:
                    continue
                result = measure(build, algorithm, op, n, repeats, trace=False)
                if "skipped" not in result:
                    row[n], wall[n] = result["cold_cpu_s"], result["cold_s"]
            if row:
                colds[(name, op.value)], walls[(name, op.value)] = row, wall
                cells = " ".join(f"{row[n] * 1e3:9.1f} {wall[n] * 1e3:7.1f}" if n in row else f"{'-':>9s} {'-':>7s}"
                                 for n in ranks)
                print(f"{name:21s} {op.value:15s} {cells}", flush=True)
    times = [value for row in colds.values() for value in row.values()]
    wall_times = [value for row in walls.values() for value in row.values()]
    growth = [(row[4 * n] / row[n], name, op, n) for (name, op), row in colds.items()
              for n in ranks if n in row and 4 * n in row]
    worst = max(growth, default=(0.0, "-", "-", 0))
    print(f"\n{len(times)} RAMP prices (CPU): median {statistics.median(times) * 1e3:.1f} ms, "
          f"max {max(times) * 1e3:.1f} ms, {sum(t > RAMP_TARGET_S for t in times)} over {RAMP_TARGET_S:.0f} s "
          f"(target 0); of {len(growth)} fourfold steps in ranks, {sum(g[0] > 2 for g in growth)} grow more than 2x, "
          f"{sum(g[0] > GROWTH_LIMIT for g in growth)} more than {GROWTH_LIMIT:.0f}x (target 0; worst {worst[0]:.2f}x: "
          f"{worst[1]} {worst[2]} from {worst[3]}) and {sum(g[0] < 1 for g in growth)} are not monotone (get cheaper); "
          f"load average now {os.getloadavg()[0]:.1f}")
    print(f"wall: median {statistics.median(wall_times) * 1e3:.1f} ms, max {max(wall_times) * 1e3:.1f} ms, "
          f"{sum(t > RAMP_TARGET_S for t in wall_times)} over {RAMP_TARGET_S:.0f} s")


def million_worker(fabric_name: str, op_name: str) -> None:
    """One cold `best` at 2^20 ranks in this (fresh) process: prints a JSON line."""
    load_all()
    build = fabric_builders(MILLION)[fabric_name]
    op = CollectiveOp(op_name)
    estimator = CollectiveEstimator(build(), "best")
    size = 0 if op is CollectiveOp.BARRIER else 10**9
    start, start_cpu = time.perf_counter(), time.process_time()
    result = estimator.estimate(op, size, num_ranks=MILLION)
    print(json.dumps({"cold_s": time.perf_counter() - start, "cpu_s": time.process_time() - start_cpu,
                      "chosen": result.algorithm, "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      * 1024}))


def million(ops: list[CollectiveOp]) -> None:
    """`best` on the ideal switch and the torus at 2^20 ranks, each price in a fresh process."""
    print(f"best at {MILLION} ranks, 1 GB, each in a fresh process (imports and fabric not timed); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'fabric':9s} {'op':15s} {'chosen':20s} {'cpu ms':>9s} {'cold ms':>9s} {'max RSS MB':>11s}")
    rows = []
    for fabric_name in ("ideal", "torus2d"):
        for op in ops:
            output = subprocess.run([sys.executable, __file__, "--million-worker", fabric_name, op.value],
                                    capture_output=True, text=True, check=True).stdout
            row = json.loads(output.strip().splitlines()[-1])
            rows.append(row)
            print(f"{fabric_name:9s} {op.value:15s} {row['chosen']:20s} {row['cpu_s'] * 1e3:9.1f} "
                  f"{row['cold_s'] * 1e3:9.1f} {row['max_rss_bytes'] / 1e6:11.0f}", flush=True)
    print(f"max cold CPU {max(r['cpu_s'] for r in rows):.2f} s, wall {max(r['cold_s'] for r in rows):.2f} s "
          f"(target {MILLION_TARGET_S:.0f} s), "
          f"max RSS {max(r['max_rss_bytes'] for r in rows) / 1e9:.2f} GB (target {MILLION_TARGET_BYTES / 1e9:.0f} GB, "
          f"imports included); load average now {os.getloadavg()[0]:.1f}")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fabrics", nargs="*", default=ELECTRICAL, help="of ideal, superpod, torus2d, "
                        "leaf_spine, ramp (default: the four electrical ones)")
    parser.add_argument("--algorithms", nargs="*", default=None, help="default: every registered one")
    parser.add_argument("--ops", nargs="*", default=[op.value for op in every_op()])
    parser.add_argument("--ramp-scaling", action="store_true", help="RAMP at 1,024 to 65,536 ranks")
    parser.add_argument("--ramp-ranks", nargs="*", type=int, default=list(RAMP_RANKS))
    parser.add_argument("--million", action="store_true", help="best at 2^20 ranks on ideal and torus2d")
    parser.add_argument("--million-worker", nargs=2, metavar=("FABRIC", "OP"), help=argparse.SUPPRESS)
    return parser.parse_args()


def every_price(args: argparse.Namespace, names: list[str]) -> None:
    """Every (fabric, algorithm, op) at `args.ranks`, then the summaries."""
    builders = fabric_builders(args.ranks)
    print(f"pricing one collective of 1 GB on {args.ranks} ranks; median of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'fabric':11s} {'algorithm':21s} {'op':15s} {'steps':>7s} {'cpu ms':>9s} {'cold ms':>9s} "
          f"{'warm cpu ms':>11s} {'warm ms':>9s} {'peak MB':>8s}")
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
                print(f"{fabric_name:11s} {label:21s} {op.value:15s} {row['steps']:7d} "
                      f"{row['cold_cpu_s'] * 1e3:9.2f} {row['cold_s'] * 1e3:9.2f} {row['warm_cpu_s'] * 1e3:11.3f} "
                      f"{row['warm_s'] * 1e3:9.3f} {row['peak_bytes'] / 1e6:8.1f}", flush=True)
                for group in (fabric_name, "selectors" if selector else "single algorithms"):
                    colds.setdefault(group, []).append(row["cold_s"])
                    cpus.setdefault(group, []).append(row["cold_cpu_s"])
                worst_peak = max(worst_peak, row["peak_bytes"])
    print(f"\ncold prices at {args.ranks} ranks (targets: median {TARGET_MEDIAN_S * 1e3:.0f} ms, "
          f"max {TARGET_MAX_S * 1e3:.0f} ms); load average now {os.getloadavg()[0]:.1f}")
    for title, times in (("CPU time of the process (less sensitive to load)", cpus), ("wall time", colds)):
        print(title)
        for label in [*args.fabrics, "single algorithms", "selectors"]:
            print("  " + summary(label, times.get(label, [])))
        print("  " + summary("all", [value for name in args.fabrics for value in times.get(name, [])]))
    max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"worst traced peak of one estimate {worst_peak / 1e6:.0f} MB (target {TARGET_BYTES / 1e6:.0f} MB); "
          f"process max RSS {max_rss_mb:.0f} MB")


def main() -> None:
    args = parse_arguments()
    if args.million_worker:
        million_worker(*args.million_worker)
        return
    print(load_average(), flush=True)
    load_all()
    names = args.algorithms or [entry.name for entry in ALGORITHMS]
    if args.million:
        million(list(map(CollectiveOp, args.ops)))
    elif args.ramp_scaling:
        ramp_scaling(names, list(map(CollectiveOp, args.ops)), args.repeats, tuple(args.ramp_ranks))
    else:
        every_price(args, names)
    print(load_average())


if __name__ == "__main__":
    main()
