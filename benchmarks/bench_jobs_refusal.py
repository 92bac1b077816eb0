"""How long `task=jobs` takes to refuse more jobs than the fabric holds (issue 35: at most 2 s).

    python benchmarks/bench_jobs_refusal.py [--repeats 5] [--tiny]

Each case is ``ddlsim.run`` of ``experiment=single task=jobs`` with a job count the fabric cannot
hold; the job count is checked against the fabric's slots before any job's model or workload is
built, so a million jobs are refused as fast as ten thousand. Prints, per case, the median CPU
time (``time.process_time``) of the whole call, composition included, and of the refusal alone
(the same call's components built first, then `run_components`), each with its median wall time
beside it, and the error's first words. The load average is the first and the last line.
"""

from __future__ import annotations

import argparse
import statistics
import time

from timing import load_average

import ddlsim
from ddlsim.app.runner import build_components, run_components
from ddlsim.core.errors import InfeasibleError

CANDLE = ["fabric=topoopt_fat_tree_oversub", "+task.model_overrides={num_servers: 8, sizes: sec5_6}"]
CASES = {
    "num_jobs=1000000 (ideal)": ["task.num_jobs=1000000"],
    "num_jobs=10000 (ideal)": ["task.num_jobs=10000"],
    "count=1000000 (fat-tree)": [*CANDLE, "task.jobs=[{model: topoopt_candle, count: 1000000}]"],
    "mix, num_jobs=1000000 (fat-tree)": [*CANDLE, "+task.mix={topoopt_candle: 1}", "task.num_jobs=1000000"],
}


def _cpu_and_wall_s(call, argument) -> tuple[float, float, str]:
    start_cpu, start = time.process_time(), time.perf_counter()
    try:
        call(argument)
    except InfeasibleError as error:
        return time.process_time() - start_cpu, time.perf_counter() - start, str(error)[:60]
    raise AssertionError("the case was not refused")


def _medians(times: list[tuple[float, float, str]]) -> tuple[float, float]:
    return statistics.median(cpu for cpu, _, _ in times), statistics.median(wall for _, wall, _ in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="one repeat of the first case (the test suite's smoke run)")
    args = parser.parse_args()
    repeats, cases = (1, dict(list(CASES.items())[:1])) if args.tiny else (args.repeats, CASES)
    print(load_average())
    print(f"{'case':34} {'run cpu s':>10} {'wall s':>8} {'refusal cpu s':>14} {'wall s':>8}  error  (medians)")
    for name, overrides in cases.items():
        overrides = ["experiment=single", "task=jobs", *overrides]
        whole = [_cpu_and_wall_s(ddlsim.run, overrides) for _ in range(repeats)]
        refusal = []
        for _ in range(repeats):
            refusal.append(_cpu_and_wall_s(run_components, build_components(overrides)))
        (whole_cpu, whole_wall), (refusal_cpu, refusal_wall) = _medians(whole), _medians(refusal)
        print(f"{name:34} {whole_cpu:10.3f} {whole_wall:8.3f} {refusal_cpu:14.4f} {refusal_wall:8.4f}  "
              f"{whole[0][2]}...")
    print(load_average())


if __name__ == "__main__":
    main()
