"""`ddlsim-report PATH`: gather a sweep's rows into one CSV and Parquet file and draw its figures.

    ddlsim-report multirun/2026-01-01/12-00-00                 # a sweep directory
    ddlsim-report outputs/2026-01-01/12-00-00/results.csv     # one run's rows
    ddlsim-report SWEEP --reference ramp_megatron --baseline ramp --out report/

PATH may be a sweep directory (its jobs are gathered afresh, so an interrupted sweep reports
what finished), a run directory or a results file. Files go to --out (default: PATH's
directory): results.csv, results.parquet, side_by_side.csv and figures/*.png|pdf, and, when the
runs wrote them, collectives.csv and collectives.parquet (the long-form per-collective breakdown,
read from the run or the sweep's jobs and written back unchanged; docs/training.md).

A job whose rows fail their done marker's checksum (cut short, emptied, changed) is named on
stderr and left out; the report covers the rest and the exit status is 1. Rerun the sweep into
the same directory to recompute such jobs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ddlsim.report.figures import KINDS
from ddlsim.report.gather import collectives_of, frame_of, inspect_sweep, is_sweep_dir, load_collectives, load_results
from ddlsim.report.make import make_report
from ddlsim.report.references.index import reference_aliases, reference_names
from ddlsim.report.results import write_collectives
from ddlsim.report.settings import ReportSettings


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(prog="ddlsim-report", description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                                      formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("path", type=Path, help="a sweep directory, a run directory, or a results .csv/.parquet")
    command.add_argument("--out", type=Path, default=None, help="where to write (default: PATH's directory)")
    command.add_argument("--figures", nargs="+", default=["auto"], choices=["auto", *KINDS],
                         help="figure kinds to draw (default: chosen from the columns)")
    aliases = ", ".join(f"{alias} = {name}" for alias, name in reference_aliases().items())
    command.add_argument("--reference", default="", choices=["", *reference_names()], metavar="NAME",
                         help="print a side-by-side table with this paper experiment; NAME is one of "
                              f"{', '.join(reference_names(with_aliases=False))} (aliases: {aliases})")
    command.add_argument("--baseline", default="", help="fabric that speed-ups are relative to (default: ramp)")
    command.add_argument("--x", default="auto", help="x column of training figures (default: what varies)")
    command.add_argument("--no-plots", action="store_true", help="write tables only")
    return command


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problems: list[str] = []
    try:
        if args.path.is_dir() and is_sweep_dir(args.path):
            jobs = inspect_sweep(args.path)
            frame = frame_of(jobs)
            collectives = collectives_of(jobs)
            problems = jobs.problems()
        else:
            frame = load_results(args.path)
            collectives = load_collectives(args.path)
    except (FileNotFoundError, pd.errors.EmptyDataError, pd.errors.ParserError, ValueError) as error:
        print(f"ddlsim-report: error: {args.path}: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"ddlsim-report: damaged: {line}", file=sys.stderr)
    if frame.empty:
        print(f"ddlsim-report: error: {args.path} holds no verified rows", file=sys.stderr)
        return 2
    out = args.out or (args.path if args.path.is_dir() else args.path.parent)
    settings = ReportSettings(figures=args.figures, reference=args.reference, baseline=args.baseline, x=args.x,
                              plots=not args.no_plots)
    # A results file given directly is not rewritten in place.
    write_tables = args.path.is_dir() or args.out is not None
    try:
        report = make_report(frame, out, settings, write_tables=write_tables)
    except (KeyError, ValueError) as error:
        print(f"ddlsim-report: error: {error}", file=sys.stderr)
        return 2
    paths = list(report.paths)
    if write_tables and not collectives.empty:
        paths += write_collectives(collectives, out)
    print(report.text)
    if not collectives.empty:
        print(f"{len(collectives)} collective rows of {collectives['collective'].nunique()} collectives")
    for path in paths:
        print(f"wrote {path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
