"""Regenerate every figure under docs/figures/, or check that they are current.

    python scripts/regenerate_figures.py                 # redraw all, with the data behind each
    python scripts/regenerate_figures.py --check         # exit 1 naming any figure whose data moved
    python scripts/regenerate_figures.py --only default_training_time

Each figure ``docs/figures/<name>.png`` has its data beside it, ``<name>.csv``: the numbers the
figure plots, computed afresh by the same code. `--check` recomputes them and compares (relative
tolerance 1e-6), without drawing; tests/docs/test_figures_current.py runs it, so a change that
moves a documented figure fails until the figure is redrawn.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
RELATIVE_TOLERANCE = 1e-6


def _sweep_figure(overrides: list[str]) -> Callable[[Path], tuple[pd.DataFrame, Path]]:
    """A training sweep's `training_time` figure and the table it plots."""

    def make(scratch: Path) -> tuple[pd.DataFrame, Path]:
        from ddlsim.app.cli import main
        from ddlsim.report.plots_training import training_table

        sweep = scratch / "sweep"
        status = main([*overrides, f"hydra.sweep.dir={sweep}"])
        if status != 0:
            raise SystemExit(f"regenerate_figures: `ddlsim {' '.join(overrides)}` exited {status}")
        table, _, time_column = training_table(pd.read_csv(sweep / "results.csv"))
        data = table[["series", "x", "num_ranks", time_column]].reset_index(drop=True)
        return data, sweep / "figures" / "training_time.png"

    return make


def _ramp_group_size(scratch: Path) -> tuple[pd.DataFrame, Path]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from ramp_group_size import draw, group_size_times

    sizes, times = group_size_times()
    path = scratch / "ramp_group_size.png"
    draw(sizes, times, path)
    return pd.DataFrame({"ranks": sizes, **{f"{label} (ms)": values for label, values in times.items()}}), path


def _topoopt_fig16(scratch: Path) -> tuple[pd.DataFrame, Path]:
    """TopoOpt Fig. 16 (`experiment=topoopt_fig16`): average and tail iteration time per system and load."""
    from ddlsim.app.sweep.reproduce import reproduce
    from ddlsim.report.references.topoopt_shared import fig16_points

    result = reproduce("topoopt_fig16", scratch / "fig16", ["task.progress=false"])
    picture = next(path for path in result.report.paths if path.name == "fig16.png")
    return fig16_points(result.frame).reset_index(drop=True), picture


def _scale_costs(scratch: Path) -> tuple[pd.DataFrame, Path]:
    """`experiment=scale_costs`: seconds of wall time per iteration by part, per fabric and GPU count."""
    from ddlsim.app.sweep.reproduce import reproduce
    from ddlsim.report.time_split import time_split_table

    result = reproduce("scale_costs", scratch / "scale_costs")
    picture = next(path for path in result.report.paths if path.name == "time_split.png")
    return time_split_table(result.frame), picture


def _sipac(name: str, columns: list[str]) -> Callable[[Path], tuple[pd.DataFrame, Path]]:
    """SiPAC Fig. 9 or 12 (`experiment=<name>`): the figure of its reference and the columns it plots."""

    def make(scratch: Path) -> tuple[pd.DataFrame, Path]:
        from ddlsim.app.sweep.reproduce import reproduce

        result = reproduce(name, scratch / name, [])
        stem = name.removeprefix("sipac_")
        picture = next(path for path in result.report.paths if path.name == f"{stem}.png")
        return result.frame[columns].reset_index(drop=True), picture

    return make


MAKERS: dict[str, Callable[[Path], tuple[pd.DataFrame, Path]]] = {
    "default_training_time": _sweep_figure([]),
    "ramp_megatron_training_time": _sweep_figure(["experiment=ramp_megatron"]),
    "ramp_group_size": _ramp_group_size,
    "topoopt_fig16": _topoopt_fig16,
    "scale_costs_time_split": _scale_costs,


    "sipac_fig9": _sipac("sipac_fig9", ["topology", "num_ranks", "links", "transceivers", "switches"]),
    "sipac_fig12": _sipac("sipac_fig12", ["fabric", "model", "num_ranks", "algorithm", "time_s"]),
}


def differences(expected: pd.DataFrame, actual: pd.DataFrame) -> list[str]:
    """What differs between a figure's recorded data and its data now (empty when current)."""
    if list(expected.columns) != list(actual.columns) or len(expected) != len(actual):
        return [f"columns or rows differ: {list(expected.columns)} x {len(expected)} against "
                f"{list(actual.columns)} x {len(actual)}"]
    found = []
    for column in expected.columns:
        if pd.api.types.is_numeric_dtype(expected[column]) and pd.api.types.is_numeric_dtype(actual[column]):
            close = np.isclose(actual[column], expected[column], rtol=RELATIVE_TOLERANCE, atol=0.0, equal_nan=True)
        else:
            close = (expected[column].astype(str) == actual[column].astype(str)).to_numpy()
        recorded, now = expected[column].tolist(), actual[column].tolist()
        found += [f"{column}[{row}]: recorded {recorded[row]!r}, now {now[row]!r}" for row in np.flatnonzero(~close)]
    return found


def regenerate(name: str, *, check: bool) -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        data, picture = MAKERS[name](Path(scratch))
        csv_path = FIGURES / f"{name}.csv"
        if check:
            if not csv_path.is_file():
                return [f"{csv_path.relative_to(ROOT)} is missing"]
            # the data as its CSV file would hold it: the same dtypes on both sides of the comparison
            return differences(pd.read_csv(csv_path), pd.read_csv(StringIO(data.to_csv(index=False))))
        FIGURES.mkdir(parents=True, exist_ok=True)
        data.to_csv(csv_path, index=False)
        shutil.copyfile(picture, FIGURES / f"{name}.png")
        print(f"wrote {(FIGURES / f'{name}.png').relative_to(ROOT)} and {csv_path.name}")
        return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the recorded data, draw nothing")
    parser.add_argument("--only", nargs="+", choices=sorted(MAKERS), default=sorted(MAKERS))
    args = parser.parse_args(argv)
    stale = {name: found for name in args.only if (found := regenerate(name, check=args.check))}
    for name, found in stale.items():
        print(f"docs/figures/{name}.png is stale ({len(found)} differences; first: {found[0]}); "
              f"run python scripts/regenerate_figures.py --only {name}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
