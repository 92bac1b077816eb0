"""One report from a results table: gathered CSV/Parquet, figures, summary and side-by-side tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ddlsim.report.figures import draw_figures, table_kind
from ddlsim.report.quantities import format_number
from ddlsim.report.references.index import check_rows, get_reference, side_by_side
from ddlsim.report.results import write_results
from ddlsim.report.search_tables import fabric_comparison
from ddlsim.report.settings import ReportSettings
from ddlsim.report.summary import collective_summary, hybrid_summary, training_summary
from ddlsim.report.time_split import time_split_table, time_split_text

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
    """Write the gathered rows, figures and side-by-side table under `directory`; return the text.

    With a reference (``report.reference``), its own tables come before the side-by-side table,
    and its own figures replace the automatic ones unless `settings.figures` names kinds.
    """
    settings = settings or ReportSettings()
    directory = Path(directory)
    if frame.empty:
        return Report("no result rows to report")
    reference = get_reference(settings.reference) if settings.reference else None
    if reference is not None:
        check_rows(frame, settings.reference)
    paths = write_results(frame, directory) if write_tables else []
    # A reference with tables of its own says what the rows mean better than a dump of them.
    own_tables = reference is not None and reference.tables is not None and (
        table_kind(frame) is None or not reference.summary)
    parts = [] if own_tables else [summary_text(frame, settings)]
    if "time_split" in settings.figures:
        parts.append(time_split_text(time_split_table(frame)))
    if reference is not None:
        if reference.tables is not None:
            parts.append(reference.tables(frame))
        text, rows = side_by_side(frame, reference.name)
        if text:
            parts.append(f"side by side with the paper ({settings.reference}):\n{text}")
            path = directory / SIDE_BY_SIDE_NAME
            rows.to_csv(path, index=False)
            paths.append(path)
    if settings.plots:
        if reference is not None and reference.figures is not None and list(settings.figures) == ["auto"]:
            paths += reference.figures(frame, directory / FIGURES_DIR)
        else:
            paths += draw_figures(frame, directory / FIGURES_DIR, kinds=settings.figures, x=settings.x,
                                  baseline=settings.baseline)
    return Report("\n\n".join(part for part in parts if part), paths)
