"""Sweeps: skip verified jobs on a rerun, show progress, refuse a foreign directory, gather at the end.

Every job of a ``-m`` sweep writes its rows atomically into its own directory
(``<sweep dir>/<job number>/results.csv``), then a done marker recording its overrides and the
SHA-256 of each file it wrote. Rerunning the same sweep into the same directory
(``hydra.sweep.dir=...``) skips every job whose marker matches its overrides *and* whose files
still match their checksums; a job cut short, emptied or changed is recomputed. So an
interrupted sweep resumes where it stopped and no row is computed twice, lost or corrupted.
`output.resume=false` recomputes everything. Overrides of ``output.*`` and ``report.*`` change
no row, so they are not part of a job's identity.

Two Hydra callbacks (the public `hydra.experimental.callback.Callback` API), set in
``configs/config.yaml``:

- `SweepProgress` prints ``[done/total]`` after each job, with elapsed time and an estimate of
  the time left; it counts markers on disk, so it also works with the joblib launcher's
  worker processes;
- `GatherResults`, before any job, checks that the sweep directory can be written, builds the
  settings every job shares (a bad value there stops the sweep with one line), records the
  sweep's definition (every job's overrides) in the sweep directory and refuses a directory
  that holds a different sweep unless ``output.replace_sweep=true``; at the end it gathers the
  verified jobs' rows into the sweep directory's results.csv and results.parquet, draws the
  figures, and prints the summary and side-by-side tables.
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from ddlsim.core.errors import ConfigError, DdlsimError
from ddlsim.core.files import atomic_write_text, check_writable_files, sha256_of
from ddlsim.report.gather import (
    DEFINITION_NAME,
    DONE_NAME,
    collectives_of,
    frame_of,
    inspect_sweep,
    job_identity,
    marker_problem,
    read_json,
)
from ddlsim.report.results import (
    COLLECTIVES_CSV_NAME,
    COLLECTIVES_PARQUET_NAME,
    CSV_NAME,
    PARQUET_NAME,
    write_collectives,
)
from ddlsim.report.settings import ReportSettings

PROGRESS_NAME = ".ddlsim_sweep.json"
BASIC_SWEEPER = "BasicSweeper"


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(payload, sort_keys=True))


def expand_sweep(arguments: Sequence[str]) -> list[list[str]]:
    """The overrides of every job the basic sweeper launches for `arguments`, in job order.

    `arguments` are the sweeper's ``params`` as ``key=value`` followed by the command line's
    overrides; a later value of a key replaces an earlier one in its place, and the jobs are the
    product of every key's values, as Hydra's basic sweeper makes them.
    """
    choices: dict[str, list[str]] = {}
    for override in OverridesParser.create().parse_overrides(list(arguments)):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise ConfigError(key, override.get_value_element_as_str(),
                                  "the basic sweeper takes lists of values (a,b,c), not ranges or intervals")
            choices[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            choices[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*choices.values())]


def sweep_arguments(config: DictConfig) -> list[str]:
    """The basic sweeper's input: its ``params`` then the command line's overrides."""
    params = config.hydra.sweeper.get("params") or {}
    return [f"{key}={value}" for key, value in params.items()] + list(config.hydra.overrides.task)


def is_basic_sweeper(config: DictConfig) -> bool:
    return str(config.hydra.sweeper.get("_target_", "")).endswith(BASIC_SWEEPER)


def sweep_definition(config: DictConfig) -> dict[str, Any]:
    """What identifies a sweep: every job's row-deciding overrides (or, for another sweeper, its input)."""
    if is_basic_sweeper(config):
        return {"jobs": [job_identity(job) for job in expand_sweep(sweep_arguments(config))]}
    params = OmegaConf.to_container(config.hydra.sweeper.get("params") or {}, resolve=False)
    return {"sweeper": str(config.hydra.sweeper.get("_target_", "")), "params": params,
            "overrides": job_identity(list(config.hydra.overrides.task))}


def job_finished(job_dir: str | Path, overrides: Sequence[str]) -> bool:
    """True when `job_dir` holds verified rows of a job with exactly these row-deciding overrides."""
    job_dir = Path(job_dir)
    marker = read_json(job_dir / DONE_NAME)
    if marker is None or marker.get("overrides") != job_identity(overrides):
        return False
    return marker_problem(job_dir, marker) is None


def clear_job_marker(job_dir: str | Path) -> None:
    """Forget a job's done marker before its rows are (re)written, so a crash leaves it unfinished."""
    (Path(job_dir) / DONE_NAME).unlink(missing_ok=True)


def mark_job_finished(job_dir: str | Path, overrides: Sequence[str], rows: int, *, job: int | str | None = None,
                      files: Iterable[str | Path] = (CSV_NAME,)) -> None:
    """Record, after its rows are written, that the job is complete: its overrides and file checksums."""
    job_dir = Path(job_dir)
    checksums = {Path(name).name: sha256_of(job_dir / Path(name).name) for name in files}
    payload = {"job": job_dir.name if job is None else str(job), "overrides": job_identity(overrides),
               "rows": rows, "files": checksums}
    _atomic_json(job_dir / DONE_NAME, payload)


def count_finished(sweep_dir: str | Path, jobs: Sequence[Sequence[str]] | None = None) -> int:
    """Done markers in `sweep_dir`; with `jobs`, only those of these jobs' overrides."""
    markers = Path(sweep_dir).glob(f"*/{DONE_NAME}")
    if jobs is None:
        return sum(1 for _ in markers)
    wanted = [list(job) for job in jobs]
    return sum(1 for path in markers if (read_json(path) or {}).get("overrides") in wanted)


def _definition_jobs(config: DictConfig) -> list[list[str]] | None:
    try:
        return sweep_definition(config).get("jobs")
    except ConfigError:
        return None


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"


class SweepProgress(Callback):
    """Print ``[done/total]`` with elapsed and remaining time after every job of a sweep."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        jobs = _definition_jobs(config)
        total = len(jobs) if jobs is not None else None
        try:
            sweep_dir.mkdir(parents=True, exist_ok=True)
            _atomic_json(sweep_dir / PROGRESS_NAME, {"total": total, "start": time.time(), "jobs": jobs,
                                                     "already_done": count_finished(sweep_dir, jobs)})
        except OSError:
            return  # GatherResults reports an unusable sweep directory, in one line
        print(f"ddlsim: sweep of {total if total is not None else 'an unknown number of'} jobs into {sweep_dir}",
              flush=True)

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        state = read_json(sweep_dir / PROGRESS_NAME) or {"total": None, "start": time.time(), "already_done": 0}
        done = count_finished(sweep_dir, state.get("jobs"))
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


def claim_sweep_dir(sweep_dir: Path, definition: dict[str, Any], *, replace: bool) -> None:
    """Record `definition` in `sweep_dir`; refuse a directory that holds a different sweep unless `replace`."""
    recorded = read_json(sweep_dir / DEFINITION_NAME)
    if recorded is not None and recorded != definition and not replace:
        jobs = recorded.get("jobs")
        what = f"{len(jobs)} jobs, the first '{' '.join(jobs[0]) if jobs and jobs[0] else ''}'" if jobs else "another"
        raise ConfigError("hydra.sweep.dir", str(sweep_dir),
                          f"holds a different sweep ({what}); choose another directory, or set "
                          "output.replace_sweep=true to replace it (only this sweep's jobs are then gathered)")
    _atomic_json(sweep_dir / DEFINITION_NAME, definition)


class SweepAborted(BaseException):
    """Stops a sweep from a Hydra callback before any job (Hydra turns an `Exception` raised by a
    callback into a warning). `ddlsim.app.cli.main` reports `error` on one line."""

    def __init__(self, error: DdlsimError) -> None:
        super().__init__(str(error))
        self.error = error


def check_common_settings(config: DictConfig) -> None:
    """Build the sweep's shared config (command-line values, swept keys at their defaults), so
    that a bad value or unknown key every job would share stops the sweep before any work. Whether
    an assumption set has an effect depends on the swept keys: each job checks it."""
    from ddlsim.app.runner import build_components

    shared = copy.deepcopy(config)
    with open_dict(shared):
        del shared["hydra"]
    build_components(shared, check_assumptions=False)


class GatherResults(Callback):
    """Check and claim the sweep directory before any job; at the end, write its results, figures and summary."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        output = config.get("output") or {}
        try:
            check_writable_files(sweep_dir, (CSV_NAME, PARQUET_NAME), "hydra.sweep.dir")
            check_common_settings(config)
            sweep_dir.mkdir(parents=True, exist_ok=True)
            claim_sweep_dir(sweep_dir, sweep_definition(config), replace=bool(output.get("replace_sweep", False)))
        except DdlsimError as error:
            raise SweepAborted(error) from error
        for name in (CSV_NAME, PARQUET_NAME, COLLECTIVES_CSV_NAME, COLLECTIVES_PARQUET_NAME):
            (sweep_dir / name).unlink(missing_ok=True)  # gathered afresh at the end; never left stale

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        jobs = inspect_sweep(sweep_dir)
        frame = frame_of(jobs)
        for line in jobs.problems():
            print(f"ddlsim: warning: {line}", flush=True)
        if frame.empty:
            print(f"ddlsim: no job of the sweep in {sweep_dir} wrote rows")
            return
        from ddlsim.report.make import make_report  # pandas and matplotlib, once per sweep

        statuses = frame["status"].astype(str) if "status" in frame else None
        if statuses is not None and statuses.str.startswith(("invalid: ", "failed: ")).all():
            # every job refused its config (or its program exited): nothing to report, and the sweep must not look done
            raise SweepAborted(ConfigError("sweep", str(sweep_dir), f"every job was invalid, e.g. job "
                                           f"{frame['job'].iloc[0]}: {statuses.iloc[0].split(': ', 1)[1]}"))
        try:
            report = make_report(frame, sweep_dir, report_settings(config))
        except ConfigError as error:  # the rows do not match the reference the report was asked for
            raise SweepAborted(error) from error
        bad = int((frame["status"] != "ok").sum()) if "status" in frame else 0
        print(f"\ngathered {len(frame)} rows from {frame['job'].nunique()} jobs"
              + (f"; {bad} could not run (see their status)" if bad else "") + "\n")
        collectives = collectives_of(jobs)
        paths = [*report.paths, *(write_collectives(collectives, sweep_dir) if not collectives.empty else [])]
        print(report.text)
        for path in paths:
            print(f"wrote {path}")
        failed = statuses[statuses.str.startswith("failed: ")] if statuses is not None else ()
        if len(failed):  # a program that exited: the rows are gathered, but the sweep did not succeed
            first = frame.loc[failed.index[0]]
            raise SweepAborted(ConfigError("sweep", str(sweep_dir), f"{len(failed)} job(s) failed, e.g. job "
                                           f"{first['job']}: {failed.iloc[0].removeprefix('failed: ')}"))
