"""Where the wall time of an iteration goes at scale: the ``time_split`` figure and its table.

A training row's iteration time is its compute, exposed communication, pipeline bubble and the
at-scale costs (interference, stragglers, framework work; `ddlsim.training.at_scale`). Failures,
checkpoints and restarts stretch the wall time on top: a job with goodput g needs
iteration_time / g of wall time per iteration, so failures cost iteration_time x (1/g - 1) per
iteration (`ddlsim.training.failures`).

- `time_split_table`: one row per fabric and GPU count, seconds of wall time per iteration by part;
- `plot_time_split`: one panel per fabric, a stacked bar per GPU count of each part's share of the
  wall time, the wall seconds per iteration written above each bar.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ddlsim.report.columns import series_labels
from ddlsim.report.quantities import format_duration
from ddlsim.report.style import LABEL_FONT_SIZE, count_tick, panels, save_figure, series_name

# (column of seconds per iteration, what the legend calls it, colour), bottom to top
PARTS = (
    ("compute_time_s", "compute", "#4c72b0"),
    ("exposed_comm_time_s", "exposed communication", "#dd8452"),
    ("bubble_time_s", "pipeline bubble", "#8c8c8c"),
    ("interference_s", "interference", "#c44e52"),
    ("straggler_s", "stragglers", "#8172b3"),
    ("framework_s", "framework work", "#937860"),
    ("failure_s", "failures, checkpoints, restarts", "#da8bc3"),
)
SHORT_NAMES = ("compute", "exposed comm", "bubble", "interference", "stragglers", "framework", "failures")
FAILURE_COLUMN = "failure_s"
WALL_COLUMN = "wall_time_per_iteration_s"
NEEDED = ("iteration_time_s", "goodput", "num_ranks", *(column for column, _, _ in PARTS if column != FAILURE_COLUMN))
# the parts must add up to the iteration time; what is left over beyond this share is an unnamed part
UNEXPLAINED_SHARE = 1e-9


def time_split_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Seconds of wall time per iteration by part, per fabric (``series``) and GPU count (``num_ranks``).

    Raises ValueError when the rows lack a column of the split or when the parts do not add up
    to the iteration time (a cost the split does not name).
    """
    missing = [column for column in NEEDED if column not in frame]
    if missing:
        raise ValueError(f"the time_split figure needs the column {missing[0]!r} (rows of task=train)")
    table = frame.copy()
    if "status" in table:
        table = table[table["status"].fillna("ok") == "ok"]
    table = table[table["iteration_time_s"].notna()]
    table = table.assign(series=series_labels(table))
    table[FAILURE_COLUMN] = table["iteration_time_s"] * (1.0 / table["goodput"] - 1.0)
    named = table[[column for column, _, _ in PARTS if column != FAILURE_COLUMN]].sum(axis=1)
    unexplained = (table["iteration_time_s"] - named).abs() / table["iteration_time_s"]
    if (unexplained > UNEXPLAINED_SHARE).any():
        row = table[unexplained > UNEXPLAINED_SHARE].iloc[0]
        raise ValueError(f"the parts of the iteration on {row['series']} at {int(row['num_ranks']):,} GPUs add up to "
                         f"{named[row.name]!r} s, not its iteration time {row['iteration_time_s']!r} s")
    table[WALL_COLUMN] = table["iteration_time_s"] / table["goodput"]
    order = {label: index for index, label in enumerate(dict.fromkeys(table["series"]))}  # as the sweep ran them
    table = table.assign(order=table["series"].map(order)).sort_values(["order", "num_ranks"], kind="stable")
    columns = ["series", "num_ranks", *(column for column, _, _ in PARTS), WALL_COLUMN]
    return table[columns].reset_index(drop=True)


def time_split_text(split: pd.DataFrame) -> str:
    """The table as the report prints it: per fabric and GPU count, the wall time of an iteration
    and each part's share of it."""
    lines = []
    for series, rows in split.groupby("series", sort=False):
        lines.append(f"where the wall time of an iteration goes on {series_name(series)}:")
        header = ["GPUs", "wall/iteration", *SHORT_NAMES]
        body = [[f"{int(row['num_ranks']):,}", format_duration(row[WALL_COLUMN], 3),
                 *(f"{100 * row[column] / row[WALL_COLUMN]:.1f}%" for column, _, _ in PARTS)]
                for _, row in rows.iterrows()]
        widths = [max(len(cell) for cell in column) for column in zip(header, *body, strict=True)]
        lines += ["  " + "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
                  for line in [header, *body]]
    return "\n".join(lines)


def plot_time_split(frame: pd.DataFrame, directory: Path) -> list[Path]:
    """Stacked shares of the wall time per GPU count, one panel per fabric (module docstring)."""
    split = time_split_table(frame)
    if split.empty:
        return []
    fabrics = list(dict.fromkeys(split["series"]))
    figure, axes = panels(len(fabrics), columns=len(fabrics), width=4.6, height=4.0, share_y=True)
    for axis, fabric in zip(axes, fabrics, strict=True):
        rows = split[split["series"] == fabric]
        positions = np.arange(len(rows))
        bottom = np.zeros(len(rows))
        for column, label, colour in PARTS:
            share = 100.0 * rows[column].to_numpy() / rows[WALL_COLUMN].to_numpy()
            axis.bar(positions, share, bottom=bottom, width=0.7, color=colour, label=label)
            bottom += share
        for position, wall_s in zip(positions, rows[WALL_COLUMN], strict=True):
            axis.annotate(format_duration(wall_s, 3), (position, 100.0), xytext=(0, 2), textcoords="offset points",
                          ha="center", va="bottom", fontsize=LABEL_FONT_SIZE)
        axis.set_xticks(positions, [count_tick(count) for count in rows["num_ranks"]])
        axis.set_xlabel("number of GPUs")
        axis.set_ylim(0, 112)
        axis.set_yticks(range(0, 101, 20))
        axis.set_ylabel("share of wall time per iteration (%)")
        axis.set_title(series_name(fabric))
        axis.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    # the top part first, as the bars stack
    figure.legend(handles[::-1], labels[::-1], title="part of the iteration", loc="outside right center",
                  frameon=False, fontsize="small", title_fontsize="small")
    return save_figure(figure, directory, "time_split")
