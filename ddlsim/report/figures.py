"""Pick and draw the figures a results table calls for, by the columns it has."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ddlsim.report.plots_collectives import collective_figures, hybrid_figures
from ddlsim.report.plots_training import training_figures
from ddlsim.report.settings import FIGURE_KINDS
from ddlsim.report.time_split import plot_time_split

KINDS = FIGURE_KINDS
NO_FIGURES = ("search",)  # plan-search rows: the report prints the fabrics' best plans instead


def table_kind(frame: pd.DataFrame) -> str | None:
    """``search`` (plan-search rows, no figures), ``training`` (train task rows), ``hybrid``
    (hybrid-parallel rows), ``collective``, or None."""
    columns = set(frame.columns)
    if "plan_rank" in columns:
        return "search"
    if "iteration_time_s" in columns:
        return "training"
    if {"cu_bandwidth_bps", "time_s", "num_ranks"} <= columns:
        return "hybrid"
    if {"op", "size_bytes", "num_ranks", "time_s"} <= columns:
        return "collective"
    return None


def draw_figures(frame: pd.DataFrame, directory: Path, *, kinds: Sequence[str] = ("auto",), x: str = "auto",
                 baseline: str = "") -> list[Path]:
    """Draw every figure the table supports (or the `kinds` asked for) under `directory`."""
    if frame.empty:
        return []
    wanted = [table_kind(frame)] if list(kinds) == ["auto"] else list(kinds)
    unknown = [kind for kind in wanted if kind is not None and kind not in KINDS + NO_FIGURES]
    if unknown:
        raise ValueError(f"unknown figure kind {unknown[0]!r}; choose auto or one of {', '.join(KINDS)}")
    paths: list[Path] = []
    for kind in wanted:
        if kind == "training":
            paths += training_figures(frame, directory, x=x, baseline=baseline)
        elif kind == "collective":
            paths += collective_figures(frame, directory)
        elif kind == "hybrid":
            paths += hybrid_figures(frame, directory)
        elif kind == "time_split":
            paths += plot_time_split(frame, directory)
    return paths
