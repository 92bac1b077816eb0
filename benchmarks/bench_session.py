"""Warm time per configuration of `ddlsim.Session`, against `ddlsim.run` on the same overrides.

    python benchmarks/bench_session.py [--losses 40] [--run-samples 5]

A Megatron model trained on a fabric (``experiment=single``, a fixed parallel search as the
default experiment does), swept over `--losses` target losses on each fabric and collective
below: every configuration is new to the session (a new model size, so new collective sizes to
price), only the composition, the unchanged groups' objects and the estimators' caches are warm.
Each (fabric, collective) session runs one configuration first (its composition, imports and
first prices), then times every other one. Prints the median and 90th percentile per
(fabric, collective) and over all, and the median of `ddlsim.run` (compose + build + run) on
`--run-samples` of the same configurations, whose rows it checks are equal. Target (issue 22):
5 ms or less per configuration warm.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

BASE = ["experiment=single"]
CASES = [
    ("ideal", "ring"),
    ("ideal", "best"),
    ("superpod", "ring"),
    ("superpod", "best"),
]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", type=int, default=40, help="target losses per (fabric, collective)")
    parser.add_argument("--run-samples", type=int, default=5, help="configurations also timed with ddlsim.run")
    args = parser.parse_args()

    import ddlsim

    losses = [f"model.target_loss={2.6 - 0.013 * index:.3f}" for index in range(args.losses + 1)]
    every: list[float] = []
    configurations: list[list[str]] = []
    for fabric, collective in CASES:
        session = ddlsim.Session([*BASE, f"fabric={fabric}", f"collective={collective}"])
        session.run([losses[0]])  # composition, imports, first prices
        times = []
        for loss in losses[1:]:
            started = time.perf_counter()
            session.run([loss])
            times.append(time.perf_counter() - started)
        configurations += [[f"fabric={fabric}", f"collective={collective}", loss] for loss in losses[1:]]
        every += times
        print(f"fabric={fabric} collective={collective}: {len(times)} configurations, median "
              f"{statistics.median(times) * 1e3:.2f} ms, p90 {_percentile(times, 0.9) * 1e3:.2f} ms")
    print(f"Session, all {len(every)} configurations: median {statistics.median(every) * 1e3:.2f} ms, "
          f"p90 {_percentile(every, 0.9) * 1e3:.2f} ms (target 5 ms)")

    step = max(1, len(configurations) // max(1, args.run_samples))
    samples = configurations[::step][:args.run_samples]
    session = ddlsim.Session(BASE)
    run_times = []
    for overrides in samples:
        started = time.perf_counter()
        expected = ddlsim.run([*BASE, *overrides])
        run_times.append(time.perf_counter() - started)
        assert session.run(overrides).rows == expected.rows, f"Session differs from ddlsim.run on {overrides}"
    if run_times:
        print(f"ddlsim.run on {len(run_times)} of them: median {statistics.median(run_times) * 1e3:.1f} ms "
              "(rows equal to the Session's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
