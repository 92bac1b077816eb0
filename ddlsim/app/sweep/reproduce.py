"""Run a paper reproduction (``experiment=<seed>_<figure>``) in this process and write its report.

    result = reproduce("ramp_fig15", "reproductions/ramp_fig15", ["fabric=ramp"])
    result.frame, result.report.text, result.report.paths

This is `ddlsim experiment=<name>` without a Hydra app: the sweep runs job after job in this
process (`ddlsim.app.sweep.inprocess.run_sweep`, the same rows as the command line), then the
report writes results.csv/.parquet, side_by_side.csv and the figures under the directory and
returns the summary and side-by-side text. The scripts in ``scripts/`` are its command line
(`reproduce_main`); ``ddlsim experiment=<name>`` runs the same sweep with resume, progress and
any launcher.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ddlsim.report.make import Report


@dataclass
class Reproduction:
    experiment: str
    frame: pd.DataFrame
    report: Report
    elapsed_s: float


def reproduce(experiment: str, out: str | Path, overrides: Sequence[str] = (), *,
              progress: Callable[[int, int, list[str]], Any] | None = None) -> Reproduction:
    """Run ``experiment=<experiment>`` with `overrides` (narrowing or changing its sweep) and report it under `out`."""
    from ddlsim.app.sweep.callbacks import report_settings
    from ddlsim.app.sweep.inprocess import run_sweep, sweep_config
    from ddlsim.report.make import make_report

    arguments = [f"experiment={experiment}", *overrides]
    started = time.perf_counter()
    frame = run_sweep(arguments, progress=progress)
    elapsed = time.perf_counter() - started
    report = make_report(frame, Path(out), report_settings(sweep_config(arguments)))
    return Reproduction(experiment, frame, report, elapsed)


def reproduce_main(experiments: str | Sequence[str], description: str, argv: Sequence[str] | None = None) -> int:
    """Command line of the reproduction scripts: run each experiment and print its report.

    ``python scripts/<script>.py [--out DIR] [override ...]`` writes under DIR (default
    ``reproductions/<experiment>``; with several experiments, ``DIR/<experiment>``).
    """
    import argparse
    import sys

    from tqdm import tqdm

    from ddlsim.core.errors import DdlsimError

    names = [experiments] if isinstance(experiments, str) else list(experiments)
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None,
                        help="output directory (default: reproductions/<experiment>)")
    parser.add_argument("overrides", nargs="*", help="extra config overrides, e.g. fabric=ramp,superpod")
    args = parser.parse_args(argv)
    for name in names:
        out = (Path("reproductions") / name if args.out is None
               else args.out / name if len(names) > 1 else args.out)
        try:
            with tqdm(desc=name, unit="job", leave=False, disable=None) as bar:
                def progress(done: int, total: int, point: list[str], bar=bar) -> None:
                    bar.total = total
                    bar.update(1)
                    bar.set_postfix_str(" ".join(point)[-60:])

                result = reproduce(name, out, args.overrides, progress=progress)
        except DdlsimError as error:
            print(f"{Path(sys.argv[0]).name}: error: {' '.join(str(error).split())}", file=sys.stderr)
            return 2
        print(result.report.text)
        print(f"\n{len(result.frame)} rows from {result.frame['job'].nunique()} jobs in {result.elapsed_s:.1f} s")
        for path in result.report.paths:
            print(f"wrote {path}")
    return 0
