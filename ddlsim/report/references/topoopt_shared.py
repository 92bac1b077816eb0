"""TopoOpt Fig. 16 (Sec. 5.6) beside the paper: a shared cluster of 432 servers, 5 to 27 jobs.

Rows come from `experiment=topoopt_fig16` (`task=topoopt_jobs`): one per (system, job, placement
seed). Per system, load and seed, the *average* iteration time is the mean over the jobs of each
job's mean iteration time, and the *tail* the 99th percentile over every iteration of every job
(``pooled_iteration_time_p99_s``; rows written before that column existed: the 99th percentile
over the jobs of each job's own). Each ratio to TopoOpt is taken per seed and load, averaged over
both, and shown with its spread over the seeds (the range of the per-seed means). The paper gives
its results as ratios in the text (no values are read off the figure); they are in
`configs/reference/papers.yaml`.
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


def fig16_points(frame: pd.DataFrame, by_seed: bool = False) -> pd.DataFrame:
    """One row per (system, number of jobs), and seed with `by_seed`: ``mean_s``, ``p99_s`` and the
    largest ``slowdown``; without `by_seed` the seeds' points are averaged."""
    frame = frame if "seed" in frame.columns else frame.assign(seed=0)
    pooled = "pooled_iteration_time_p99_s" in frame.columns
    grouped = frame.groupby(["fabric", "num_jobs", "seed"], sort=True)
    points = grouped.agg(mean_s=("iteration_time_s", "mean"),
                         p99_s=("pooled_iteration_time_p99_s", "first") if pooled else
                         ("iteration_time_p99_s", lambda s: float(np.percentile(s, TAIL_PERCENTILE))),
                         max_slowdown=("slowdown", "max")).reset_index()
    if by_seed:
        return points
    return points.groupby(["fabric", "num_jobs"], sort=True).agg(
        mean_s=("mean_s", "mean"), p99_s=("p99_s", "mean"), max_slowdown=("max_slowdown", "max")).reset_index()


def _ratios(points: pd.DataFrame, column: str, over: str, base: str) -> pd.Series:
    """`over` / `base` of `column` per (seed, number of jobs) of `fig16_points(..., by_seed=True)`."""
    import pandas as pd

    table = points.pivot(index=["seed", "num_jobs"], columns="fabric", values=column)
    if not {over, base} <= set(table.columns):
        return pd.Series(dtype=float)
    return (table[over] / table[base]).dropna()


def _with_spread(ratio: pd.Series) -> str:
    """The mean ratio, its range over the loads, and over the seeds' means when there are several."""
    loads = ratio.groupby(level="num_jobs").mean()
    text = f"{ratio.mean():.3g}x (per load {span(loads)}"
    seeds = ratio.groupby(level="seed").mean()
    if seeds.size > 1:
        text += f"; {seeds.size} placement seeds {span(seeds)}"
    return text + ")"


@define_reference("topoopt_fig16", expects=JOBS_ROWS,
                    figures=lambda frame, directory: fig16_figures(frame, directory),
                    tables=lambda frame: fig16_table(frame), summary=False)
def topoopt_fig16(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    points = fig16_points(frame, by_seed=True)
    topoopt, fat, oversub = (paper.systems(role)[0] for role in ("topoopt", "fat_tree", "oversub_fat_tree"))
    rows = []
    for key, column, over in (("mean_fat_tree_over_topoopt", "mean_s", fat),
                              ("mean_oversub_over_topoopt", "mean_s", oversub),
                              ("tail_fat_tree_over_topoopt", "p99_s", fat),
                              ("tail_oversub_over_topoopt", "p99_s", oversub)):
        ratio = _ratios(points, column, over, topoopt)
        if not ratio.empty:
            rows.append(stated(paper.value(key), _with_spread(ratio)))
    tail = _ratios(points, "p99_s", fat, topoopt)
    if not tail.empty:
        most = tail.index.get_level_values("num_jobs").max()
        full = tail.xs(most, level="num_jobs")
        seeds = f" ({full.size} seeds {span(full)})" if full.size > 1 else ""
        rows.append(stated(paper.value("tail_fat_tree_over_topoopt_full"), f"{full.mean():.3g}x at {most} jobs{seeds}"))
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
