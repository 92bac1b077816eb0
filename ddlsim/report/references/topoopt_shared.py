"""TopoOpt Fig. 16 (Sec. 5.6) beside the paper: a shared cluster of 432 servers, 5 to 27 jobs.

Rows come from `experiment=topoopt_fig16` (`task=topoopt_jobs`): one per (system, job). Per system
and load, the *average* iteration time is the mean over the jobs of each job's mean iteration
time, and the *tail* the 99th percentile over the jobs of each job's own 99th-percentile
iteration time. The paper gives its results as ratios in the text (no values are read off the
figure); they are in `configs/reference/papers.yaml`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import Comparison, define_reference, ours_only, span, stated

if TYPE_CHECKING:
    import pandas as pd

TAIL_PERCENTILE = 99.0
JOBS_ROWS = {"iteration_time_s": (), "iteration_time_p99_s": (), "alone_iteration_time_s": (), "num_jobs": (),
             "fabric": ()}


def fig16_points(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, number of jobs): ``mean_s``, ``p99_s`` and the largest ``slowdown``."""
    grouped = frame.groupby(["fabric", "num_jobs"], sort=True)
    points = grouped.agg(mean_s=("iteration_time_s", "mean"),
                         p99_s=("iteration_time_p99_s", lambda s: float(np.percentile(s, TAIL_PERCENTILE))),
                         max_slowdown=("slowdown", "max"))
    return points.reset_index()


def _ratios(points: pd.DataFrame, column: str, over: str, base: str) -> pd.Series:
    import pandas as pd

    table = points.pivot(index="num_jobs", columns="fabric", values=column)
    if not {over, base} <= set(table.columns):
        return pd.Series(dtype=float)
    return (table[over] / table[base]).dropna()


@define_reference("topoopt_fig16", expects=JOBS_ROWS,
                    figures=lambda frame, directory: fig16_figures(frame, directory),
                    tables=lambda frame: fig16_table(frame), summary=False)
def topoopt_fig16(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    points = fig16_points(frame)
    topoopt, fat, oversub = (paper.systems(role)[0] for role in ("topoopt", "fat_tree", "oversub_fat_tree"))
    rows = []
    for key, column, over in (("mean_fat_tree_over_topoopt", "mean_s", fat),
                              ("mean_oversub_over_topoopt", "mean_s", oversub),
                              ("tail_fat_tree_over_topoopt", "p99_s", fat),
                              ("tail_oversub_over_topoopt", "p99_s", oversub)):
        ratio = _ratios(points, column, over, topoopt)
        if not ratio.empty:
            rows.append(stated(paper.value(key), f"{ratio.mean():.3g}x (per load {span(ratio)})"))
    tail = _ratios(points, "p99_s", fat, topoopt)
    if not tail.empty:
        rows.append(stated(paper.value("tail_fat_tree_over_topoopt_full"),
                           f"{tail.iloc[-1]:.3g}x at {tail.index[-1]} jobs"))
    for system, part in frame.groupby("fabric", sort=True):
        worst = part.loc[part["slowdown"].idxmax()]
        rows.append(ours_only(f"{system}: largest slowdown of a job beside the others",
                              f"{worst['slowdown']:.3g}x ({worst['model']}, {worst['num_jobs']} jobs)"))
    return rows


def fig16_table(frame: pd.DataFrame) -> str:
    points = fig16_points(frame).assign(mean_ms=lambda t: t["mean_s"] * 1e3, p99_ms=lambda t: t["p99_s"] * 1e3)
    table = points.pivot(index="num_jobs", columns="fabric", values=["mean_ms", "p99_ms"])
    models = frame.pivot_table(index="model", columns="fabric", values="iteration_time_s", aggfunc="mean") * 1e3
    return ("Fig. 16: average and 99th-percentile iteration time (ms) against the number of jobs\n"
            + table.round(2).to_string() + "\n\nmean iteration time per model (ms), over every load\n"
            + models.round(2).to_string())


def fig16_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart

    points = fig16_points(frame)
    return line_chart([Panel(points, "(a) average", y=Quantity("mean_s", "average iteration time", "time_s")),
                       Panel(points, "(b) 99th percentile", y=Quantity("p99_s", "99th-percentile iteration time",
                                                                        "time_s"))],
                      Quantity("num_jobs", "number of jobs (16 servers each)", "count", scale="linear"),
                      Quantity("mean_s", "iteration time", "time_s"), "fabric", directory, "fig16",
                      legend_title="interconnect", columns=2,
                      title="TopoOpt Fig. 16 (ddlsim): shared cluster of 432 servers, d = 8, B = 100 Gb/s")
