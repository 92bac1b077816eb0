"""Read result rows back: one results file, or every job of a sweep directory.

A sweep directory (``multirun/<date>/<time>/``) holds one directory per job, each with its own
``results.csv`` written atomically when the job finished. Gathering concatenates them in job
order, led by ``job`` and ``overrides`` columns, so that a sweep interrupted and rerun still
gives every point exactly once.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from ddlsim.report.results import CSV_NAME, PARQUET_NAME


def job_directories(sweep_dir: Path) -> list[Path]:
    """Job output directories that hold a results file, in job order (numeric names first)."""
    found = [path.parent for path in Path(sweep_dir).glob(f"*/{CSV_NAME}")]
    return sorted(found, key=lambda path: (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name))


def job_overrides(job_dir: Path) -> str:
    """The command-line overrides of one job, as Hydra saved them (``a=1 b=2``)."""
    path = job_dir / ".hydra" / "overrides.yaml"
    return " ".join(str(item) for item in OmegaConf.load(path)) if path.is_file() else ""


def gather_results(sweep_dir: str | Path) -> pd.DataFrame:
    """Concatenate the jobs' ``results.csv`` under `sweep_dir`, led by ``job`` and ``overrides``."""
    frames = []
    for directory in job_directories(Path(sweep_dir)):
        frame = pd.read_csv(directory / CSV_NAME)
        frame.insert(0, "job", directory.name)
        frame.insert(1, "overrides", job_overrides(directory))
        frames.append(frame)
    frames = [frame for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_results(path: str | Path) -> pd.DataFrame:
    """Rows from a ``.csv`` or ``.parquet`` file, a single run's directory, or a sweep directory.

    A sweep directory is always gathered afresh from its jobs, so that a partial sweep's
    rows are read even when the gathered file is missing or stale.
    """
    path = Path(path)
    if path.is_file():
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    if not path.is_dir():
        raise FileNotFoundError(f"no results at {path}: give a results.csv, a run directory or a sweep directory")
    if job_directories(path):
        return gather_results(path)
    for name in (CSV_NAME, PARQUET_NAME):
        if (path / name).is_file():
            return load_results(path / name)
    raise FileNotFoundError(f"{path} holds no {CSV_NAME}, and no job directory with one")
