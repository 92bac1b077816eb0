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

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ddlsim import units
from ddlsim.report.columns import disambiguate, series_labels
from ddlsim.report.style import figure_legend, legend_outside, save_figure, series_styles, time_unit

PARTS = (("latency_s", "latency (H2H)"), ("transfer_s", "transfer (H2T)"), ("compute_s", "reduction compute"))


def best_per_point(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The fastest algorithm of each fabric at each point, as the papers compare them."""
    table = frame.copy()
    table["series"] = series_labels(table)
    table = table[table["time_s"].notna()]
    table["series"] = disambiguate(table, [*keys, "algorithm"] if "algorithm" in table else keys)
    order = table.sort_values([*keys, "time_s"], kind="stable")
    return order.drop_duplicates(["series", *keys], keep="first").sort_index()


def _panels(count: int) -> tuple[plt.Figure, list[plt.Axes]]:
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns + 1.5, 3.4 * rows), squeeze=False,
                                layout="constrained")
    flat = list(axes.flat)
    for axis in flat[count:]:
        axis.set_visible(False)
    return figure, flat[:count]


def plot_time_vs(frame: pd.DataFrame, x_column: str, directory: Path, stem: str) -> list[Path]:
    table = best_per_point(frame, ["op", "num_ranks", "size_bytes"])
    fixed = "num_ranks" if x_column == "size_bytes" else "size_bytes"
    ops = list(dict.fromkeys(table["op"]))
    styles = series_styles(table["series"])
    unit, scale = time_unit(table["time_s"])
    figure, axes = _panels(len(ops))
    for axis, op in zip(axes, ops, strict=True):
        rows = table[table["op"] == op]
        for label, series in rows.groupby("series", sort=False):
            series = series[series[fixed] == series[fixed].max()].sort_values(x_column)
            axis.plot(series[x_column], series["time_s"] / scale, label=label, **styles[label])
        axis.set_xscale("log", base=2 if x_column == "num_ranks" else 10)
        axis.set_yscale("log")
        axis.set_title(op)
        axis.set_xlabel("message size (bytes)" if x_column == "size_bytes" else "number of ranks")
        axis.set_ylabel(f"completion time ({unit})")
        axis.grid(True, which="both", alpha=0.3)
    if x_column == "size_bytes":
        figure.suptitle("at each fabric's largest number of ranks (best algorithm per point)")
    else:
        figure.suptitle(f"{units.format_size_bytes(table['size_bytes'].max())} messages (best algorithm per point)")
    figure_legend(figure, axes[-1], "fabric")
    return save_figure(figure, directory, stem)


def plot_allreduce_breakdown(frame: pd.DataFrame, directory: Path) -> list[Path]:
    table = best_per_point(frame[frame["op"] == "all_reduce"], ["num_ranks", "size_bytes"])
    if table.empty or not set(dict(PARTS)) <= set(table.columns):
        return []
    table = table[table["num_ranks"] == table.groupby("series")["num_ranks"].transform("max")]
    table = table.sort_values(["size_bytes", "series"], kind="stable")
    names = [f"{units.format_size_bytes(size)} {label} ({algorithm})" for size, label, algorithm in
             zip(table["size_bytes"], table["series"], table.get("algorithm", table["series"]), strict=True)]
    figure, axis = plt.subplots(figsize=(9, 0.35 * len(names) + 1.5))
    left = pd.Series(0.0, index=table.index)
    colors = plt.get_cmap("Set2").colors
    total = table[[column for column, _ in PARTS]].sum(axis=1).where(lambda s: s > 0, 1.0)
    for (column, label), color in zip(PARTS, colors, strict=False):
        share = table[column] / total * 100.0
        axis.barh(names, share, left=left, label=label, color=color)
        left += share
    for index, time_s in enumerate(table["time_s"]):
        axis.text(101, index, units.format_time_s(time_s), va="center", fontsize=7)
    axis.set_xlim(0, 115)
    axis.set_xlabel("share of all-reduce completion time (%)")
    axis.invert_yaxis()
    legend_outside(axis)
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
    figure, axes = _panels(len(scales))
    for axis, ranks in zip(axes, scales, strict=True):
        rows = table[table["num_ranks"] == ranks]
        for label, series in rows.groupby("series", sort=False):
            series = series.sort_values("cu_bandwidth_bps")
            axis.plot(series["cu_bandwidth_bps"] / units.GIGA, series["time_s"] / scale, label=label,
                      **styles[label])
        axis.set_xscale("log", base=2)
        ticks = sorted(rows["cu_bandwidth_bps"].unique() / units.GIGA)
        axis.set_xticks(ticks, [f"{tick:g}" for tick in ticks])
        axis.set_yscale("log")
        axis.set_title(f"p = {ranks}")
        axis.set_xlabel("per-CU bandwidth (Gb/s)")
        axis.set_ylabel(f"job completion time ({unit})")
        axis.grid(True, which="both", alpha=0.3)
    figure_legend(figure, axes[-1], "fabric")
    return save_figure(figure, directory, "hybrid_time_vs_bandwidth")
