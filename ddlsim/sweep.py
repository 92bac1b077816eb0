"""Hydra callback that gathers every job's rows of a `-m` sweep into one table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ddlsim.report.results import CSV_NAME, write_results


def job_directories(sweep_dir: Path) -> list[Path]:
    """Job output directories that hold a results file, in job order (numeric names first)."""
    found = [path.parent for path in sweep_dir.glob(f"*/{CSV_NAME}")]
    return sorted(found, key=lambda path: (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name))


def job_overrides(job_dir: Path) -> str:
    """The command-line overrides of one job, as Hydra saved them (``a=1 b=2``)."""
    path = job_dir / ".hydra" / "overrides.yaml"
    return " ".join(str(item) for item in OmegaConf.load(path)) if path.is_file() else ""


def gather_results(sweep_dir: str | Path) -> pd.DataFrame:
    """Concatenate the jobs' ``results.csv`` under `sweep_dir`, led by ``job`` and ``overrides``."""
    sweep_dir = Path(sweep_dir)
    frames = []
    for directory in job_directories(sweep_dir):
        frame = pd.read_csv(directory / CSV_NAME)
        frame.insert(0, "job", directory.name)
        frame.insert(1, "overrides", job_overrides(directory))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


class GatherResults(Callback):
    """At the end of a sweep, write the sweep directory's own results.csv and results.parquet."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        frame = gather_results(sweep_dir)
        if frame.empty:
            return
        for path in write_results(frame, sweep_dir):
            print(f"gathered {len(frame)} rows from {frame['job'].nunique()} jobs into {path}")
