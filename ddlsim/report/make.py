"""One report from a results table: gathered CSV/Parquet, figures, summary and side-by-side tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ddlsim.report.figures import draw_figures, table_kind
from ddlsim.report.quantities import format_number
from ddlsim.report.reference import side_by_side
from ddlsim.report.results import write_results
from ddlsim.report.search_tables import fabric_comparison
from ddlsim.report.settings import ReportSettings
from ddlsim.report.summary import collective_summary, hybrid_summary, training_summary

FIGURES_DIR = "figures"
SIDE_BY_SIDE_NAME = "side_by_side.csv"


@dataclass
class Report:
    text: str
    paths: list[Path] = field(default_factory=list)


def summary_text(frame: pd.DataFrame, settings: ReportSettings) -> str:
    kind = table_kind(frame)
    if kind == "search":
        return fabric_comparison(frame)
    if kind == "training":
        return training_summary(frame, x=settings.x, baseline=settings.baseline)
    if kind == "collective":
        return collective_summary(frame)
    if kind == "hybrid":
        return hybrid_summary(frame)
    return frame.to_string(index=False, float_format=format_number)


def make_report(frame: pd.DataFrame, directory: str | Path, settings: ReportSettings | None = None, *,
                write_tables: bool = True) -> Report:
    """Write the gathered rows, figures and side-by-side table under `directory`; return the text."""
    settings = settings or ReportSettings()
    directory = Path(directory)
    if frame.empty:
        return Report("no result rows to report")
    paths = write_results(frame, directory) if write_tables else []
    parts = [summary_text(frame, settings)]
    if settings.reference:
        text, rows = side_by_side(frame, settings.reference)
        if text:
            parts.append(f"side by side with the paper ({settings.reference}):\n{text}")
            path = directory / SIDE_BY_SIDE_NAME
            rows.to_csv(path, index=False)
            paths.append(path)
    if settings.plots:
        paths += draw_figures(frame, directory / FIGURES_DIR, kinds=settings.figures, x=settings.x,
                              baseline=settings.baseline)
    return Report("\n\n".join(part for part in parts if part), paths)
