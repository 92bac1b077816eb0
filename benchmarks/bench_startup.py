"""Start-up time of ddlsim's entry points, each in fresh processes (issue 15).

    python benchmarks/bench_startup.py [--repeats 7] [--job-repeats 3] [--no-job] [--importtime]

Every row starts a new interpreter `--repeats` times; the rows take turns (round-robin), so that
a change of load on a shared machine hits every row alike. Printed per row: the median CPU time
of the process (user + system of the child, from ``resource.getrusage(RUSAGE_CHILDREN)``), the
median and the maximum wall time beside it, the wall time it adds over bare ``python -c pass``,
and its ratio to ``python -c "import torch"``, a yardstick measured in the same run. Times are
CPU time with wall time beside; the load average is the first and the last line. Rows:

- ``python -c pass`` and ``python -c "import torch"``: the yardsticks;
- ``import ddlsim`` (target: adds 0.3 s or less over bare Python), ``import ddlsim.network``;
- one collective price (``estimate_collective``, superpod ring all-reduce of 1 GB on 1,024 ranks);
- one training run through the Python API without Hydra (``ddlsim.run`` of a plain mapping);
- ``ddlsim --help`` (target: 1.5 s or less);
- a refused ``ddlsim experiment=single task=jobs task.num_jobs=1000000`` (issue 35: 2 s of CPU or less;
  it exits with status 3, the status of an infeasible run);
- one TAB of shell completion (Hydra's ``ddlsim -sc install=bash`` calls ``ddlsim -sc query=bash``
  with the line typed so far) for three lines: a group name, a group's options, a group's keys;
- ``ddlsim``, the default job (experiment=quickstart: a sweep of 4 training runs, its CSV,
  Parquet, summary and figures), `--job-repeats` times.

The ``ddlsim`` command is the console script next to this interpreter (else ``python -m
ddlsim.app.cli``); set PYTHONPATH to time a checkout other than the installed one. `--importtime`
also prints the 12 costliest imports (cumulative, ``python -X importtime``) of ``import ddlsim``,
``import ddlsim.network`` and ``ddlsim --help``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from timing import load_average

PRICE = ("from ddlsim import estimate_collective; "
         "estimate_collective(op='all_reduce', size_bytes=10**9, num_ranks=1024, fabric='superpod', algorithm='ring')")
TRAINING_RUN = ("import ddlsim; ddlsim.run({'model': {'name': 'megatron', 'target_loss': 2.2}, 'parallel': {}, "
                "'device': {'name': 'a100_80gb'}, 'compute': {}, 'fabric': {'name': 'ramp'}, "
                "'collective': {'name': 'best'}, 'task': {'name': 'train'}, 'training': {}})")
REFUSED_JOBS = ("experiment=single", "task=jobs", "task.num_jobs=1000000")
COMPLETION_LINES = ("ddlsim fab", "ddlsim fabric=", "ddlsim fabric=ramp fabric.li")


def ddlsim_command() -> list[str]:
    script = Path(sys.executable).with_name("ddlsim")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ddlsim.app.cli"]


@dataclass
class Row:
    label: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)
    target: str = ""
    status: int = 0  # the exit status the command must end with

    def run(self, cwd: Path) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(self.command, cwd=cwd, env={**os.environ, **self.env}, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != self.status or (self.env.get("COMP_LINE") and not done.stdout.strip()):
            raise SystemExit(f"{self.label} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        self.times.append(elapsed)
        self.cpu_times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times)

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(self.cpu_times)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def rows(job_dir: Path) -> tuple[list[Row], Row]:
    ddlsim = ddlsim_command()
    startup = [
        Row("python -c pass", python("pass")),
        Row('python -c "import torch"', python("import torch")),
        Row("import ddlsim", python("import ddlsim"), target="adds <= 0.3 s"),
        Row("import ddlsim.network", python("import ddlsim.network")),
        Row("one collective price", python(PRICE)),
        Row("one training run, Python API (no Hydra)", python(TRAINING_RUN)),
        Row("ddlsim --help", [*ddlsim, "--help"], target="<= 1.5 s"),
        Row("refused task=jobs task.num_jobs=1000000", [*ddlsim, *REFUSED_JOBS], target="CPU <= 2 s", status=3),
        *[Row(f"TAB: {line!r}", [*ddlsim, "-sc", "query=bash"], {"COMP_LINE": line, "COMP_POINT": str(len(line))})
          for line in COMPLETION_LINES],
    ]
    job = Row("ddlsim (default job: 4-run sweep + report)", [*ddlsim, f"hydra.sweep.dir={job_dir}"])
    return startup, job


def print_table(table: list[Row], bare_s: float, torch_s: float) -> None:
    print(f"{'what':48} {'CPU':>8} {'median':>8} {'max':>8} {'over bare':>10} {'x torch':>8}  runs  target")
    for row in table:
        print(f"{row.label:48} {row.median_cpu_s:7.2f}s {row.median_s:7.2f}s {max(row.times):7.2f}s "
              f"{row.median_s - bare_s:+9.2f}s {row.median_s / torch_s:7.2f}x  {len(row.times):4d}  {row.target}")
    print("CPU: median CPU time of the process (user + system); median, max, over bare, x torch: wall time")


def top_imports(command: list[str], count: int = 12) -> list[tuple[float, str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", *command], capture_output=True, text=True)
    costs = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            costs.append((int(match[1]) / 1e6, f"{' ' * (len(match[2]) - 1)}{match[3]}"))
    return sorted(costs, reverse=True)[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--job-repeats", type=int, default=3)
    parser.add_argument("--no-job", action="store_true", help="leave out the default job")
    parser.add_argument("--importtime", action="store_true", help="also print the costliest imports")
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        args.repeats, args.no_job = 1, True
    print(load_average(), flush=True)

    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        startup, job = rows(cwd / "sweep")
        for _ in range(args.repeats):
            for row in startup:
                row.run(cwd)
        for repeat in range(0 if args.no_job else args.job_repeats):
            job.command[-1] = f"hydra.sweep.dir={cwd / f'sweep{repeat}'}"
            job.run(cwd)
    bare_s, torch_s = startup[0].median_s, startup[1].median_s
    print(f"ddlsim start-up, fresh processes, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}; ddlsim command: {' '.join(ddlsim_command())}")
    print_table(startup + ([job] if job.times else []), bare_s, torch_s)
    if args.importtime:
        for label, command in (("import ddlsim", ["-c", "import ddlsim"]),
                               ("import ddlsim.network", ["-c", "import ddlsim.network"]),
                               ("ddlsim --help", ["-m", "ddlsim.app.cli", "--help"])):
            print(f"\ncostliest imports of {label} (cumulative seconds, python -X importtime):")
            for seconds, name in top_imports(command):
                print(f"  {seconds:6.3f}  {name}")
    print(load_average())
    return 0


if __name__ == "__main__":
    sys.exit(main())
