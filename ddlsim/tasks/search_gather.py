"""The end of a search sweep: gather the jobs' rows and say which fabric wins (Hydra callback).

`configs/experiment/search.yaml` puts `GatherSearch` in place of `ddlsim.sweep.GatherResults`,
whose generic training report expects one row per (fabric, x), where a search writes its best
plans: this callback writes the same gathered ``results.csv`` and ``results.parquet`` and prints
`search_report.fabric_comparison` instead. Loaded by Hydra only, so `import ddlsim.tasks` does
not import Hydra.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.experimental.callback import Callback

from ddlsim.report.gather import gather_results
from ddlsim.report.results import write_results
from ddlsim.tasks.search_report import fabric_comparison


class GatherSearch(Callback):
    """At the end of a search sweep, gather the jobs' rows and compare the fabrics' best plans."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        with warnings.catch_warnings():  # pandas finds wide result files "fragmented"; harmless here
            warnings.simplefilter("ignore", pd.errors.PerformanceWarning)
            frame = gather_results(sweep_dir)
        if frame.empty:
            print(f"ddlsim: no job of the search in {sweep_dir} wrote rows")
            return
        paths = write_results(frame, sweep_dir)
        print(f"\ngathered {len(frame)} rows from {frame['job'].nunique()} jobs\n")
        print(fabric_comparison(frame))
        for path in paths:
            print(f"wrote {path}")
