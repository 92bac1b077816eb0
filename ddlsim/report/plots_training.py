"""Training figures (RAMP Figs. 16 and 17): time per fabric, communication share, speed-up.

- ``training_time``: time to accuracy (or iteration time when the rows have no step count)
  against the x column, one line per fabric (log scale only when the times span decades);
- ``comm_share``: exposed communication as a share of the iteration, grouped bars;
- ``speedup``: each fabric's time divided by the baseline fabric's, grouped bars, labelled.

The GPU count is written under each x tick when it changes along x.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ddlsim.report.columns import disambiguate, pick_x, series_labels, x_label
from ddlsim.report.quantities import format_alike, format_number, time_unit
from ddlsim.report.style import (
    LABEL_FONT_SIZE,
    bar_style,
    choose_scale,
    legend_outside,
    line_style,
    save_figure,
    series_name,
    series_styles,
    style_axis,
)


def training_table(frame: pd.DataFrame, x: str = "auto") -> tuple[pd.DataFrame, str, str]:
    """Rows that completed, with ``series`` and ``x`` columns; also the x column and time column."""
    table = frame.copy()
    if "status" in table:
        table = table[table["status"].fillna("ok") == "ok"]
    table = table[table["iteration_time_s"].notna()]
    table["series"] = series_labels(table)
    x_column = pick_x(table, x)
    table["x"] = table[x_column]
    for extra in ("overlap", "algorithm", "device"):
        if extra in table and table.duplicated(["series", "x"]).any() and table[extra].nunique() > 1:
            table["series"] = table["series"] + " " + table[extra].astype(str)
    table["series"] = disambiguate(table, ["x"])
    finite = "time_to_accuracy_s" in table and table["time_to_accuracy_s"].notna().all() and len(table)
    return table, x_column, "time_to_accuracy_s" if finite else "iteration_time_s"


def _x_positions(table: pd.DataFrame, x_column: str) -> tuple[list, dict]:
    values = sorted(table["x"].dropna().unique(), reverse=x_column == "model_target_loss")
    return values, {value: index for index, value in enumerate(values)}


def _gpus(counts: pd.Series) -> str:
    low, high = int(counts.min()), int(counts.max())
    return f"{low:,} GPUs" if low == high else f"{low:,}-{high:,} GPUs"


def _set_x_ticks(axis: plt.Axes, table: pd.DataFrame, x_column: str, values: list) -> None:
    """Ticks at the x values; the GPU count under each when it changes along x."""
    labels = format_alike(values)
    if x_column != "num_ranks" and "num_ranks" in table and table["num_ranks"].nunique() > 1:
        counts = table.groupby("x")["num_ranks"]
        labels = [f"{label}\n{_gpus(counts.get_group(value))}" for label, value in zip(labels, values, strict=True)]
    axis.set_xticks(range(len(values)), labels, fontsize="small" if len(values) > 6 else None)
    axis.set_xlim(-0.5, len(values) - 0.5)
    axis.set_xlabel(x_label(x_column))


def plot_training_time(table: pd.DataFrame, x_column: str, time_column: str, directory: Path) -> list[Path]:
    values, position = _x_positions(table, x_column)
    unit, scale = time_unit(table[time_column])
    styles = series_styles(table["series"])
    figure, axis = plt.subplots(figsize=(max(7.0, 0.75 * len(values) + 3.5), 4.5))
    for label, rows in table.groupby("series", sort=False):
        rows = rows.sort_values("x", key=lambda column: column.map(position))
        axis.plot(rows["x"].map(position), rows[time_column] / scale, label=series_name(label), linewidth=1.5,
                  markersize=6, **line_style(styles[label]))
    _set_x_ticks(axis, table, x_column, values)
    what = "time to accuracy" if time_column == "time_to_accuracy_s" else "iteration time"
    style_axis(axis, "y", table[time_column] / scale, f"{what} ({unit})")
    axis.grid(True, which="major", alpha=0.3)
    legend_outside(axis, "fabric")
    return save_figure(figure, directory, "training_time")


def _grouped_bars(axis: plt.Axes, table: pd.DataFrame, value_column: str, labels: list[str], position: dict,
                  styles: dict, *, bottom: float = 0.0, annotate: bool = False) -> None:
    width = 0.8 / max(len(labels), 1)
    for offset, label in enumerate(labels):
        rows = table[table["series"] == label]
        xs = rows["x"].map(position).to_numpy(dtype=float) - 0.4 + width * (offset + 0.5)
        heights = rows[value_column].to_numpy(dtype=float) - bottom
        bars = axis.bar(xs, heights, width=width, bottom=bottom, label=series_name(label), **bar_style(styles[label]))
        if annotate:
            axis.bar_label(bars, labels=[format_number(value, 3) for value in rows[value_column]],
                           fontsize=LABEL_FONT_SIZE, padding=2)


def _bar_figure(values: list, labels: list[str]) -> tuple[plt.Figure, plt.Axes]:
    bars = max(len(values) * len(labels), 1)
    return plt.subplots(figsize=(max(7.0, 0.42 * bars + 3.0), 4.2))


def plot_comm_share(table: pd.DataFrame, x_column: str, directory: Path) -> list[Path]:
    values, position = _x_positions(table, x_column)
    labels = list(dict.fromkeys(table["series"]))
    table = table.assign(comm_percent=table["comm_fraction"] * 100.0)
    figure, axis = _bar_figure(values, labels)
    _grouped_bars(axis, table, "comm_percent", labels, position, series_styles(labels))
    _set_x_ticks(axis, table, x_column, values)
    style_axis(axis, "y", table["comm_percent"], "exposed communication (% of iteration)", scale="linear")
    axis.set_ylim(0, min(100.0, max(float(table["comm_percent"].max()) * 1.12, 1.0)))
    axis.grid(True, axis="y", alpha=0.3)
    legend_outside(axis, "fabric")
    return save_figure(figure, directory, "comm_share")


def speedup_table(table: pd.DataFrame, time_column: str, baseline: str) -> pd.DataFrame:
    """Per x and fabric: that fabric's time divided by the baseline fabric's at the same x."""
    base = table[table["series"] == baseline].set_index("x")[time_column]
    others = table[table["series"] != baseline].copy()
    others["speedup"] = others[time_column].to_numpy() / others["x"].map(base).to_numpy()
    return others[others["speedup"].notna()]


def choose_baseline(table: pd.DataFrame, requested: str = "") -> str:
    labels = list(dict.fromkeys(table["series"]))
    if requested and requested in labels:
        return requested
    for label in labels:
        if requested and label.startswith(requested):
            return label
    return labels[0]


def plot_speedup(table: pd.DataFrame, x_column: str, time_column: str, baseline: str, directory: Path) -> list[Path]:
    speedups = speedup_table(table, time_column, baseline)
    if speedups.empty:
        return []
    values, position = _x_positions(table, x_column)
    labels = list(dict.fromkeys(speedups["series"]))
    figure, axis = _bar_figure(values, labels)
    scale = choose_scale([*speedups["speedup"], 1.0])
    axis.set_yscale(scale)
    # On a log axis a ratio bar starts at 1 (no speed-up), on a linear one at 0.
    _grouped_bars(axis, speedups, "speedup", labels, position, series_styles(table["series"]),
                  bottom=1.0 if scale == "log" else 0.0, annotate=True)
    _set_x_ticks(axis, table, x_column, values)
    style_axis(axis, "y", [*speedups["speedup"], 1.0], f"speed-up of {series_name(baseline)} (x)", scale=scale)
    low, high = axis.get_ylim()
    below = scale == "log" and speedups["speedup"].min() < 1.0  # labels under bars that go down from 1
    axis.set_ylim(low / 2.0 if below else low, high * (2.0 if scale == "log" else 1.12))
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.grid(True, axis="y", alpha=0.3)
    legend_outside(axis, f"{series_name(baseline)} vs")
    return save_figure(figure, directory, "speedup")


def training_figures(frame: pd.DataFrame, directory: Path, *, x: str = "auto", baseline: str = "") -> list[Path]:
    """Draw the three training figures; return the files written."""
    table, x_column, time_column = training_table(frame, x)
    if table.empty:
        return []
    paths = plot_training_time(table, x_column, time_column, directory)
    paths += plot_comm_share(table, x_column, directory)
    if table["series"].nunique() > 1:
        paths += plot_speedup(table, x_column, time_column, choose_baseline(table, baseline), directory)
    return paths
