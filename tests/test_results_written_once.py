"""Results are written once (issue 31 step 8): each job's rows once into its own directory, each
sweep's gathered rows once into the sweep directory, a single run's rows once into its directory.
(The default job is a sweep, so its rows are in each job's results.csv, which a rerun skips, and in
the sweep's gathered results.csv: two files, each written once.)

A write is a result file put in place (`os.replace`, how `ddlsim.core.files.atomic_write` ends) or
opened for writing under its own name; an audit hook counts both, whatever code does them.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

from ddlsim.app.cli import main
from ddlsim.report.results import CSV_NAME, PARQUET_NAME

RESULTS = (CSV_NAME, PARQUET_NAME)
_counting: list[Counter] = []  # the counter of the test that is counting, if any


def _for_writing(mode: object, flags: object) -> bool:
    if isinstance(mode, str):  # open()
        return any(flag in mode for flag in "wax+")
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR))  # os.open()


def _count_writes(event: str, args: tuple) -> None:
    if not _counting:
        return
    if event in ("os.replace", "os.rename"):
        path = args[1]
    elif event == "open" and _for_writing(args[1], args[2]):
        path = args[0]
    else:
        return
    if isinstance(path, (str, os.PathLike)) and Path(path).name in RESULTS:
        _counting[-1][Path(path).resolve()] += 1


sys.addaudithook(_count_writes)


def _writes(arguments: list[str]) -> Counter:
    _counting.append(Counter())
    try:
        assert main(arguments) == 0
    finally:
        counted = _counting.pop()
    return counted


def test_the_default_job_writes_each_job_s_rows_and_the_gathered_rows_once(tmp_path):
    sweep_dir = (tmp_path / "sweep").resolve()
    writes = _writes([f"hydra.sweep.dir={sweep_dir}", "report.plots=false"])  # the default job: a sweep of 4
    jobs = sorted(path.parent for path in sweep_dir.glob(f"*/{CSV_NAME}"))
    assert [path.name for path in jobs] == ["0", "1", "2", "3"]
    assert writes == Counter({directory / name: 1 for directory in (*jobs, sweep_dir) for name in RESULTS})
    rerun = _writes([f"hydra.sweep.dir={sweep_dir}", "report.plots=false"])  # every job finished: gathered only
    assert rerun == Counter({sweep_dir / name: 1 for name in RESULTS})


def test_a_single_run_writes_its_rows_once(tmp_path):
    run_dir = (tmp_path / "run").resolve()
    writes = _writes(["experiment=single", "task=collective", "task.sizes=[1MB]", "task.num_ranks=[8]",
                      "output.parquet=false", f"hydra.run.dir={run_dir}"])
    assert writes == Counter({run_dir / CSV_NAME: 1})
