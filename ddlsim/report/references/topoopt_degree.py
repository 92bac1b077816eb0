"""TopoOpt's figures about server degree beside the paper: Fig. 15 (link load spread at d = 4
and 8) and Figs. 27 and 28 (appendix, "Impact of Server Degree").

Rows come from `experiment=topoopt_fig15` (TopoOpt alone, Figs. 12-14's DLRM at batch 128),
``topoopt_fig27`` (Fig. 11's sweep at d = 8) and ``topoopt_fig28`` (TopoOpt alone, d = 2 to 8
at B = 40 and 100 Gb/s). The paper's statements are in `configs/reference/papers.yaml`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import TOPOOPT_ROWS, Comparison, define_reference, ours_only, span, stated

if TYPE_CHECKING:
    import pandas as pd

GIGA = 1e9


def _short(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(short=frame["model"].str.replace("topoopt_", "", regex=False),
                        link_gbps=frame["link_bandwidth_bps"] / GIGA)


# -- Fig. 15 -------------------------------------------------------------------------------------

def _spread(frame: pd.DataFrame) -> pd.DataFrame:
    """How much less the least-loaded link carries than the most-loaded one, per row."""
    rows = frame[frame["mp_max_link_bytes"] > 0]
    return rows.assign(link_spread=1 - rows["mp_min_link_bytes"] / rows["mp_max_link_bytes"])


@define_reference("topoopt_fig15", expects={"mp_max_link_bytes": (), "mp_min_link_bytes": (), "degree": ()},
                    figures=lambda frame, directory: fig15_figures(frame, directory),
                    tables=lambda frame: fig15_table(frame), summary=False)
def topoopt_fig15(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table = _spread(frame)
    table = table[table["batch_per_gpu"] == 128] if "batch_per_gpu" in table else table
    spread = table.groupby("degree")["link_spread"].mean()
    return [stated(paper.value(f"spread_d{degree}"), f"{spread[degree]:.0%}")
            for degree in (4, 8) if degree in spread.index]


def fig15_table(frame: pd.DataFrame) -> str:
    table = _spread(frame).assign(max_mb=lambda t: t["mp_max_link_bytes"] / 1e6,
                                  min_mb=lambda t: t["mp_min_link_bytes"] / 1e6)
    return "Fig. 15: all-to-all bytes per physical link (MB), TopoOpt, B = 100 Gb/s\n" + table[
        ["degree", "batch_per_gpu", "max_mb", "min_mb", "link_spread"]].round(3).to_string(index=False)


def fig15_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart

    spread = Quantity("link_spread", "1 - least / most link traffic")
    return line_chart([Panel(_spread(frame), "all-to-all link load spread", y=spread)],
                      Quantity("degree", "server degree d", "count"), spread, "fabric", directory, "fig15",
                      variant="batch_per_gpu", legend_title="system, batch per GPU",
                      title="TopoOpt Fig. 15 (ddlsim): least vs most loaded link, DLRM all-to-all")


# -- Fig. 27 -------------------------------------------------------------------------------------

@define_reference("topoopt_fig27", expects=TOPOOPT_ROWS,
                    figures=lambda frame, directory: fig27_figures(frame, directory),
                    tables=lambda frame: fig27_table(frame), summary=False)
def topoopt_fig27(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table = _short(frame).pivot_table(index=["short", "link_gbps"], columns="fabric", values="iteration_time_s")
    topoopt, fat, ideal = (paper.systems(role)[0] for role in ("topoopt", "fat_tree", "ideal_switch"))
    if not {topoopt, fat, ideal} <= set(table.columns):
        return []
    over_fat = (table[fat] / table[topoopt]).groupby(level="short").mean()
    over_ideal = (table[topoopt] / table[ideal]).groupby(level="short").mean()
    rows = [stated(paper.value("as_fig11"), f"Fat-tree / TopoOpt {span(over_fat)}, TopoOpt / Ideal {span(over_ideal)}",
                   "per-model means over B of Fat-tree / TopoOpt and TopoOpt / Ideal Switch")]
    rows += [ours_only(f"{model}: Fat-tree / TopoOpt, TopoOpt / Ideal Switch (mean over B)",
                       f"{over_fat[model]:.3g}x, {over_ideal[model]:.3g}x") for model in over_fat.index]
    return rows


def fig27_table(frame: pd.DataFrame) -> str:
    table = _short(frame).pivot_table(index=["short", "link_gbps"], columns="fabric", values="iteration_time_s") * 1e3
    return "Fig. 27: iteration time (ms), 128 servers x 4 GPUs, d = 8\n" + table.round(1).to_string()


def fig27_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Quantity, line_chart, panels_by

    return line_chart(panels_by(frame, "model"), Quantity("link_bandwidth_bps", "link bandwidth B", "bandwidth_bps"),
                      Quantity("iteration_time_s", "iteration time", "time_s"), "fabric", directory, "fig27",
                      legend_title="interconnect", title="TopoOpt Fig. 27 reproduced (ddlsim): 128 servers, d = 8")


# -- Fig. 28 -------------------------------------------------------------------------------------

def _gain(frame: pd.DataFrame) -> pd.Series:
    """Iteration time at the smallest degree over that at the largest, per (model, B)."""
    table = _short(frame).pivot_table(index=["short", "link_gbps"], columns="degree", values="iteration_time_s")
    return table[table.columns.min()] / table[table.columns.max()]


@define_reference("topoopt_fig28", expects=TOPOOPT_ROWS,
                    figures=lambda frame, directory: fig28_figures(frame, directory),
                    tables=lambda frame: fig28_table(frame), summary=False)
def topoopt_fig28(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    if frame["degree"].nunique() < 2:
        return []
    gain = _gain(frame)
    low, high = int(frame["degree"].min()), int(frame["degree"].max())
    linear = high / low
    rows = []
    for key, model in (("candle_linear", "candle"), ("dlrm_superlinear", "dlrm"), ("bert_marginal", "bert")):
        if model in gain.index.get_level_values("short"):
            part = gain.loc[model]
            where = ", ".join(f"{gbps:g} Gb/s {ratio:.3g}x" for gbps, ratio in part.items())
            rows.append(stated(paper.value(key), f"{where} (linear: {linear:g}x)",
                               f"{model}: iteration time at d = {low} / d = {high}"))
    rows.append(ours_only(f"every model and B: iteration time at d = {low} / d = {high}", span(gain)))
    return rows


def fig28_table(frame: pd.DataFrame) -> str:
    table = _short(frame).pivot_table(index=["short", "link_gbps"], columns="degree", values="iteration_time_s") * 1e3
    return "Fig. 28: TopoOpt iteration time (ms) against server degree d, 128 servers x 4 GPUs\n" + \
        table.round(1).to_string()


def fig28_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Quantity, line_chart, panels_by

    frame = _short(frame).assign(bandwidth=lambda t: t["link_gbps"].map(lambda gbps: f"B = {gbps:g} Gb/s"))
    return line_chart(panels_by(frame, "short"), Quantity("degree", "server degree d", "count"),
                      Quantity("iteration_time_s", "iteration time", "time_s"), "bandwidth", directory, "fig28",
                      legend_title="link bandwidth", title="TopoOpt Fig. 28 reproduced (ddlsim): impact of degree d")
