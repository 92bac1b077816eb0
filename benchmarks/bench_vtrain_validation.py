"""Time to simulate the measured A100 runs of ../shared/validation/vtrain (scripts/validate_vtrain.py).

    python benchmarks/bench_vtrain_validation.py [DATA_DIR] [--repeats 3] [--tiny]

Prints the median CPU time (`time.process_time`) of simulating all single-node rows, all
multi-node rows and all 1,549 rows (each repeat builds a fresh setup, so no collective or compute
price is cached between repeats; within a repeat the rows share the setup's price and
kernel-list caches, as `scripts/validate_vtrain.py` does), and of the largest pipeline alone
(175 B, 32 stages, 192 micro-batches, priced once before). Times are CPU time with the median
wall time beside; the load average is the first and the last line. Target (issue 15): all 1,549
rows in 3 s or less.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from timing import load_average, timed_cpu_and_wall

from ddlsim.validation import vtrain as validate  # scripts/validate_vtrain.py only calls its main()


def split(times: list[tuple[float, float]]) -> tuple[list[float], float]:
    """The CPU times of `timed_cpu_and_wall`'s times, and their wall-time median."""
    return [cpu for cpu, _ in times], statistics.median(wall for _, wall in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", type=Path, default=validate.DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    print(load_average())
    rows = validate.load_rows(args.data_dir)
    if args.tiny:  # a few rows of each scale, the largest pipeline included
        rows = rows.sort_values("pp", kind="stable").groupby("scale", sort=False).tail(3)
        args.repeats = 1
    validate.simulate_rows(rows.head(2), validate.build_setup())  # imports, outside the timings
    times, wall = split(timed_cpu_and_wall(lambda: validate.simulate_rows(rows, validate.build_setup()), args.repeats))
    print(f"all: {len(rows)} rows, CPU median {statistics.median(times):.2f} s ({min(times):.2f} to "
          f"{max(times):.2f} s), wall median {wall:.2f} s")
    for scale in validate.FILES:
        subset = rows[rows.scale == scale]
        times, wall = split(timed_cpu_and_wall(
            lambda subset=subset: validate.simulate_rows(subset, validate.build_setup()), args.repeats))
        median = statistics.median(times)
        print(f"{scale}: {len(subset)} rows, CPU median {median:.2f} s ({min(times):.2f} to {max(times):.2f} s), "
              f"{1e3 * median / len(subset):.1f} ms per row; wall median {wall:.2f} s")
    largest = rows[(rows.scale == "multi-node") & (rows.pp == rows.pp.max())].sort_values("micro_batch").head(1)
    setup = validate.build_setup()
    validate.simulate_rows(largest, setup)  # prices cached: this times the schedule and the timeline
    row = largest.iloc[0]
    ops = validate.simulate_row(next(largest.itertuples(index=False)), setup).iteration.num_ops
    times, wall = split(timed_cpu_and_wall(lambda: validate.simulate_rows(largest, setup), args.repeats))
    print(f"largest pipeline ({row.params_billion:g} B, TP {row.tp} x DP {row.dp} x PP {row.pp}, micro-batch "
          f"{row.micro_batch}): {ops} ops in its event graph, CPU median {1e3 * statistics.median(times):.2f} ms per "
          f"simulation (closed form), wall median {1e3 * wall:.2f} ms")
    print(load_average())


if __name__ == "__main__":
    main()
