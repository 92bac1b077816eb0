"""Collective figures (RAMP Figs. 18, 20 and 21; SiPAC Figs. 10 and 13).

- ``collective_time_vs_size``: completion time against message size, one panel per op, one
  line per fabric (its best algorithm), at each fabric's largest rank count;
- ``collective_time_vs_scale``: completion time against number of ranks, one panel per op,
  at the largest message size;
- ``allreduce_breakdown``: latency / transfer / reduction-compute shares of all-reduce per
  fabric and message size, the total time written beside each bar (Fig. 20);
- ``hybrid_time_vs_bandwidth``: job completion time of the hybrid-parallel pattern against
  per-CU bandwidth, one panel per scale (SiPAC Fig. 13).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ddlsim.core import units
from ddlsim.report.columns import disambiguate, series_labels
from ddlsim.report.display import display_table
from ddlsim.report.quantities import format_duration, time_unit
from ddlsim.report.style import (
    LABEL_FONT_SIZE,
    count_tick,
    figure_legend,
    legend_outside,
    line_style,
    op_name,
    panels,
    plain_tick,
    save_figure,
    series_name,
    series_styles,
    size_tick,
    style_axis,
)

PARTS = (("latency_s", "latency (H2H)"), ("transfer_s", "transfer (H2T)"), ("compute_s", "reduction compute"))


def best_per_point(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The fastest algorithm of each fabric at each point, as the papers compare them."""
    table = frame.copy()
    table["series"] = series_labels(table)
    table = table[table["time_s"].notna()]
    table["series"] = disambiguate(table, [*keys, "algorithm"] if "algorithm" in table else keys)
    order = table.sort_values([*keys, "time_s"], kind="stable")
    return order.drop_duplicates(["series", *keys], keep="first").sort_index()


def algorithm_name(algorithm: object) -> str:
    return display_table().algorithm(str(algorithm))


def _size_axis(axis: plt.Axes, sizes: pd.Series) -> None:
    ticks = sorted(sizes.unique())
    style_axis(axis, "x", ticks, "message size", scale="log" if len(ticks) > 1 else "linear",
               ticks=ticks if len(ticks) <= 8 else None, tick_label=size_tick, from_zero=False)


def _count_axis(axis: plt.Axes, counts: pd.Series, label: str) -> None:
    ticks = sorted(counts.unique())
    style_axis(axis, "x", ticks, label, scale="log2" if len(ticks) > 1 else "linear",
               ticks=ticks if len(ticks) <= 8 else None, tick_label=count_tick, from_zero=False)


def _ranks_text(table: pd.DataFrame) -> str:
    counts = sorted(table.groupby("series")["num_ranks"].max().unique())
    return f"{counts[0]:,} ranks" if len(counts) == 1 else "each fabric's largest number of ranks"


def plot_time_vs(frame: pd.DataFrame, x_column: str, directory: Path, stem: str) -> list[Path]:
    table = best_per_point(frame, ["op", "num_ranks", "size_bytes"])
    fixed = "num_ranks" if x_column == "size_bytes" else "size_bytes"
    ops = list(dict.fromkeys(table["op"]))
    styles = series_styles(table["series"])
    shown = table[table[fixed] == table.groupby("series")[fixed].transform("max")]
    unit, scale = time_unit(shown["time_s"])
    figure, axes = panels(len(ops))
    for axis, op in zip(axes, ops, strict=True):
        rows = shown[shown["op"] == op]
        for label, series in rows.groupby("series", sort=False):
            series = series.sort_values(x_column)
            axis.plot(series[x_column], series["time_s"] / scale, label=series_name(label),
                      **line_style(styles[label]))
        if x_column == "size_bytes":
            _size_axis(axis, table["size_bytes"])
        else:
            _count_axis(axis, table["num_ranks"], "number of ranks")
        style_axis(axis, "y", shown["time_s"] / scale, f"completion time ({unit})")
        axis.set_title(op_name(op))
        axis.grid(True, which="major", alpha=0.3)
    if x_column == "size_bytes":
        figure.suptitle(f"At {_ranks_text(table)}; best algorithm of each fabric per point")
    else:
        figure.suptitle(f"{size_tick(table['size_bytes'].max())} messages; best algorithm of each fabric per point")
    figure_legend(figure, axes, "fabric")
    return save_figure(figure, directory, stem)


def plot_allreduce_breakdown(frame: pd.DataFrame, directory: Path) -> list[Path]:
    table = best_per_point(frame[frame["op"] == "all_reduce"], ["num_ranks", "size_bytes"])
    if table.empty or not set(dict(PARTS)) <= set(table.columns):
        return []
    table = table[table["num_ranks"] == table.groupby("series")["num_ranks"].transform("max")]
    table = table.sort_values(["size_bytes", "series"], kind="stable")
    algorithms = table["algorithm"] if "algorithm" in table else pd.Series("", index=table.index)
    names = [f"{size_tick(size)}, {series_name(label)}" + (f": {algorithm_name(algorithm)}" if algorithm else "")
             for size, label, algorithm in zip(table["size_bytes"], table["series"], algorithms, strict=True)]
    figure, axis = plt.subplots(figsize=(9, 0.32 * len(names) + 1.6))
    left = pd.Series(0.0, index=table.index)
    colors = plt.get_cmap("Set2").colors
    total = table[[column for column, _ in PARTS]].sum(axis=1).where(lambda s: s > 0, 1.0)
    for (column, label), color in zip(PARTS, colors, strict=False):
        share = table[column] / total * 100.0
        axis.barh(names, share, left=left, label=label, color=color)
        left += share
    for index, time_s in enumerate(table["time_s"]):
        axis.text(101, index, format_duration(time_s), va="center", fontsize=LABEL_FONT_SIZE)
    axis.set_xlim(0, 100)
    axis.set_xticks(range(0, 101, 20))
    axis.set_xlabel("share of all-reduce completion time (%)")
    axis.set_ylabel(f"message size, fabric: algorithm, at {_ranks_text(table)}")
    axis.invert_yaxis()
    axis.text(101, -0.9, "total", fontsize=LABEL_FONT_SIZE, fontweight="bold")
    legend_outside(axis, "part")
    legend = axis.get_legend()
    if legend is not None:
        legend.set_bbox_to_anchor((1.12, 1.0))
    return save_figure(figure, directory, "allreduce_breakdown")


def collective_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    paths: list[Path] = []
    if frame["size_bytes"].nunique() > 1:
        paths += plot_time_vs(frame, "size_bytes", directory, "collective_time_vs_size")
    if frame["num_ranks"].nunique() > 1:
        paths += plot_time_vs(frame, "num_ranks", directory, "collective_time_vs_scale")
    if (frame["op"] == "all_reduce").any():
        paths += plot_allreduce_breakdown(frame, directory)
    return paths


def hybrid_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    table = frame[frame["time_s"].notna()].copy()
    table["series"] = series_labels(table)
    table["series"] = disambiguate(table, ["num_ranks", "cu_bandwidth_bps"])
    scales = sorted(table["num_ranks"].unique())
    styles = series_styles(table["series"])
    unit, scale = time_unit(table["time_s"])
    figure, axes = panels(len(scales))
    for axis, ranks in zip(axes, scales, strict=True):
        rows = table[table["num_ranks"] == ranks]
        for label, series in rows.groupby("series", sort=False):
            series = series.sort_values("cu_bandwidth_bps")
            axis.plot(series["cu_bandwidth_bps"] / units.GIGA, series["time_s"] / scale, label=series_name(label),
                      **line_style(styles[label]))
        ticks = sorted(rows["cu_bandwidth_bps"].unique() / units.GIGA)
        style_axis(axis, "x", ticks, "per-CU bandwidth (Gb/s)", scale="log2" if len(ticks) > 1 else "linear",
                   ticks=ticks, tick_label=plain_tick, from_zero=False)
        style_axis(axis, "y", rows["time_s"] / scale, f"job completion time ({unit})")
        axis.set_title(f"p = {ranks:,} CUs")
        axis.grid(True, which="major", alpha=0.3)
    figure_legend(figure, axes, "fabric")
    return save_figure(figure, directory, "hybrid_time_vs_bandwidth")
