"""Time to simulate the measured A100 runs of ../shared/validation/vtrain (scripts/validate_vtrain.py).

    python benchmarks/bench_vtrain_validation.py [DATA_DIR] [--repeats 3] [--tiny]

Prints the median wall time of simulating all single-node rows, all multi-node rows and all
1,549 rows (each repeat builds a fresh setup, so no collective or compute price is cached
between repeats; within a repeat the rows share the setup's price and kernel-list caches, as
`scripts/validate_vtrain.py` does), and of the largest pipeline alone (175 B, 32 stages, 192
micro-batches, priced once before). Target (issue 15): all 1,549 rows in 3 s or less.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from timing import timed

from ddlsim.validation import vtrain as validate  # scripts/validate_vtrain.py only calls its main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", type=Path, default=validate.DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    rows = validate.load_rows(args.data_dir)
    if args.tiny:  # a few rows of each scale, the largest pipeline included
        rows = rows.sort_values("pp", kind="stable").groupby("scale", sort=False).tail(3)
        args.repeats = 1
    validate.simulate_rows(rows.head(2), validate.build_setup())  # imports, outside the timings
    times = timed(lambda: validate.simulate_rows(rows, validate.build_setup()), args.repeats)
    print(f"all: {len(rows)} rows, median {statistics.median(times):.2f} s ({min(times):.2f} to {max(times):.2f} s)")
    for scale in validate.FILES:
        subset = rows[rows.scale == scale]
        times = timed(lambda subset=subset: validate.simulate_rows(subset, validate.build_setup()), args.repeats)
        median = statistics.median(times)
        print(f"{scale}: {len(subset)} rows, median {median:.2f} s ({min(times):.2f} to {max(times):.2f} s), "
              f"{1e3 * median / len(subset):.1f} ms per row")
    largest = rows[(rows.scale == "multi-node") & (rows.pp == rows.pp.max())].sort_values("micro_batch").head(1)
    setup = validate.build_setup()
    validate.simulate_rows(largest, setup)  # prices cached: this times the schedule and the timeline
    row = largest.iloc[0]
    ops = validate.simulate_row(next(largest.itertuples(index=False)), setup).iteration.num_ops
    times = timed(lambda: validate.simulate_rows(largest, setup), args.repeats)
    print(f"largest pipeline ({row.params_billion:g} B, TP {row.tp} x DP {row.dp} x PP {row.pp}, micro-batch "
          f"{row.micro_batch}): {ops} ops in its event graph, median {1e3 * statistics.median(times):.2f} ms per "
          "simulation (closed form)")


if __name__ == "__main__":
    main()
