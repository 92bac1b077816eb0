"""An interrupted sweep, rerun into the same directory, skips finished jobs and loses no row."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd

from ddlsim.app.sweep.callbacks import DONE_NAME, count_finished, job_finished, mark_job_finished

SEEDS = list(range(6))
# `seed` is a root key every task accepts; each value is one job with identical rows, so the
# overrides column is what tells the rows apart.
SWEEP = ["-m", "experiment=single", "task=collective", f"seed={','.join(map(str, SEEDS))}"]


def ddlsim(*args, sweep_dir, **kwargs):
    command = [sys.executable, "-m", "ddlsim.app.cli", *args, f"hydra.sweep.dir={sweep_dir}", "report.plots=false"]
    return subprocess.run(command, cwd=sweep_dir.parent, capture_output=True, text=True, timeout=600, **kwargs)


def seeds_in(gathered: pd.DataFrame) -> list[int]:
    per_job = gathered.groupby("job", sort=False)["overrides"].first()
    return sorted(int(text.split("seed=")[1].split()[0]) for text in per_job)


def test_marker_names_the_overrides_and_the_checksum_of_the_rows(tmp_path):
    (tmp_path / "results.csv").write_text("a\n1\n")
    assert not job_finished(tmp_path, ["seed=1"])
    mark_job_finished(tmp_path, ["seed=1", "report.plots=false"], rows=1)
    assert job_finished(tmp_path, ["seed=1"])  # report.* and output.* change no row
    assert job_finished(tmp_path, ["seed=1", "output.resume=true"])
    assert not job_finished(tmp_path, ["seed=2"])
    (tmp_path / "results.csv").write_text("a\n2\n")  # same size, other rows
    assert not job_finished(tmp_path, ["seed=1"])
    (tmp_path / "results.csv").unlink()
    assert not job_finished(tmp_path, ["seed=1"])


def test_rerun_after_a_simulated_kill_recomputes_only_the_lost_jobs(tmp_path):
    sweep_dir = tmp_path / "sweep"
    first = ddlsim(*SWEEP, sweep_dir=sweep_dir)
    assert first.returncode == 0, first.stderr
    rows_per_job = len(pd.read_csv(sweep_dir / "0" / "results.csv"))
    # A kill during jobs 2 and 4: job 2 died before writing anything, job 4 while writing its
    # rows (a stray temporary file, no marker); the gathered files were never written.
    for job in ("2", "4"):
        (sweep_dir / job / DONE_NAME).unlink()
    (sweep_dir / "2" / "results.csv").unlink()
    (sweep_dir / "4" / ".results.csv.abc.tmp").write_text("op,fab")
    for name in ("results.csv", "results.parquet"):
        (sweep_dir / name).unlink()
    kept = {job: (sweep_dir / job / "results.csv").stat().st_mtime_ns for job in ("0", "1", "3", "5")}

    second = ddlsim(*SWEEP, sweep_dir=sweep_dir)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("already finished, skipped") == 4
    assert {job: (sweep_dir / job / "results.csv").stat().st_mtime_ns for job in kept} == kept
    gathered = pd.read_csv(sweep_dir / "results.csv")
    assert len(gathered) == len(SEEDS) * rows_per_job
    assert seeds_in(gathered) == SEEDS
    assert pd.read_parquet(sweep_dir / "results.parquet").shape == gathered.shape


def test_rerun_after_a_real_kill_loses_and_duplicates_nothing(tmp_path):
    sweep_dir = tmp_path / "sweep"
    command = [sys.executable, "-m", "ddlsim.app.cli", *SWEEP, f"hydra.sweep.dir={sweep_dir}", "report.plots=false"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 300
    while count_finished(sweep_dir) < 1 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished_before = count_finished(sweep_dir)

    rerun = ddlsim(*SWEEP, sweep_dir=sweep_dir)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("already finished, skipped") == finished_before
    gathered = pd.read_csv(sweep_dir / "results.csv")
    assert seeds_in(gathered) == SEEDS
    assert gathered.groupby("job").size().nunique() == 1  # every job contributed its rows once
