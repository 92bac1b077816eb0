"""How long `task=jobs` takes to refuse more jobs than the fabric holds (issue 35: at most 2 s).

    python benchmarks/bench_jobs_refusal.py [--repeats 5] [--tiny]

Each case is ``ddlsim.run`` of ``experiment=single task=jobs`` with a job count the fabric cannot
hold; the job count is checked against the fabric's slots before any job's model or workload is
built, so a million jobs are refused as fast as ten thousand. Prints, per case, the median CPU
time (``time.process_time``) of the whole call, composition included, and of the refusal alone
(the same call's components built first, then `run_components`), with the error's first words.
"""

from __future__ import annotations

import argparse
import statistics
import time

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


def _cpu_s(call, argument) -> tuple[float, str]:
    start = time.process_time()
    try:
        call(argument)
    except InfeasibleError as error:
        return time.process_time() - start, str(error)[:60]
    raise AssertionError("the case was not refused")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="one repeat of the first case (the test suite's smoke run)")
    args = parser.parse_args()
    repeats, cases = (1, dict(list(CASES.items())[:1])) if args.tiny else (args.repeats, CASES)
    print(f"{'case':34} {'run cpu s':>10} {'refusal cpu s':>14}  error")
    for name, overrides in cases.items():
        overrides = ["experiment=single", "task=jobs", *overrides]
        whole = [_cpu_s(ddlsim.run, overrides) for _ in range(repeats)]
        refusal = []
        for _ in range(repeats):
            refusal.append(_cpu_s(run_components, build_components(overrides)))
        print(f"{name:34} {statistics.median(s for s, _ in whole):10.3f} "
              f"{statistics.median(s for s, _ in refusal):14.4f}  {whole[0][1]}...")


if __name__ == "__main__":
    main()
