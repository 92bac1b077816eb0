"""How long pricing one collective takes at scale, for every (fabric, algorithm, op).

    python benchmarks/bench_network.py                       # 65,536 ranks, every combination
    python benchmarks/bench_network.py --ranks 4096 --fabrics superpod --algorithms ring rhd

For each combination it prints the median time of
  cold: a fresh CollectiveEstimator and cleared module caches (the schedule is built, every step priced);
  warm: the same estimator asked again with a different message size (schedule and step prices
        cached; what a training run pays for every further call of the same group);
and the peak memory one cold estimate allocates (tracemalloc), against the targets of 10 ms and
1 GB. The machine's load average is printed too, since shared machines slow everything down.
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

from ddlsim.catalog import load_all  # noqa: E402
from ddlsim.errors import InfeasibleError  # noqa: E402
from ddlsim.network import CollectiveEstimator, clear_caches, make_fabric  # noqa: E402
from ddlsim.registry import ALGORITHMS  # noqa: E402
from ddlsim.types import CollectiveOp  # noqa: E402

TARGET_S = 0.010
TARGET_BYTES = 10**9


def fabrics(ranks: int) -> dict:
    """The electrical fabrics, each with at least `ranks` GPUs."""
    return {
        "ideal": make_fabric("ideal", num_nodes=max(ranks, 2)),
        "superpod": make_fabric("superpod", num_nodes=ranks) if ranks <= 65536 else None,
        "torus2d": make_fabric("torus2d", num_nodes=ranks, dims=[]) if ranks > 1 else None,
        "leaf_spine": make_fabric("leaf_spine", num_nodes=ranks, tier_sizes=[max(ranks, 16)]),
    }


def measure(fabric, algorithm, op: CollectiveOp, ranks: int, repeats: int) -> dict | None:
    size = 0 if op is CollectiveOp.BARRIER else 10**9
    cold, warm = [], []
    try:
        for repeat in range(repeats):
            clear_caches()
            estimator = CollectiveEstimator(fabric, algorithm)
            start = time.perf_counter()
            result = estimator.estimate(op, size, num_ranks=ranks)
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            estimator.estimate(op, 0 if op is CollectiveOp.BARRIER else size + 1 + repeat, num_ranks=ranks)
            warm.append(time.perf_counter() - start)
    except InfeasibleError as error:
        return {"skipped": str(error)}
    clear_caches()
    tracemalloc.start()
    CollectiveEstimator(fabric, algorithm).estimate(op, size, num_ranks=ranks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"steps": result.num_steps, "cold_s": statistics.median(cold), "warm_s": statistics.median(warm),
            "peak_bytes": peak, "chosen": result.algorithm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fabrics", nargs="*", default=["ideal", "superpod", "torus2d", "leaf_spine"])
    parser.add_argument("--algorithms", nargs="*", default=None, help="default: every registered one and best")
    every_op = [op.value for op in CollectiveOp if op is not CollectiveOp.SEND_RECV]
    parser.add_argument("--ops", nargs="*", default=every_op)
    args = parser.parse_args()
    load_all()
    names = args.algorithms or [entry.name for entry in ALGORITHMS]
    built = fabrics(args.ranks)
    print(f"pricing one collective on {args.ranks} ranks; median of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'fabric':11s} {'algorithm':19s} {'op':15s} {'steps':>7s} {'cold ms':>9s} {'warm ms':>9s} "
          f"{'peak MB':>8s}  target")
    worst_cold = worst_peak = 0.0
    over = []
    for fabric_name in args.fabrics:
        fabric = built[fabric_name]
        for name in names:
            algorithm = ALGORITHMS.make(name)
            for op in map(CollectiveOp, args.ops):
                selector = getattr(algorithm, "is_selector", False)
                if not selector and algorithm.supports(fabric, op, args.ranks) is not None:
                    continue
                row = measure(fabric, algorithm, op, args.ranks, args.repeats)
                if row is None or "skipped" in row:
                    print(f"{fabric_name:11s} {name:19s} {op.value:15s}  skipped: {row['skipped'][:70]}")
                    continue
                label = f"{name}->{row['chosen']}" if selector else name
                ok = row["cold_s"] <= TARGET_S and row["peak_bytes"] <= TARGET_BYTES
                print(f"{fabric_name:11s} {label:19s} {op.value:15s} {row['steps']:7d} {row['cold_s'] * 1e3:9.2f} "
                      f"{row['warm_s'] * 1e3:9.3f} {row['peak_bytes'] / 1e6:8.1f}  {'ok' if ok else 'OVER'}",
                      flush=True)
                if not selector:
                    worst_cold = max(worst_cold, row["cold_s"])
                    worst_peak = max(worst_peak, row["peak_bytes"])
                    if not ok:
                        over.append(f"{fabric_name}/{name}/{op.value}")
    max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nworst cold time {worst_cold * 1e3:.1f} ms (target {TARGET_S * 1e3:.0f} ms); worst traced peak "
          f"{worst_peak / 1e6:.0f} MB (target {TARGET_BYTES / 1e6:.0f} MB); process max RSS {max_rss_mb:.0f} MB")
    print(f"{len(over)} combination(s) over a target" + (": " + ", ".join(over) if over else ""))


if __name__ == "__main__":
    main()
