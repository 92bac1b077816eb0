"""CPU time per configuration of `ddlsim.Session`, warm and new, against `ddlsim.run` on the same overrides.

    python benchmarks/bench_session.py [--repeats 5] [--losses 40] [--run-samples 5] [--rows gpt3|loss|all]

Two sets of rows:

- ``gpt3`` (issue 34's rows): GPT-3 175B (d_model 12,288, 96 heads, 96 layers, sequence 2,048,
  global batch 1,536) with TP 8 x PP 16 on 1,024, 2,048 and 4,096 H100s (DP 8, 16, 32) on the DGX
  SuperPod, micro-batches of 1, 2 and 4, with ``collective=ring`` and ``collective=best``. Every
  configuration runs once (its first run: new prices), then `--repeats` more times: the warm time.
- ``loss``: a Megatron model (``experiment=single``) swept over `--losses` target losses on the
  ideal switch and the SuperPod: every configuration is new to the session (a new model size, so
  new collective sizes to price).

Times are CPU time (`time.process_time`) medians and 90th percentiles; wall time and the load
average are printed beside them, and for the ``gpt3`` rows the Python function calls of a warm
configuration, which no load changes. The last lines time, on `--run-samples` of the configurations, a
full composition (`ddlsim.compose` + build + run, no Session) and `ddlsim.run` (a process-wide
Session: its first call of a set of group choices composes it), and check that their rows are equal. Targets
(issue 34): 1.5 ms median and 5 ms p90 warm with ``collective=best`` on the ``gpt3`` rows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from timing import percentile

GPT3_BASE = ["experiment=single", "model=gpt", "model.d_model=12288", "model.heads=96", "model.layers=96",
             "model.seq_len=2048", "model.global_batch=1536", "device=h100_sxm", "fabric=superpod",
             "parallel.tensor=8", "parallel.pipeline=16"]
GPT3_POINTS = [[f"parallel.data={data}", f"parallel.micro_batch={micro}"]
               for data in (8, 16, 32) for micro in (1, 2, 4)]
LOSS_BASE = ["experiment=single"]
LOSS_CASES = [("ideal", "ring"), ("ideal", "best"), ("superpod", "ring"), ("superpod", "best")]


def timed_run(session, overrides: list[str]) -> tuple[float, float]:
    """CPU and wall seconds of one ``session.run(overrides)``."""
    cpu, wall = time.process_time(), time.perf_counter()
    session.run(overrides)
    return time.process_time() - cpu, time.perf_counter() - wall


def describe(label: str, cpu: list[float], wall: list[float]) -> str:
    return (f"{label}: {len(cpu)} runs, CPU median {statistics.median(cpu) * 1e3:.2f} ms, p90 "
            f"{percentile(cpu, 0.9) * 1e3:.2f} ms (wall median {statistics.median(wall) * 1e3:.2f} ms)")


def gpt3_rows(ddlsim, repeats: int) -> list[list[str]]:
    configurations = []
    for collective in ("ring", "best"):
        base = [*GPT3_BASE, f"collective={collective}"]
        session = ddlsim.Session(base)
        session.run(GPT3_POINTS[0])  # composition, imports, the first prices
        first_cpu, first_wall, cpu, wall = [], [], [], []
        for point in GPT3_POINTS:
            first = timed_run(session, point)
            first_cpu.append(first[0])
            first_wall.append(first[1])
        for _ in range(repeats):
            for point in GPT3_POINTS:
                again = timed_run(session, point)
                cpu.append(again[0])
                wall.append(again[1])
        print(describe(f"gpt3 175B superpod collective={collective}, warm", cpu, wall))
        print(describe(f"gpt3 175B superpod collective={collective}, first run of each", first_cpu, first_wall))
        print(f"gpt3 175B superpod collective={collective}, warm: {function_calls(session) / len(GPT3_POINTS):,.0f} "
              "Python function calls per configuration (cProfile's count: the same on any load)")
        configurations += [[*base, *point] for point in GPT3_POINTS]
    return configurations


def function_calls(session) -> int:
    """Python function calls of one warm run of every gpt3 point (deterministic, unlike a time)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for point in GPT3_POINTS:
        session.run(point)
    profile.disable()
    return pstats.Stats(profile).total_calls


def loss_rows(ddlsim, losses: int) -> list[list[str]]:
    values = [f"model.target_loss={2.6 - 0.013 * index:.3f}" for index in range(losses + 1)]
    configurations, every_cpu, every_wall = [], [], []
    for fabric, collective in LOSS_CASES:
        base = [*LOSS_BASE, f"fabric={fabric}", f"collective={collective}"]
        session = ddlsim.Session(base)
        session.run([values[0]])  # composition, imports, first prices
        cpu, wall = [], []
        for value in values[1:]:
            one = timed_run(session, [value])
            cpu.append(one[0])
            wall.append(one[1])
        print(describe(f"target loss fabric={fabric} collective={collective}, new configurations", cpu, wall))
        configurations += [[*base, value] for value in values[1:]]
        every_cpu += cpu
        every_wall += wall
    print(describe("target loss, all", every_cpu, every_wall))
    return configurations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="warm runs of each gpt3 configuration")
    parser.add_argument("--losses", type=int, default=40, help="target losses per (fabric, collective)")
    parser.add_argument("--run-samples", type=int, default=5, help="configurations also timed with ddlsim.run")
    parser.add_argument("--rows", choices=("gpt3", "loss", "all"), default="all")
    args = parser.parse_args()

    from timing import load_average

    import ddlsim
    from ddlsim.app import runner

    print(load_average())
    configurations = []
    if args.rows in ("gpt3", "all"):
        configurations += gpt3_rows(ddlsim, args.repeats)
    if args.rows in ("loss", "all"):
        configurations += loss_rows(ddlsim, args.losses)

    step = max(1, len(configurations) // max(1, args.run_samples))
    samples = configurations[::step][:args.run_samples]
    composed_cpu, composed_wall, first_cpu, first_wall, again_cpu, again_wall = [], [], [], [], [], []
    for overrides in samples:
        started_cpu, started_wall = time.process_time(), time.perf_counter()
        expected = runner.run(ddlsim.compose(overrides))  # composition's path: Hydra composes the whole list
        composed_cpu.append(time.process_time() - started_cpu)
        composed_wall.append(time.perf_counter() - started_wall)
        for cpu, wall in ((first_cpu, first_wall), (again_cpu, again_wall)):
            started_cpu, started_wall = time.process_time(), time.perf_counter()
            rows = ddlsim.run(overrides).rows
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started_wall)
            assert rows == expected.rows, f"ddlsim.run differs from a full composition on {overrides}"
    if composed_cpu:
        print(describe("full composition (runner.run of ddlsim.compose)", composed_cpu, composed_wall))
        print(describe("ddlsim.run, first call of each (its composition), rows equal", first_cpu, first_wall))
        print(describe("ddlsim.run, second call of each, rows equal", again_cpu, again_wall))
    print(load_average())
    return 0


if __name__ == "__main__":
    sys.exit(main())
