"""Sweeps: skip finished jobs on a rerun, show progress, gather and report at the end.

Every job of a ``-m`` sweep writes its rows atomically into its own directory
(``<sweep dir>/<job number>/results.csv``), then a small marker naming its overrides. Rerunning
the same sweep into the same directory (``hydra.sweep.dir=...``) skips every job whose marker
matches its overrides, so an interrupted sweep resumes where it stopped and no row is computed
twice or lost. `output.resume=false` recomputes everything.

Two Hydra callbacks, set in ``configs/config.yaml``:

- `SweepProgress` prints ``[done/total]`` after each job, with elapsed time and an estimate of
  the time left; it counts finished markers on disk, so it also works with the joblib launcher's
  worker processes;
- `GatherResults` gathers all jobs' rows into the sweep directory's results.csv and
  results.parquet, draws the figures, and prints the summary and side-by-side tables.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ddlsim.report.gather import gather_results
from ddlsim.report.make import make_report
from ddlsim.report.results import CSV_NAME
from ddlsim.report.settings import ReportSettings

DONE_NAME = ".ddlsim_done.json"
SWEEP_NAME = ".ddlsim_sweep.json"


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(payload, sort_keys=True))
    os.replace(temporary, path)


def job_finished(job_dir: str | Path, overrides: Sequence[str]) -> bool:
    """True when `job_dir` holds complete rows of a job with exactly these overrides."""
    job_dir = Path(job_dir)
    marker = job_dir / DONE_NAME
    if not (marker.is_file() and (job_dir / CSV_NAME).is_file()):
        return False
    try:
        return json.loads(marker.read_text()).get("overrides") == list(overrides)
    except (OSError, ValueError):
        return False


def mark_job_finished(job_dir: str | Path, overrides: Sequence[str], rows: int) -> None:
    """Record, after its rows are written, that the job with these overrides is complete."""
    _atomic_json(Path(job_dir) / DONE_NAME, {"overrides": list(overrides), "rows": rows})


def count_finished(sweep_dir: str | Path) -> int:
    return sum(1 for _ in Path(sweep_dir).glob(f"*/{DONE_NAME}"))


def count_jobs(config: DictConfig) -> int | None:
    """How many jobs the basic sweeper will launch for `config`, or None for other sweepers."""
    try:
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser

        if not str(config.hydra.sweeper.get("_target_", "")).endswith("BasicSweeper"):
            return None
        params = config.hydra.sweeper.get("params") or {}
        arguments = [f"{key}={value}" for key, value in params.items()] + list(config.hydra.overrides.task)
        batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(arguments), None)
        return sum(len(batch) for batch in batches)
    except Exception:  # noqa: BLE001 - progress is a convenience; never break a sweep over it
        return None


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"


class SweepProgress(Callback):
    """Print ``[done/total]`` with elapsed and remaining time after every job of a sweep."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        total = count_jobs(config)
        _atomic_json(sweep_dir / SWEEP_NAME, {"total": total, "start": time.time(),
                                              "already_done": count_finished(sweep_dir)})
        print(f"ddlsim: sweep of {total if total is not None else 'an unknown number of'} jobs into {sweep_dir}",
              flush=True)

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            state = json.loads((sweep_dir / SWEEP_NAME).read_text())
        except (OSError, ValueError):
            state = {"total": None, "start": time.time(), "already_done": 0}
        done = count_finished(sweep_dir)
        total = state.get("total")
        elapsed = time.time() - float(state.get("start", time.time()))
        fresh = done - int(state.get("already_done", 0))
        eta = ""
        if total and fresh > 0 and done < total:
            eta = f", about {_duration(elapsed / fresh * (total - done))} left"
        overrides = " ".join(config.hydra.overrides.task)
        print(f"ddlsim: [{done}/{total if total is not None else '?'}] {overrides} "
              f"({_duration(elapsed)} elapsed{eta})", flush=True)


def report_settings(config: DictConfig) -> ReportSettings:
    node = config.get("report")
    if node is None:
        return ReportSettings()
    values = OmegaConf.to_container(node, resolve=True)
    assert isinstance(values, dict)
    return ReportSettings(**{key: value for key, value in values.items() if key in ReportSettings.__annotations__})


class GatherResults(Callback):
    """At the end of a sweep, write the sweep directory's results, figures and summary."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        frame = gather_results(sweep_dir)
        if frame.empty:
            print(f"ddlsim: no job of the sweep in {sweep_dir} wrote rows")
            return
        report = make_report(frame, sweep_dir, report_settings(config))
        print(f"\ngathered {len(frame)} rows from {frame['job'].nunique()} jobs\n")
        print(report.text)
        for path in report.paths:
            print(f"wrote {path}")
