"""Read result rows back: one results file, or the verified jobs of a sweep directory.

A sweep directory (``multirun/<date>/<time>/``) holds one directory per job. A job writes its
``results.csv`` (and ``results.parquet``) atomically, then a done marker (`DONE_NAME`) that
records its number, its overrides and the SHA-256 of every file it wrote. The sweep directory
records the sweep's definition (`DEFINITION_NAME`: the overrides of every job). Gathering
takes, in the definition's order, each job whose marker matches its overrides and whose files
still have the recorded checksums; a job cut short, emptied or edited afterwards is *damaged*
and named, never read, and a directory left from another sweep is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from ddlsim.core.files import sha256_of
from ddlsim.report.results import (
    COLLECTIVES_CSV_NAME,
    COLLECTIVES_PARQUET_NAME,
    CSV_NAME,
    PARQUET_NAME,
    read_collectives,
)

if TYPE_CHECKING:  # pandas loads where rows are read, not when a sweep job starts
    import pandas as pd

DONE_NAME = ".ddlsim_done.json"
DEFINITION_NAME = ".ddlsim_sweep_definition.json"
# Overrides of these sections change what is written or drawn, never a row.
NON_ROW_SECTIONS = ("output", "report")


def override_key(override: str) -> str:
    """The dotted key of a command-line override (``+fabric.x=1`` -> ``fabric.x``)."""
    return override.lstrip("+~").split("=", 1)[0].split("@", 1)[0]


def job_identity(overrides: Sequence[str]) -> list[str]:
    """The overrides that decide a job's rows: all but those of `NON_ROW_SECTIONS`."""
    return [item for item in overrides
            if override_key(item).split(".", 1)[0].split("/", 1)[0] not in NON_ROW_SECTIONS]


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def marker_problem(job_dir: Path, marker: dict[str, Any] | None) -> str | None:
    """Why the rows of `job_dir` cannot be trusted, or None when every file matches its marker."""
    if marker is None:
        return "no done marker (the job did not finish)"
    files = marker.get("files")
    if not isinstance(files, dict) or (CSV_NAME not in files and PARQUET_NAME not in files):
        return "its done marker records no file checksums"
    for name, digest in sorted(files.items()):
        path = job_dir / name
        if not path.is_file():
            return f"{name} is missing"
        if sha256_of(path) != digest:
            return f"{name} does not match the checksum in its done marker (cut short or changed)"
    return None


@dataclass
class SweepJobs:
    """The jobs of a sweep directory, sorted out.

    `good` lists (job directory, marker) in the sweep's order; `damaged` maps a job directory
    to what is wrong with it; `missing` lists the definition's jobs with no finished directory
    (their overrides, joined); `stale` counts directories of another sweep. A sweep written
    before sweeps recorded checksums (no definition file) is read as it is: its jobs are
    `unverified`, and a file that cannot be read is damaged.
    """

    good: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    damaged: dict[Path, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    stale: int = 0
    unverified: list[Path] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per damaged or missing job."""
        lines = [f"job {path.name} ({path}): {reason}" for path, reason in self.damaged.items()]
        lines += [f"job with overrides '{overrides}' has no finished directory" for overrides in self.missing]
        return lines


def _hydra_overrides(job_dir: Path) -> list[str]:
    """The overrides Hydra saved for a job (``.hydra/overrides.yaml``), for sweeps without markers."""
    path = job_dir / ".hydra" / "overrides.yaml"
    return job_identity([str(item) for item in OmegaConf.load(path)]) if path.is_file() else []


def _job_key(path: Path) -> tuple[int, int, str]:
    return (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name)


def inspect_sweep(sweep_dir: str | Path) -> SweepJobs:
    """Sort the job directories of `sweep_dir` into good, damaged, missing and stale."""
    sweep_dir = Path(sweep_dir)
    directories = sorted({path.parent for name in (CSV_NAME, PARQUET_NAME, DONE_NAME)
                          for path in sweep_dir.glob(f"*/{name}")}, key=_job_key)
    definition = read_json(sweep_dir / DEFINITION_NAME)
    wanted = definition.get("jobs") if definition else None
    state = SweepJobs()
    good: list[tuple[Path, dict[str, Any]]] = []
    for directory in directories:
        marker = read_json(directory / DONE_NAME)
        if wanted is not None and marker is not None and marker.get("overrides") not in wanted:
            state.stale += 1
            continue
        problem = marker_problem(directory, marker)
        if problem is None:
            good.append((directory, marker))
        else:
            state.damaged[directory] = problem
    if wanted is None:  # an older sweep: no definition, no checksums; take what can be read
        legacy = [path for path, reason in state.damaged.items() if (path / CSV_NAME).is_file()
                  and reason.startswith(("no done marker", "its done marker records no file checksums"))]
        for path in legacy:
            del state.damaged[path]
            marker = read_json(path / DONE_NAME) or {}
            overrides = marker.get("overrides") or _hydra_overrides(path)
            good.append((path, {**marker, "overrides": overrides, "files": {CSV_NAME: None}}))
        state.unverified = legacy
        state.good = sorted(good, key=lambda item: _job_key(item[0]))
        return state
    unused = list(good)
    for index, job in enumerate(wanted):
        matches = [item for item in unused if item[1].get("overrides") == job]
        own = [item for item in matches if str(item[1].get("job")) == str(index)]
        if own or matches:
            chosen = (own or matches)[0]
            unused.remove(chosen)
            state.good.append(chosen)
        else:
            state.missing.append(" ".join(job))
    return state


def frame_of(jobs: SweepJobs) -> pd.DataFrame:
    """The good jobs' rows, led by ``job`` and ``overrides`` columns (an unreadable unverified job
    moves to `jobs.damaged`)."""
    import pandas as pd

    frames = []
    for directory, marker in list(jobs.good):
        try:
            if CSV_NAME in marker["files"]:
                frame = pd.read_csv(directory / CSV_NAME)
            else:
                frame = pd.read_parquet(directory / PARQUET_NAME)
        except (ValueError, OSError) as error:  # pandas' EmptyDataError and ParserError are ValueErrors
            if directory not in jobs.unverified:
                raise
            jobs.good.remove((directory, marker))
            jobs.damaged[directory] = f"{CSV_NAME} cannot be read ({' '.join(str(error).split())})"
            continue
        labels = pd.DataFrame({"job": directory.name, "overrides": " ".join(marker.get("overrides", ()))},
                              index=frame.index)
        frames.append(pd.concat([labels, frame], axis=1))  # one concat: a wide frame stays unfragmented
    frames = [frame for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def collectives_of(jobs: SweepJobs) -> pd.DataFrame:
    """The long-form collectives (`collectives.csv`) of the good jobs, led by a ``job`` column, in
    the sweep's order; empty when no job wrote any. A job's files were verified with its rows; the
    Parquet file is read where there is one (its column types are the run's own, empty texts included)."""
    import pandas as pd

    frames = []
    for directory, marker in jobs.good:
        name = next((name for name in (COLLECTIVES_PARQUET_NAME, COLLECTIVES_CSV_NAME)
                     if name in (marker.get("files") or {})), None)
        if name is not None:
            frame = read_collectives(directory / name)
            frames.append(pd.concat([pd.DataFrame({"job": directory.name}, index=frame.index), frame], axis=1))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_collectives(path: str | Path) -> pd.DataFrame:
    """The long-form collectives of a run directory, of the run a results file belongs to (the
    file beside it), a ``collectives.csv``/``.parquet`` itself, or a sweep directory's verified
    jobs; empty when there are none."""
    import pandas as pd

    path = Path(path)
    if path.is_file() and path.name in (COLLECTIVES_CSV_NAME, COLLECTIVES_PARQUET_NAME):
        return read_collectives(path)
    directory = path.parent if path.is_file() else path
    if path.is_dir() and is_sweep_dir(path):
        return collectives_of(inspect_sweep(path))
    for name in (COLLECTIVES_PARQUET_NAME, COLLECTIVES_CSV_NAME):
        if (directory / name).is_file():
            return read_collectives(directory / name)
    return pd.DataFrame()


def gather_results(sweep_dir: str | Path) -> pd.DataFrame:
    """The verified rows of every finished job under `sweep_dir`, in the sweep's order."""
    return frame_of(inspect_sweep(sweep_dir))


def is_sweep_dir(path: Path) -> bool:
    return (path / DEFINITION_NAME).is_file() or any(path.glob(f"*/{DONE_NAME}")) or any(path.glob(f"*/{CSV_NAME}"))


def load_results(path: str | Path) -> pd.DataFrame:
    """Rows from a ``.csv`` or ``.parquet`` file, a single run's directory, or a sweep directory.

    A sweep directory is always gathered afresh from its verified jobs, so that a partial
    sweep's rows are read even when the gathered file is missing or stale (use `inspect_sweep`
    to learn which jobs were left out and why).
    """
    import pandas as pd

    path = Path(path)
    if path.is_file():
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    if not path.is_dir():
        raise FileNotFoundError(f"no results at {path}: give a results.csv, a run directory or a sweep directory")
    if is_sweep_dir(path):
        return gather_results(path)
    for name in (CSV_NAME, PARQUET_NAME):
        if (path / name).is_file():
            return load_results(path / name)
    raise FileNotFoundError(f"{path} holds no {CSV_NAME}, and no job directory with one")
